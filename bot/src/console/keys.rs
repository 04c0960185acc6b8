//! The console's keyboard: stdin lines for prompts and questions, and `Esc` during a run.
//!
//! A terminal gives its input a line at a time (canonical mode), so a lone `Esc` would wait in
//! the line for Enter. While a run is in progress ([`Keys::running`]) the terminal is switched to
//! read key by key, without echo (Ctrl-C still raises SIGINT: `ISIG` stays on); a read that is
//! nothing but `Esc` bytes is a stop request, and any other key typed during a run is dropped (an
//! arrow key is `Esc [ A`, one read, so it is no stop). A question asked by the agent during the
//! run gets the line mode back while it waits ([`Keys::asking`]). When stdin is no terminal (a
//! pipe, a file), the mode is never touched and input is read as lines only.
//!
//! Linux's line discipline applies a mode change to a read already waiting, so the input
//! thread's blocked `read` follows the switch.

use anyhow::Context;
use rustix::termios::{LocalModes, OptionalActions, SpecialCodeIndex, Termios, tcgetattr, tcsetattr};
use std::io::Read;
use std::sync::{Arc, Mutex};
use tokio::sync::mpsc;

/// The `Esc` key's byte.
const ESC: u8 = 0x1b;

/// What the keyboard sends to the console loop and its questions.
pub struct KeyChannels {
    /// Complete input lines, without their line end (closed at the end of input).
    pub lines: mpsc::UnboundedReceiver<String>,
    /// One `()` per `Esc` pressed while the terminal read key by key.
    pub stops: mpsc::UnboundedReceiver<()>,
}

/// The terminal's input mode, shared by the console loop and the agent's questions.
pub struct Keys {
    /// The terminal settings at start (line mode); `None` when stdin is no terminal.
    saved: Option<Termios>,
    state: Mutex<Mode>,
}

/// Why the terminal reads key by key: a run is in progress and no question is open.
#[derive(Default, Clone, Copy)]
struct Mode {
    running: bool,
    asking: bool,
}

impl Keys {
    /// Starts the input thread (its own thread, not tokio's blocking pool, which the runtime
    /// would wait for at exit: `/quit` leaves at once, not at the next Enter).
    ///
    /// # Errors
    /// The thread could not be started.
    pub fn start() -> anyhow::Result<(Arc<Keys>, KeyChannels)> {
        let (line_tx, lines) = mpsc::unbounded_channel();
        let (stop_tx, stops) = mpsc::unbounded_channel();
        let keys = Arc::new(Keys {
            saved: tcgetattr(std::io::stdin()).ok(),
            state: Mutex::new(Mode::default()),
        });
        let reading = keys.clone();
        std::thread::Builder::new()
            .name("console-stdin".into())
            .spawn(move || read_input(&reading, &line_tx, &stop_tx))
            .context("cannot start the console's input thread")?;
        Ok((keys, KeyChannels { lines, stops }))
    }

    /// Marks a run as started (`true`) or ended; the terminal reads key by key meanwhile.
    pub fn running(&self, running: bool) {
        self.update(|m| m.running = running);
    }

    /// Marks a question as open (`true`: line mode, echoed) or answered.
    pub fn asking(&self, asking: bool) {
        self.update(|m| m.asking = asking);
    }

    /// The terminal reads key by key now.
    fn by_key(&self) -> bool {
        let mode = *self.state.lock().unwrap_or_else(|e| e.into_inner());
        self.saved.is_some() && mode.running && !mode.asking
    }

    fn update(&self, change: impl FnOnce(&mut Mode)) {
        let mut mode = self.state.lock().unwrap_or_else(|e| e.into_inner());
        change(&mut mode);
        let Some(saved) = &self.saved else { return };
        let mut wanted = saved.clone();
        if mode.running && !mode.asking {
            wanted.local_modes.remove(LocalModes::ICANON | LocalModes::ECHO);
            wanted.special_codes[SpecialCodeIndex::VMIN] = 1;
            wanted.special_codes[SpecialCodeIndex::VTIME] = 0;
        }
        // A terminal that refuses keeps its mode: Esc then waits for Enter, Ctrl-C still stops.
        if let Err(e) = tcsetattr(std::io::stdin(), OptionalActions::Now, &wanted) {
            tracing::debug!(error = %e, "cannot switch the terminal's input mode");
        }
    }
}

impl Drop for Keys {
    /// Leaves the terminal as it was found, whatever happened.
    fn drop(&mut self) {
        if let Some(saved) = &self.saved {
            let _ = tcsetattr(std::io::stdin(), OptionalActions::Now, saved);
        }
    }
}

/// The input thread: reads stdin until its end or until nobody listens.
fn read_input(keys: &Keys, lines: &mpsc::UnboundedSender<String>, stops: &mpsc::UnboundedSender<()>) {
    let mut stdin = std::io::stdin().lock();
    let mut buf = [0u8; 4096];
    let mut split = LineSplitter::default();
    loop {
        let n = match stdin.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(_) => break,
        };
        let Some(chunk) = buf.get(..n) else { break };
        let delivered = match split.feed(chunk, keys.by_key()) {
            Input::Stop => stops.send(()).is_ok(),
            Input::Lines(done) => done.into_iter().all(|l| lines.send(l).is_ok()),
        };
        if !delivered {
            return;
        }
    }
    if let Some(last) = split.finish() {
        let _ = lines.send(last);
    }
}

/// What one read of stdin gave.
#[derive(Debug, PartialEq, Eq)]
enum Input {
    /// The read was only `Esc` (the key pressed while reading key by key).
    Stop,
    /// The lines it completed (possibly none).
    Lines(Vec<String>),
}

/// Cuts stdin's bytes into lines (`\n` or `\r\n`; invalid UTF-8 replaced).
#[derive(Debug, Default)]
struct LineSplitter {
    pending: Vec<u8>,
}

impl LineSplitter {
    /// Takes one read's bytes; `by_key`: the terminal reads key by key (a run is in progress),
    /// when keys other than `Esc` are dropped. In line mode a read holds whole lines, so a read
    /// of `Esc` bytes alone can only be the key (pressed just as the mode changed).
    fn feed(&mut self, chunk: &[u8], by_key: bool) -> Input {
        if !chunk.is_empty() && chunk.iter().all(|b| *b == ESC) {
            return Input::Stop;
        }
        if by_key {
            return Input::Lines(Vec::new());
        }
        self.pending.extend_from_slice(chunk);
        let mut done = Vec::new();
        while let Some(end) = self.pending.iter().position(|b| *b == b'\n') {
            let line: Vec<u8> = self.pending.drain(..=end).collect();
            done.push(line_text(&line));
        }
        Input::Lines(done)
    }

    /// The last line when the input ended without a line end.
    fn finish(&mut self) -> Option<String> {
        let rest = std::mem::take(&mut self.pending);
        (!rest.is_empty()).then(|| line_text(&rest))
    }
}

fn line_text(line: &[u8]) -> String {
    let line = line.strip_suffix(b"\n").unwrap_or(line);
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    String::from_utf8_lossy(line).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_are_cut_and_a_lone_esc_is_a_stop() {
        let mut s = LineSplitter::default();
        assert_eq!(s.feed(b"hel", false), Input::Lines(vec![]));
        assert_eq!(
            s.feed(b"lo\r\nsecond\nthi", false),
            Input::Lines(vec!["hello".into(), "second".into()])
        );
        assert_eq!(s.feed(&[ESC], true), Input::Stop);
        assert_eq!(s.feed(&[ESC, ESC], false), Input::Stop);
        // During a run other keys are dropped, an arrow key (Esc [ A) among them.
        assert_eq!(s.feed(b"\x1b[A", true), Input::Lines(vec![]));
        assert_eq!(s.feed(b"typed ahead\n", true), Input::Lines(vec![]));
        // In line mode an Esc inside a line is text.
        assert_eq!(s.feed(b"\x1b[Ard\n", false), Input::Lines(vec!["thi\x1b[Ard".into()]));
        assert_eq!(s.feed(b"tail", false), Input::Lines(vec![]));
        assert_eq!(s.finish(), Some("tail".into()));
        assert_eq!(s.finish(), None);
    }
}

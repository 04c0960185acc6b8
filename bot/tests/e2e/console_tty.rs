//! The interactive console in a pseudo-terminal, as a person uses it: `/quit` leaves at once,
//! Ctrl-C at the prompt drops the line typed so far (every time, before and after a run) and a
//! second one within a second exits, the answer streams as the model writes it with its
//! Markdown styled for the terminal (raw when stdout is a pipe: `console.rs`), and `Esc` or
//! Ctrl-C during a run stops it as Telegram's Stop does.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support::*;
use portable_pty::{CommandBuilder, PtySize, native_pty_system};
use std::io::{Read, Write};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use volcanic_testkit::model_server::{ModelServer, Turn};

/// The console running in a pseudo-terminal.
struct Tty {
    child: Box<dyn portable_pty::Child + Send + Sync>,
    writer: Box<dyn Write + Send>,
    /// Everything the terminal showed so far.
    screen: Arc<Mutex<String>>,
}

impl Tty {
    fn start(env: &Env) -> Tty {
        let pty = native_pty_system()
            .openpty(PtySize {
                rows: 40,
                cols: 120,
                pixel_width: 0,
                pixel_height: 0,
            })
            .unwrap();
        let mut cmd = CommandBuilder::new(env!("CARGO_BIN_EXE_volcanic-bot"));
        cmd.arg("--config");
        cmd.arg(env.dir.path().join("volcanic.toml"));
        cmd.args(["console", "--workspace"]);
        cmd.arg(env.workspace());
        cmd.env_clear();
        cmd.env("PATH", std::env::var("PATH").unwrap_or_default());
        cmd.env("HOME", env.home());
        cmd.env("TERM", "xterm");
        cmd.env("E2E_ANTHROPIC_KEY", "test-key");
        cmd.cwd(env.dir.path());
        let child = pty.slave.spawn_command(cmd).unwrap();
        drop(pty.slave);
        let mut reader = pty.master.try_clone_reader().unwrap();
        let writer = pty.master.take_writer().unwrap();
        let screen = Arc::new(Mutex::new(String::new()));
        {
            let screen = screen.clone();
            // The master must outlive the reads; it moves into the reading thread.
            let master = pty.master;
            std::thread::spawn(move || {
                let _keep = master;
                let mut buf = [0u8; 4096];
                while let Ok(n) = reader.read(&mut buf) {
                    if n == 0 {
                        break;
                    }
                    screen.lock().unwrap().push_str(&String::from_utf8_lossy(&buf[..n]));
                }
            });
        }
        Tty { child, writer, screen }
    }

    fn screen(&self) -> String {
        self.screen.lock().unwrap().clone()
    }

    fn send(&mut self, bytes: &str) {
        self.writer.write_all(bytes.as_bytes()).unwrap();
        self.writer.flush().unwrap();
    }

    /// Waits (bounded) until the screen shows `needle` `times` times in all.
    async fn wait_for(&self, needle: &str, times: usize) {
        let deadline = Instant::now() + T;
        while self.screen().matches(needle).count() < times {
            assert!(
                Instant::now() < deadline,
                "waited for {needle:?} x{times}; the screen:\n{}",
                self.screen()
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// Waits (bounded by `within`) for the exit; its code, `None` if still running.
    async fn exit_code(&mut self, within: Duration) -> Option<u32> {
        let deadline = Instant::now() + within;
        while Instant::now() < deadline {
            if let Ok(Some(status)) = self.child.try_wait() {
                return Some(status.exit_code());
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        None
    }
}

/// What stays on a screen of `out` when each "back to the line's start and clear" removes the
/// raw line before it (one row: the answers here are shorter than the terminal is wide).
fn visible(out: &str) -> String {
    let mut shown = String::new();
    for (i, piece) in out.split("\r\x1b[J").enumerate() {
        if i > 0 {
            shown.truncate(shown.rfind('\n').map_or(0, |n| n + 1));
        }
        shown.push_str(piece);
    }
    shown
}

impl Drop for Tty {
    fn drop(&mut self) {
        let _ = self.child.kill();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn quit_leaves_at_once() {
    let server = ModelServer::start().await.unwrap();
    let env = Env::new(&server.url(), "");
    let mut tty = Tty::start(&env);
    tty.wait_for("> ", 1).await;
    tty.send("/quit\r");
    // No further line is typed: the input thread must not hold the exit.
    assert_eq!(tty.exit_code(Duration::from_secs(5)).await, Some(0), "{}", tty.screen());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ctrl_c_drops_the_line_every_time_and_twice_quickly_exits() {
    let server = ModelServer::start().await.unwrap();
    server.push(Turn::reply("first answer"));
    let env = Env::new(&server.url(), "");
    let mut tty = Tty::start(&env);
    tty.wait_for("> ", 1).await;
    // Before any run: the half-typed line is dropped, the console stays.
    tty.send("half typed");
    tty.send("\x03");
    tty.wait_for("Ctrl-C again within a second", 1).await;
    tokio::time::sleep(Duration::from_millis(1_200)).await;
    tty.send("hello\r");
    tty.wait_for("first answer", 1).await;
    let asked = serde_json::to_string(server.requests()[0].messages()).unwrap();
    assert!(asked.contains("hello") && !asked.contains("half typed"), "{asked}");
    // After a run: the same (the prompt after the Ctrl-C above was the second).
    tty.wait_for("> ", 3).await;
    tty.send("more text");
    tty.send("\x03");
    tty.wait_for("Ctrl-C again within a second", 2).await;
    assert_eq!(
        tty.exit_code(Duration::from_millis(1_200)).await,
        None,
        "one Ctrl-C only drops the line"
    );
    // Twice within a second: gone.
    tty.send("\x03");
    tty.wait_for("Ctrl-C again within a second", 3).await;
    tty.send("\x03");
    assert_eq!(
        tty.exit_code(Duration::from_secs(5)).await,
        Some(130),
        "{}",
        tty.screen()
    );
    assert_eq!(server.requests().len(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_answers_markdown_is_styled_on_a_terminal_and_raw_in_a_pipe() {
    let server = ModelServer::start().await.unwrap();
    let answer = "Some **bold** and `code`.\n- first item";
    server.push(Turn::reply(answer));
    server.push(Turn::reply(answer));
    let env = Env::new(&server.url(), "");
    let mut tty = Tty::start(&env);
    tty.wait_for("> ", 1).await;
    tty.send("style it\r");
    tty.wait_for("first item", 1).await;
    tty.wait_for("> ", 2).await;
    let screen = visible(&tty.screen());
    assert!(screen.contains("\x1b[1mbold\x1b[0m"), "{screen:?}");
    assert!(screen.contains("\x1b[36mcode\x1b[0m"), "{screen:?}");
    assert!(screen.contains("• first item"), "{screen:?}");
    assert!(!screen.contains("**bold**"), "the raw line is erased: {screen:?}");
    tty.send("/quit\r");
    assert_eq!(tty.exit_code(Duration::from_secs(5)).await, Some(0));

    let out = env.console_stdin(&[], "style it\n/quit\n".to_owned()).await;
    let text = stdout(&out);
    assert!(text.contains(answer), "raw in a pipe: {text:?}");
    assert!(!text.contains('\x1b'), "{text:?}");
}

/// Gap between the paced model's events: long enough that an answer is surely unfinished when
/// its first words show, even on a loaded machine.
const GAP: Duration = Duration::from_millis(700);

/// An answer the model writes slowly: two lines, the second's end far behind its start.
fn paced_answer() -> Turn {
    Turn::new()
        .text("First line of the answer.\nSecond **line**")
        .text(" goes on")
        .text(" and ends here.")
        .pace(GAP)
}

/// A console asked for [`paced_answer`], once its second line shows (raw: being written).
async fn writing() -> (ModelServer, Env, Tty) {
    let server = ModelServer::start().await.unwrap();
    server.push(paced_answer());
    let env = Env::new(&server.url(), "");
    let mut tty = Tty::start(&env);
    tty.wait_for("> ", 1).await;
    tty.send("write slowly\r");
    tty.wait_for("Second **line**", 1).await;
    (server, env, tty)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_answer_streams_as_the_model_writes_it() {
    // The line being written shows raw while the model is still writing.
    let (server, _env, mut tty) = writing().await;
    assert!(tty.screen().contains("First line of the answer."), "{}", tty.screen());
    assert!(!tty.screen().contains("ends here"), "shown before the model finished");
    // Complete, it is drawn again styled; the run ends at the prompt.
    tty.wait_for("and ends here.", 1).await;
    tty.wait_for("> ", 2).await;
    let screen = visible(&tty.screen());
    assert!(
        screen.contains("Second \x1b[1mline\x1b[0m goes on and ends here."),
        "{screen:?}"
    );
    assert!(!screen.contains("**line**"), "{screen:?}");
    assert_eq!(server.streams_left(), 0, "the whole answer was read");
    tty.send("/quit\r");
    assert_eq!(tty.exit_code(Duration::from_secs(5)).await, Some(0));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn esc_stops_the_run_like_telegrams_stop() {
    stop_mid_answer("\x1b").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ctrl_c_stops_the_run_like_telegrams_stop() {
    stop_mid_answer("\x03").await;
}

/// Presses `key` while the paced answer is being written: the model's stream is closed, the
/// text so far stays marked as stopped (on screen and in the session), and the session answers
/// the next prompt. Then the key again before any text: "Stopped." alone.
async fn stop_mid_answer(key: &str) {
    let (server, env, mut tty) = writing().await;
    tty.send(key);
    tty.wait_for("⏹ Stopped.", 1).await;
    let deadline = Instant::now() + T;
    while server.streams_left() == 0 {
        assert!(Instant::now() < deadline, "the model's stream stays open");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // Stopped: the partial line is drawn styled, nothing after it comes.
    tty.wait_for("> ", 2).await;
    let screen = visible(&tty.screen());
    assert!(screen.contains("Second \x1b[1mline\x1b[0m\r\n"), "{screen:?}");
    assert!(!screen.contains("**line**"), "{screen:?}");
    assert!(!screen.contains("goes on"), "{screen:?}");
    let session = std::fs::read_to_string(&env.session_files()[0]).unwrap();
    assert!(
        session.contains("Second **line**") && session.contains("\"aborted\""),
        "the partial answer is kept in the session: {session}"
    );
    // The session goes on.
    server.push(Turn::reply("second answer"));
    tty.send("next one\r");
    tty.wait_for("second answer", 1).await;
    tty.wait_for("> ", 3).await;
    // Stopped before any text: said so, without the mark of a partial answer.
    server.push(Turn::reply("never shown").delay(Duration::from_secs(30)));
    tty.send("third\r");
    server.wait_for_request_count(3, T).await.unwrap();
    tty.send(key);
    tty.wait_for("Stopped.", 2).await;
    tty.wait_for("> ", 4).await;
    assert_eq!(tty.screen().matches("⏹ Stopped.").count(), 1, "{}", tty.screen());
    assert!(!tty.screen().contains("never shown"));
    tty.send("/quit\r");
    assert_eq!(tty.exit_code(Duration::from_secs(5)).await, Some(0), "{}", tty.screen());
}

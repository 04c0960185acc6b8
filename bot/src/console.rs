//! `volcanic-bot console`: one session in the terminal.
//!
//! - interactive: the answer streams as the model writes it (its Markdown styled when stdout is
//!   a terminal, raw otherwise: [`terminal`]), tool calls shown, slash commands (`/new`, `/model`,
//!   `/thinking`, `/compact [instructions]`, `/session`, `/usage [chat id]` ([`usage`]), `/quit`,
//!   which exits at once); `Esc`
//!   ([`keys`]) or Ctrl-C during a run stops it as Telegram's Stop does (the text written so far
//!   stays, marked "⏹ Stopped.", or "Stopped." when there was none; the session goes on); Ctrl-C
//!   at the prompt drops the line typed so far, and a second one within a second exits (130);
//! - `-p PROMPT`: runs one prompt, prints the final answer, exits 0 (1 with the error);
//! - `--mode json`: the session's event stream as JSON lines with pi's event names;
//! - `--session FILE`: continues that session file.
//!
//! Sessions live in `~/.volcanic/agent/sessions/<encoded cwd>/` unless `--session FILE`.
//!
//! The host features ([`crate::features`]) give the session their per-session extensions where
//! they have one without a chat (the example feature does; the scheduler and Google Calendar are
//! the Telegram host's); features are started and stopped around the session, and their HTTP
//! routes and Telegram commands are not served here.

#![allow(clippy::print_stdout, clippy::print_stderr)]

mod keys;
mod terminal;
mod usage;

use crate::agent_setup;
use crate::config::Config;
use crate::features::{Features, Services, SessionPlace};
use anyhow::{Context, bail};
use async_trait::async_trait;
use clap::{Args, ValueEnum};
use std::io::Write;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;
use volcanic_abstractions::messages::{Message, StopReason};
use volcanic_abstractions::model::ThinkingLevel;
use volcanic_abstractions::ui::{NotifyLevel, UserInterface};
use volcanic_core::agent::{AgentSession, AgentSessionOptions, PromptInput, SessionSelect};
use volcanic_core::sessions::FileSessionStore;

/// Output format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, Default)]
pub enum Mode {
    /// Human-readable.
    #[default]
    Text,
    /// JSON lines (pi's event stream).
    Json,
}

/// `console` arguments.
#[derive(Debug, Args)]
pub struct ConsoleArgs {
    /// Run one prompt, print the final answer and exit.
    #[arg(short = 'p', long = "print")]
    pub prompt: Option<String>,
    /// Output format.
    #[arg(long, value_enum, default_value_t = Mode::Text)]
    pub mode: Mode,
    /// Continue this session file.
    #[arg(long)]
    pub session: Option<PathBuf>,
    /// Continue the most recent session of this directory.
    #[arg(short = 'c', long = "continue")]
    pub continue_recent: bool,
    /// Working directory of the agent (default: the current directory).
    #[arg(long)]
    pub workspace: Option<PathBuf>,
    /// Model as provider/id (overrides the config's `model`).
    #[arg(long)]
    pub model: Option<String>,
    /// Thinking level: off, minimal, low, medium, high, xhigh.
    #[arg(long)]
    pub thinking: Option<ThinkingLevel>,
}

/// Human-readable console output: stdout in text mode; stderr in JSON mode, whose stdout
/// carries only event lines (one JSON object per line).
macro_rules! say {
    ($json:expr, $($arg:tt)*) => {
        if $json {
            eprintln!($($arg)*);
        } else {
            println!($($arg)*);
        }
    };
}

mod printer;
use printer::Printer;

fn volcanic_home() -> anyhow::Result<PathBuf> {
    let home = std::env::var_os("HOME").context("HOME is not set: the console keeps sessions in ~/.volcanic/agent")?;
    Ok(PathBuf::from(home).join(".volcanic").join("agent"))
}

/// Runs the console; returns the process exit code.
pub async fn run(config: Config, args: ConsoleArgs) -> anyhow::Result<i32> {
    let cwd = match &args.workspace {
        Some(w) => std::fs::canonicalize(w).with_context(|| format!("--workspace {}", w.display()))?,
        None => std::env::current_dir().context("current directory")?,
    };
    let models = agent_setup::model_registry(&config)?;
    match &args.model {
        Some(m) => agent_setup::check_model(&models, m, "--model")?,
        None => agent_setup::check_model(&models, &config.model, "config key `model`")?,
    };
    let home = volcanic_home()?;
    let store = Arc::new(FileSessionStore::new(home.join("sessions")));
    let processes = agent_setup::process_policy(&config);
    let default_time_zone = config.default_time_zone;
    let workspaces_root =
        std::fs::canonicalize(&config.workspaces_dir).unwrap_or_else(|_| config.workspaces_dir.clone());
    let shutdown = CancellationToken::new();
    let features = Features::build(&Services::new(
        Arc::new(config.clone()),
        processes.clone(),
        home.clone(),
        workspaces_root,
        shutdown.clone(),
    ))?;
    let factory = agent_setup::factory(&config, store, processes, Some(home), None)?;
    let interactive = args.prompt.is_none();
    let keyboard = match interactive {
        true => Some(Keyboard::start()?),
        false => None,
    };
    let ui: Option<Arc<dyn UserInterface>> = keyboard.as_ref().map(|k| {
        Arc::new(TerminalUi {
            lines: k.lines.clone(),
            keys: k.keys.clone(),
            json: args.mode == Mode::Json,
        }) as Arc<dyn UserInterface>
    });
    let mut extra_extensions = agent_setup::workspace_extensions(&cwd);
    extra_extensions.extend(features.session_extensions(&SessionPlace {
        chat: None,
        time_zone: default_time_zone,
        workspace: &cwd,
        caller: None,
    }));
    let session = factory
        .create(AgentSessionOptions {
            extra_extensions,
            cwd: cwd.clone(),
            session: match (&args.session, args.continue_recent) {
                (Some(f), _) => SessionSelect::Open(f.clone()),
                (None, true) => SessionSelect::ContinueRecent,
                (None, false) => SessionSelect::New,
            },
            ui,
            model: args.model.clone(),
            thinking: args.thinking,
            ..Default::default()
        })
        .await?;
    for (ext, err) in session.extension_errors() {
        eprintln!("extension {ext} failed to load: {err}");
    }
    if let Some(m) = &args.model
        && session.model().map(|x| x.key()).as_ref() != Some(m)
    {
        session.set_model(m).await?;
    }
    if let Some(t) = args.thinking
        && session.thinking_level() != t
    {
        session.set_thinking_level(t).await?;
    }
    let printer = Arc::new(Printer::new(args.mode, interactive));
    {
        let p = printer.clone();
        session.subscribe(move |e| p.on_event(e));
    }
    features.start();
    let code = match (args.prompt, keyboard) {
        (Some(prompt), _) => run_once(&session, prompt, args.mode).await,
        (None, Some(keyboard)) => {
            let spend = usage::UsageSource::new(&config);
            interactive_loop(&session, &cwd, &printer, keyboard, &spend).await
        }
        (None, None) => bail!("the interactive console has no keyboard"),
    };
    shutdown.cancel();
    features.stop().await;
    // A session left without a message is not kept (pi writes none until the first one), so
    // `-c` finds the last conversation, not an empty start; a file the user named stays.
    let empty_file = session
        .session_file()
        .filter(|_| args.session.is_none() && session.messages().is_empty());
    session.dispose().await;
    if let Some(f) = empty_file {
        let _ = std::fs::remove_file(f);
    }
    code
}

/// The interactive console's input: stdin lines (shared by the prompt loop and the agent's
/// questions) and `Esc` presses during a run.
struct Keyboard {
    keys: Arc<keys::Keys>,
    lines: Arc<tokio::sync::Mutex<mpsc::UnboundedReceiver<String>>>,
    stops: mpsc::UnboundedReceiver<()>,
}

impl Keyboard {
    fn start() -> anyhow::Result<Keyboard> {
        let (keys, channels) = keys::Keys::start()?;
        Ok(Keyboard {
            keys,
            lines: Arc::new(tokio::sync::Mutex::new(channels.lines)),
            stops: channels.stops,
        })
    }
}

/// Reads lines until `/quit` or the end of stdin; each is a console command or a prompt.
async fn interactive_loop(
    session: &AgentSession,
    cwd: &std::path::Path,
    printer: &Printer,
    mut keyboard: Keyboard,
    spend: &usage::UsageSource,
) -> anyhow::Result<i32> {
    // Ctrl-C is ours from the start, so it acts the same every time (see the module docs).
    let mut interrupts = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::interrupt())
        .context("cannot listen for Ctrl-C")?;
    let mut last_interrupt: Option<std::time::Instant> = None;
    let json = printer.mode == Mode::Json;
    let lines = keyboard.lines.clone();
    say!(
        json,
        "Volcanic console: {} · model {} · /help for commands, /quit to exit",
        cwd.display(),
        session.model().map(|m| m.key()).unwrap_or_else(|| "(none)".into())
    );
    loop {
        if json {
            eprint!("> ");
        } else {
            print!("> ");
            let _ = std::io::stdout().flush();
        }
        let next = {
            let mut rx = lines.lock().await;
            tokio::select! {
                l = rx.recv() => Some(l),
                _ = interrupts.recv() => None,
            }
        };
        let line = match next {
            Some(Some(line)) => line,
            // End of input (Ctrl-D).
            Some(None) => break,
            // Ctrl-C at the prompt: the terminal dropped the line typed so far.
            None => {
                if last_interrupt.is_some_and(|t| t.elapsed() < std::time::Duration::from_secs(1)) {
                    eprintln!();
                    return Ok(130);
                }
                last_interrupt = Some(std::time::Instant::now());
                eprintln!("\n(Ctrl-C again within a second to quit; /quit or Ctrl-D also leave)");
                continue;
            }
        };
        let line = line.trim().to_owned();
        if line.is_empty() {
            continue;
        }
        match handle_builtin(session, &line, json, spend).await? {
            Builtin::Quit => break,
            Builtin::Handled => continue,
            Builtin::Prompt => {}
        }
        run_prompt(session, printer, &mut keyboard, &mut interrupts, line).await;
        if !json {
            println!();
        }
    }
    Ok(0)
}

/// Runs one prompt; `Esc` or Ctrl-C meanwhile stops it (see the module docs).
async fn run_prompt(
    session: &AgentSession,
    printer: &Printer,
    keyboard: &mut Keyboard,
    interrupts: &mut tokio::signal::unix::Signal,
    line: String,
) {
    // An Esc pressed before this run (just as the last one ended) stops nothing.
    while keyboard.stops.try_recv().is_ok() {}
    printer.wrote.store(false, Ordering::Relaxed);
    keyboard.keys.running(true);
    let s = session.clone();
    let mut run = tokio::spawn(async move { s.prompt(PromptInput::text(line)).await });
    let stop = tokio::select! {
        r = &mut run => {
            report_run(r);
            false
        }
        _ = interrupts.recv() => true,
        Some(()) = keyboard.stops.recv() => true,
    };
    if stop {
        session.abort();
        report_run(run.await);
        printer.stopped();
    }
    keyboard.keys.running(false);
}

fn report_run(r: Result<Result<(), impl std::fmt::Display>, tokio::task::JoinError>) {
    match r {
        Ok(Ok(())) => {}
        Ok(Err(e)) => eprintln!("error: {e}"),
        Err(e) => eprintln!("error: {e}"),
    }
}

async fn run_once(session: &AgentSession, prompt: String, mode: Mode) -> anyhow::Result<i32> {
    let result = session.prompt(PromptInput::text(prompt)).await;
    let last = session
        .messages()
        .into_iter()
        .rev()
        .find_map(|m| if let Message::Assistant(a) = m { Some(a) } else { None });
    if let Err(e) = result {
        eprintln!("error: {e}");
        return Ok(1);
    }
    match last {
        Some(a) if matches!(a.stop_reason, StopReason::Error | StopReason::Aborted) => {
            eprintln!(
                "error: {}",
                a.error_message.unwrap_or_else(|| "the model call failed".into())
            );
            Ok(1)
        }
        Some(a) => {
            if mode == Mode::Text {
                println!("{}", a.text());
            }
            Ok(0)
        }
        None => bail!("the model gave no answer"),
    }
}

/// `/help` of the console.
const CONSOLE_HELP: &str = "Commands:
  /new                      start a new session
  /model [provider/id]      list the models, or switch
  /thinking [level]         show or set: off, minimal, low, medium, high, xhigh
  /compact [instructions]   summarise the conversation so far (what to keep, optionally)
  /session                  model, context and total tokens, cost, session file
  /usage [chat id]          what a chat spent today and this month, and the top spenders
  /quit                     leave (Ctrl-D too, or Ctrl-C twice); Esc or Ctrl-C stops a run
Extension commands work too; anything else is a message to the agent.";

/// What a console line turned out to be.
enum Builtin {
    /// `/quit`.
    Quit,
    /// A console command, done.
    Handled,
    /// Not a console command: a prompt (or an extension command).
    Prompt,
}

/// Console commands handled here.
async fn handle_builtin(
    session: &AgentSession,
    line: &str,
    json: bool,
    spend: &usage::UsageSource,
) -> anyhow::Result<Builtin> {
    let (cmd, arg) = match line.strip_prefix('/') {
        Some(rest) => rest.split_once(' ').map_or((rest, ""), |(a, b)| (a, b.trim())),
        None => return Ok(Builtin::Prompt),
    };
    match cmd {
        "quit" | "exit" => return Ok(Builtin::Quit),
        "new" => match session.new_session().await {
            Ok(()) => say!(
                json,
                "new session: {}",
                session
                    .session_file()
                    .map(|p| p.display().to_string())
                    .unwrap_or_default()
            ),
            Err(e) => eprintln!("error: {e}"),
        },
        "model" if arg.is_empty() => {
            let current = session.model().map(|m| m.key());
            for m in session.available_models() {
                let mark = if Some(m.key()) == current { "*" } else { " " };
                say!(json, "{mark} {}", m.key());
            }
        }
        "model" => match session.set_model(arg).await {
            Ok(m) => say!(json, "model: {}", m.key()),
            Err(e) => eprintln!("error: {e}"),
        },
        "thinking" => match arg.parse::<ThinkingLevel>() {
            Ok(l) => {
                session.set_thinking_level(l).await?;
                say!(json, "thinking: {l}{}", agent_setup::no_reasoning_note(session));
            }
            Err(_) if arg.is_empty() => say!(json, "thinking: {}", session.thinking_level()),
            Err(e) => eprintln!("error: {e}"),
        },
        "compact" => {
            let instructions = (!arg.is_empty()).then(|| arg.to_owned());
            let before = session.stats().context_tokens;
            match session.compact(instructions).await {
                Ok(_) => say!(
                    json,
                    "compacted: context {before} → about {} tokens",
                    session.stats().context_tokens
                ),
                Err(e) => eprintln!("error: {e}"),
            }
        }
        "session" => {
            let s = session.stats();
            say!(
                json,
                "model {} · {} messages · context {}{} / {} tokens · total {} tokens · ${:.4}\nfile {}",
                session.model().map(|m| m.key()).unwrap_or_default(),
                s.messages,
                if s.context_estimated { "~" } else { "" },
                s.context_tokens,
                s.context_window,
                s.total_tokens,
                s.cost,
                s.session_file.map(|p| p.display().to_string()).unwrap_or_default()
            );
        }
        "usage" => match spend.report(arg) {
            Ok(text) => say!(json, "{text}"),
            Err(e) => eprintln!("error: {e}"),
        },
        "help" => {
            say!(json, "{CONSOLE_HELP}");
            for c in session.commands() {
                say!(json, "  /{:<24} {}", c.name, c.description);
            }
        }
        // `/tmp/x is odd` is a prompt; `/frobnicate` a mistyped command.
        name if name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_')
            && !session.commands().iter().any(|c| c.name == name) =>
        {
            eprintln!("unknown command /{name}: /help lists the commands");
        }
        _ => return Ok(Builtin::Prompt),
    }
    Ok(Builtin::Handled)
}

/// `select`/`confirm`/`input` read the next stdin line; `notify` and `status` print.
struct TerminalUi {
    lines: Arc<tokio::sync::Mutex<mpsc::UnboundedReceiver<String>>>,
    /// The terminal reads lines, echoed, while a question waits.
    keys: Arc<keys::Keys>,
    /// JSON mode: questions and notices go to stderr.
    json: bool,
}

impl TerminalUi {
    async fn ask(&self, question: &str, cancel: CancellationToken) -> Option<String> {
        say!(self.json, "\n{question}");
        let _ = std::io::stdout().flush();
        self.keys.asking(true);
        let mut rx = self.lines.lock().await;
        let answer = tokio::select! {
            l = rx.recv() => l.map(|l| l.trim().to_owned()),
            () = cancel.cancelled() => None,
        };
        self.keys.asking(false);
        answer
    }
}

#[async_trait]
impl UserInterface for TerminalUi {
    async fn select(&self, title: &str, options: &[String], cancel: CancellationToken) -> Option<String> {
        let list: Vec<String> = options
            .iter()
            .enumerate()
            .map(|(i, o)| format!("  {}) {o}", i + 1))
            .collect();
        let answer = self
            .ask(
                &format!("{title}\n{}\nchoose 1-{}:", list.join("\n"), options.len()),
                cancel,
            )
            .await?;
        let n: usize = answer.parse().ok()?;
        options.get(n.checked_sub(1)?).cloned()
    }

    async fn confirm(&self, title: &str, message: &str, cancel: CancellationToken) -> Option<bool> {
        let a = self.ask(&format!("{title}: {message} [y/n]"), cancel).await?;
        Some(matches!(a.to_ascii_lowercase().as_str(), "y" | "yes"))
    }

    async fn input(&self, title: &str, _placeholder: Option<&str>, cancel: CancellationToken) -> Option<String> {
        self.ask(title, cancel).await
    }

    async fn notify(&self, message: &str, level: NotifyLevel) {
        let tag = match level {
            NotifyLevel::Info => "info",
            NotifyLevel::Warning => "warning",
            NotifyLevel::Error => "error",
        };
        say!(self.json, "\n[{tag}] {message}");
    }

    async fn status(&self, _key: &str, text: Option<&str>) {
        if let Some(t) = text {
            say!(self.json, "\n… {t}");
        }
    }
}

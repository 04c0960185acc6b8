//! `volcanic-bot`: the Volcanic binary. `volcanic-bot [--config PATH]` runs the Telegram host;
//! `volcanic-bot [--config PATH] console …` runs one agent session in the terminal;
//! `volcanic-bot [--config PATH] doctor` checks a setup and prints what to fix.

mod agent_setup;
mod allocator;
mod config;
mod console;
mod doctor;
mod features;
mod http;
mod lock;
mod ops;
mod placement;
mod secrets;
mod store_file;
mod telegram;

use clap::{Parser, Subcommand};
use std::path::PathBuf;
use std::process::ExitCode;

/// Default config path (relative to the directory the bot is started from).
const DEFAULT_CONFIG: &str = "config/volcanic.toml";

/// The environment variables the binary reads, shown by `--help`.
const ENVIRONMENT_HELP: &str = "\
Environment:
  VOLCANIC_CONFIG       the config file, as --config
  VOLCANIC_LOG          log filter, e.g. `debug` or `warn,volcanic_bot=debug` (tracing's
                        EnvFilter syntax); default `info` for the bot and doctor, `warn` for the
                        console. Logs go to stderr (the journal, under systemd)
  TELEGRAM_BOT_TOKEN    the bot token, unless [telegram] token is set
  ANTHROPIC_API_KEY     keys of the built-in providers (or a provider's api_key_env)
  OPENAI_API_KEY
  GOOGLE_CLIENT_ID      the Google OAuth client, unless [google] sets it
  GOOGLE_CLIENT_SECRET

`volcanic-bot doctor` checks the config, the token, the models, Google, the listener and the
folders, and says what to fix.";

#[derive(Debug, Parser)]
#[command(
    name = "volcanic-bot",
    version,
    about = "Self-hosted Telegram agent host",
    after_help = ENVIRONMENT_HELP
)]
struct Cli {
    /// Config file (TOML). Default config/volcanic.toml; env VOLCANIC_CONFIG.
    #[arg(long, global = true, env = "VOLCANIC_CONFIG")]
    config: Option<PathBuf>,
    #[command(subcommand)]
    command: Option<Command>,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Chat with an agent in the terminal.
    Console(console::ConsoleArgs),
    /// Check the setup (config, token, models, Google, listener, folders, lock); prints a
    /// checklist with the fix for each failure; exit status 1 on any failure.
    Doctor,
}

fn main() -> ExitCode {
    match tokio::runtime::Runtime::new() {
        Ok(runtime) => runtime.block_on(start()),
        Err(e) => {
            #[allow(clippy::print_stderr)]
            {
                eprintln!("error: cannot start the async runtime: {e}");
            }
            ExitCode::from(2)
        }
    }
}

/// Everything after the runtime's start, on the runtime.
async fn start() -> ExitCode {
    let cli = Cli::parse();
    // The console is a terminal UI: only warnings interleave with it by default.
    let default_level = match cli.command {
        Some(Command::Console(_)) => "warn",
        Some(Command::Doctor) | None => "info",
    };
    // TLS for every HTTP client in the process: rustls with ring.
    let _ = rustls::crypto::ring::default_provider().install_default();
    match run(cli, default_level).await {
        Ok(code) => ExitCode::from(code as u8),
        Err(e) => {
            #[allow(clippy::print_stderr)]
            {
                eprintln!("error: {e:#}");
            }
            ExitCode::from(2)
        }
    }
}

/// Runs the command; logging starts once the config is read (its `[otel]` adds the trace
/// exporter), and the doctor's at once.
async fn run(cli: Cli, default_level: &str) -> anyhow::Result<i32> {
    let (path, required) = match cli.config {
        Some(p) => (p, true),
        None => (PathBuf::from(DEFAULT_CONFIG), false),
    };
    let console = match cli.command {
        // A config that does not load is the doctor's first finding, not an exit.
        Some(Command::Doctor) => {
            init_tracing(default_level, None)?;
            return Ok(doctor::run(&path, required).await);
        }
        Some(Command::Console(args)) => Some(args),
        None => None,
    };
    let config = config::Config::load(&path, required)?;
    let traces = init_tracing(default_level, config.otel.as_ref())?;
    let code = run_with(config, &path, console).await;
    if let Some(traces) = traces {
        // The last batch goes out (bounded) off the async workers.
        let _ = tokio::task::spawn_blocking(move || traces.shutdown()).await;
    }
    code
}

/// [`run`] once the config is loaded and logging started.
async fn run_with(
    config: config::Config,
    path: &std::path::Path,
    console: Option<console::ConsoleArgs>,
) -> anyhow::Result<i32> {
    agent_setup::check_sandbox(&config)?;
    if path.exists() {
        tracing::info!("config file: {}", path.display());
    } else {
        tracing::info!("no config file at {}: the defaults apply", path.display());
    }
    if let Err(e) = volcanic_core::processes::harden_host_process(config.harden_process) {
        tracing::warn!("process hardening failed: {e}");
    }
    match console {
        Some(args) => console::run(config, args).await,
        None => {
            let file = path.exists().then_some(path);
            for warning in placement::warnings(&config, file) {
                tracing::warn!("{warning}");
            }
            telegram::private_files();
            // Held until the host has shut down: one process per state directory.
            let lock = lock::acquire(&config.state_dir)?;
            tracing::debug!(file = %lock.path().display(), "holding the state directory's lock");
            let code = telegram::run(config).await;
            drop(lock);
            code
        }
    }
}

/// Crates that log secrets at debug level, held at `warn` whatever `VOLCANIC_LOG` says:
/// yup-oauth2 logs token requests and answers (refresh tokens, the client secret, access
/// tokens) through `log`, which the subscriber forwards.
const QUIET: &[&str] = &["yup_oauth2=warn"];

/// The log filter: `VOLCANIC_LOG` (else `default`), with [`QUIET`] added last so it wins.
fn log_filter(env: Option<&str>, default: &str) -> tracing_subscriber::EnvFilter {
    let mut filter = env
        .and_then(|e| tracing_subscriber::EnvFilter::try_new(e).ok())
        .unwrap_or_else(|| tracing_subscriber::EnvFilter::new(default));
    for directive in QUIET {
        if let Ok(d) = directive.parse() {
            filter = filter.add_directive(d);
        }
    }
    filter
}

/// Logs to stderr through [`log_filter`]; with `otel`, the trace exporter too (its spans never
/// reach the log). Errors: the exporter cannot start.
fn init_tracing(default_level: &str, otel: Option<&config::OtelConfig>) -> anyhow::Result<Option<ops::traces::Traces>> {
    use tracing_subscriber::prelude::*;
    let mut filter = log_filter(std::env::var("VOLCANIC_LOG").ok().as_deref(), default_level);
    if let Ok(d) = format!("{}=off", ops::traces::TARGET).parse() {
        filter = filter.add_directive(d);
    }
    let log = tracing_subscriber::fmt::layer()
        .with_writer(std::io::stderr)
        // Colours only for a terminal: logs piped to a file or journald stay plain text.
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .with_filter(filter);
    let (traces, exporter) = match otel {
        Some(c) => {
            let (t, layer) = ops::traces::Traces::start::<tracing_subscriber::Registry>(c)?;
            (Some(t), Some(layer))
        }
        None => (None, None),
    };
    let _ = tracing_subscriber::registry().with(exporter).with(log).try_init();
    if let Some(c) = otel {
        tracing::info!("traces exported to {} ({})", c.traces_url(), c.service_name);
    }
    Ok(traces)
}

#[cfg(test)]
mod tests {
    use std::io::Write;
    use std::sync::{Arc, Mutex};

    #[derive(Clone, Default)]
    struct Sink(Arc<Mutex<Vec<u8>>>);

    impl Write for Sink {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap_or_else(|p| p.into_inner()).extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn yup_oauth2_debug_logs_never_pass_the_filter() {
        for env in ["debug", "trace,yup_oauth2=trace", "yup_oauth2=debug,info"] {
            let sink = Sink::default();
            let writer = sink.clone();
            let subscriber = tracing_subscriber::fmt()
                .with_env_filter(super::log_filter(Some(env), "warn"))
                .with_writer(move || writer.clone())
                .finish();
            tracing::subscriber::with_default(subscriber, || {
                tracing::debug!(target: "yup_oauth2::refresh", "refresh_token=1//secret");
                tracing::info!(target: "volcanic_bot", "kept line");
            });
            let out = String::from_utf8_lossy(&sink.0.lock().unwrap_or_else(|p| p.into_inner())).into_owned();
            assert!(!out.contains("1//secret"), "{env}: {out}");
            assert!(out.contains("kept line"), "{env}: {out}");
        }
    }
}

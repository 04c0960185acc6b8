//! `volcanic-bot`: the Volcanic binary. `volcanic-bot [--config PATH]` runs the Telegram host;
//! `volcanic-bot [--config PATH] console …` runs one agent session in the terminal.

mod config;
mod console;
mod host;
mod telegram;

use clap::{Parser, Subcommand};
use std::path::PathBuf;
use std::process::ExitCode;

/// Default config path (relative to the directory the bot is started from).
const DEFAULT_CONFIG: &str = "config/volcanic.toml";

#[derive(Debug, Parser)]
#[command(name = "volcanic-bot", version, about = "Self-hosted Telegram agent host")]
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
}

#[tokio::main]
async fn main() -> ExitCode {
    let cli = Cli::parse();
    init_tracing();
    // TLS for every HTTP client in the process: rustls with ring.
    let _ = rustls::crypto::ring::default_provider().install_default();
    match run(cli).await {
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

async fn run(cli: Cli) -> anyhow::Result<i32> {
    let (path, required) = match cli.config {
        Some(p) => (p, true),
        None => (PathBuf::from(DEFAULT_CONFIG), false),
    };
    let config = config::Config::load(&path, required)?;
    if let Err(e) = volcanic_core::processes::harden_host_process(config.harden_process) {
        tracing::warn!("process hardening failed: {e}");
    }
    match cli.command {
        Some(Command::Console(args)) => console::run(config, args).await,
        None => telegram::run(config).await,
    }
}

fn init_tracing() {
    let filter = tracing_subscriber::EnvFilter::try_from_env("VOLCANIC_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn"));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        // Colours only for a terminal: logs piped to a file or journald stay plain text.
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .try_init();
}

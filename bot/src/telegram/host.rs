//! The Telegram host as one value ([`TelegramHost`]: what every part of it shares), its start-up
//! and its shutdown ([`run`]).
//!
//! Start-up does the least work before polling starts (start to first `getUpdates` is a
//! benchmark figure): `getMe`, then polling; `setMyCommands`, crash recovery, idle eviction and
//! the host features' start steps run after it in the background. Shutdown goes in five phases:
//! stop taking updates, let runs finish (or abort them), stop the features, close the sessions,
//! deliver what is still queued for Telegram.

use crate::agent_setup;
use crate::config::Config;
use crate::features::{Features, Services};
use crate::telegram::TelegramPort;
use crate::telegram::conversation::access::Access;
use crate::telegram::conversation::conversations::{Chats, ChatsDeps};
use crate::telegram::conversation::settings::SettingsStore;
use crate::telegram::conversation::{commands, recovery};
use crate::telegram::inbound::journal::Journal;
use crate::telegram::inbound::router::Album;
use crate::telegram::inbound::{poller, webhook};
use crate::telegram::outbound::api::Tg;
use crate::telegram::outbound::progress_marks::ProgressMarks;
use crate::telegram::outbound::ui::Pending;
use anyhow::{Context, bail};
use std::sync::Arc;
use std::time::Duration;
use teloxide::prelude::*;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;
use volcanic_core::models::ModelRegistry;
use volcanic_core::sessions::FileSessionStore;

/// How long shutdown lets running runs finish before aborting them.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(10);

/// The Telegram host's shared state.
pub struct TelegramHost {
    /// Resolved configuration.
    pub config: Arc<Config>,
    /// Who may talk to the bot.
    pub access: Access,
    /// Chats and sessions.
    pub chats: Chats,
    /// Outgoing API.
    pub tg: Arc<Tg>,
    /// Inbound journal.
    pub journal: Arc<Journal>,
    /// Questions waiting for a button or the next message.
    pub pending: Arc<Pending>,
    /// Group albums waiting for an addressed part, by `chat:media_group_id`.
    pub albums: std::sync::Mutex<std::collections::HashMap<String, Album>>,
    /// The bot's user id.
    pub bot_id: i64,
    /// The bot's username (without `@`).
    pub bot_username: String,
    /// The host features (their commands, help lines, the messages they take, their files).
    pub features: Arc<Features>,
    /// Cancelled when shutdown begins (e.g. ends waiting out a [shortage](crate::telegram::inbound::shortage)).
    pub shutdown: CancellationToken,
    /// `[voice]`: transcription and speech; `None` without the section.
    pub voice: Option<Arc<crate::telegram::voice::Voice>>,
    /// The "while I was down" report of this start.
    pub down_report: Arc<crate::telegram::conversation::down_report::DownReport>,
}

impl std::fmt::Debug for TelegramHost {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TelegramHost")
            .field("bot_username", &self.bot_username)
            .finish_non_exhaustive()
    }
}

/// Runs the bot until SIGINT/SIGTERM; returns the exit code.
pub async fn run(config: Config) -> anyhow::Result<i32> {
    let signal = shutdown_signal();
    let token = bot_token(&config)?;
    let models = agent_setup::model_registry(&config)?;
    agent_setup::check_model(&models, &config.model, "config key `model`")?;
    if config.telegram.allowed_users.is_empty() {
        tracing::warn!("telegram.allowed_users is empty: the bot answers nobody (deny by default)");
    }
    if let Some(warning) = crate::placement::root_warning() {
        tracing::warn!("{warning}");
    }
    std::fs::create_dir_all(&config.state_dir).with_context(|| format!("state_dir {}", config.state_dir.display()))?;
    std::fs::create_dir_all(&config.workspaces_dir)
        .with_context(|| format!("workspaces_dir {}", config.workspaces_dir.display()))?;
    let running = start(Arc::new(config), &models, token).await?;
    signal.await;
    tracing::info!("shutting down");
    running.shut_down().await;
    Ok(0)
}

/// Makes everything the host creates private to the bot's user, whatever umask it was started
/// with: the unit's `UMask=0077`, applied by the bot itself. State files (the journal, settings,
/// sessions, the features' tokens and stores) are created 0600 (at most), their folders 0700;
/// the agent's processes inherit it, so workspace files are private too, as under the unit.
/// Call it before anything is written to `state_dir` (its lock included).
pub fn private_files() {
    use nix::sys::stat::{Mode, umask};
    let before = umask(Mode::from_bits_truncate(0o077));
    if !before.contains(Mode::S_IRWXG | Mode::S_IRWXO) {
        tracing::debug!("umask {:03o} tightened to 077: state files are private", before.bits());
    }
}

/// The bot token from the config, else `TELEGRAM_BOT_TOKEN`. Errors: neither is set.
fn bot_token(config: &Config) -> anyhow::Result<String> {
    match config
        .telegram
        .token
        .clone()
        .or_else(|| std::env::var("TELEGRAM_BOT_TOKEN").ok())
    {
        Some(t) if !t.trim().is_empty() => Ok(t),
        _ => bail!(
            "no Telegram bot token: set the environment variable TELEGRAM_BOT_TOKEN (or [telegram] token in the config); get one from @BotFather"
        ),
    }
}

/// The host while it runs: what shutdown stops.
struct Running {
    host: Arc<TelegramHost>,
    features: Arc<Features>,
    shutdown: CancellationToken,
    /// Polling and the HTTP listener, awaited when shutdown stops taking updates.
    intake: Vec<JoinHandle<()>>,
}

/// Builds the host and starts taking updates: the journal, `getMe`, the features, crash
/// recovery, then the HTTP listener and polling, then the background work.
async fn start(config: Arc<Config>, models: &ModelRegistry, token: String) -> anyhow::Result<Running> {
    let (settings, aside) = SettingsStore::load(&config.state_dir, models)?;
    if let Some(p) = aside {
        tracing::warn!("chat-settings.json was corrupt and was set aside as {}", p.display());
    }
    let access = Access::load(
        &config.state_dir,
        &config.telegram.allowed_users,
        &config.telegram.allowed_chats,
        &config.telegram.owners,
    )?;
    let (journal, unfinished) = Journal::open(&config.state_dir)?;
    let journal = Arc::new(journal);
    let api_url = config.telegram.api_url.trim_end_matches('/').to_owned();
    let url = url::Url::parse(&api_url).context("config key `telegram.api_url`")?;
    let bot = Bot::new(token.clone()).set_api_url(url);
    let me = crate::doctor::get_me(&bot, &api_url).await?;
    tracing::info!(
        "Telegram bot @{} (id {}), {} mode; {} known chat(s) in {}",
        me.username.as_deref().unwrap_or("?"),
        me.id.0,
        config.telegram.mode,
        known_chats(&config.workspaces_dir),
        config.workspaces_dir.display()
    );
    let tg = Arc::new(Tg::new(bot.clone(), journal.clone()).with_live(config.telegram.live));
    let shutdown = CancellationToken::new();
    // Before the features and sessions are built: they count from their first event.
    let metrics = crate::ops::listener::start_configured(&config, shutdown.clone()).await?;
    let port = Arc::new(TelegramPort::new(tg.clone()));
    let (factory, features) = build_features(&config, port.clone(), shutdown.clone())?;
    let marks = Arc::new(ProgressMarks::new(&config.state_dir));
    let pending = Arc::new(Pending::default());
    let voice = voice(&config)?;
    let chats = Chats::new(ChatsDeps {
        factory,
        config: config.clone(),
        settings: Arc::new(settings),
        tg: tg.clone(),
        journal: journal.clone(),
        pending: pending.clone(),
        marks: marks.clone(),
        features: features.clone(),
        voice: voice.clone(),
    });
    let host = Arc::new(TelegramHost {
        config: config.clone(),
        access,
        chats,
        down_report: Arc::new(crate::telegram::conversation::down_report::DownReport::new(
            &config.state_dir,
            tg.clone(),
        )),
        tg,
        journal,
        pending,
        albums: Default::default(),
        bot_id: i64::try_from(me.id.0).unwrap_or_default(),
        bot_username: me.username.clone().unwrap_or_default(),
        features: features.clone(),
        shutdown: shutdown.clone(),
        voice,
    });
    port.bind(Arc::downgrade(&host));
    // Each recovering chat takes its place in line before any new message can.
    recovery::recover(&host, unfinished);
    let mut intake = take_updates(&host, &api_url, &token, &shutdown).await?;
    intake.extend(metrics);
    after_polling_started(&host, bot, marks, &shutdown);
    Ok(Running {
        host,
        features,
        shutdown,
        intake,
    })
}

/// `[voice]`'s clients, keys from the process environment (`None` without the section).
fn voice(config: &Config) -> anyhow::Result<Option<Arc<crate::telegram::voice::Voice>>> {
    let Some(voice) = &config.voice else { return Ok(None) };
    let http = reqwest::Client::builder().build().context("voice: HTTP client")?;
    let env = |name: &str| std::env::var(name).ok();
    Ok(Some(Arc::new(crate::telegram::voice::Voice::new(
        http,
        voice,
        env,
        &config.state_dir,
    ))))
}

/// The session factory and the host features, built on the host's services (the features get
/// the chat port, `port`, bound to the host once it exists).
fn build_features(
    config: &Arc<Config>,
    port: Arc<TelegramPort>,
    shutdown: CancellationToken,
) -> anyhow::Result<(volcanic_core::agent::AgentSessionFactory, Arc<Features>)> {
    let store = Arc::new(FileSessionStore::new(config.state_dir.join("sessions")));
    let workspaces_root = std::fs::canonicalize(&config.workspaces_dir).ok();
    let processes = agent_setup::process_policy(config);
    let factory = agent_setup::factory(
        config,
        store,
        processes.clone(),
        Some(config.state_dir.clone()),
        workspaces_root.clone(),
    )?;
    let mut services = Services::new(
        config.clone(),
        processes,
        config.state_dir.clone(),
        workspaces_root.unwrap_or_else(|| config.workspaces_dir.clone()),
        shutdown,
    );
    services.chats = Some(port);
    let features = Arc::new(Features::build(&services)?);
    commands::check(&features)?;
    Ok((factory, features))
}

/// Starts the HTTP listener (the features' routes and webhook mode's, with `[http] public_url`
/// set; webhook mode requires it) and, in polling mode, polling.
async fn take_updates(
    host: &Arc<TelegramHost>,
    api_url: &str,
    token: &str,
    shutdown: &CancellationToken,
) -> anyhow::Result<Vec<JoinHandle<()>>> {
    let config = &host.config;
    let client = reqwest::Client::builder().build().context("HTTP client")?;
    let base = format!("{api_url}/bot{token}");
    let webhook_mode = config.telegram.mode == "webhook";
    let routes = host.features.routes();
    let mut intake = Vec::new();
    if webhook_mode || (routes.is_some() && !config.public_url.is_empty()) {
        let listener = crate::http::bind(&config.http_listen).await?;
        let mut app = routes.unwrap_or_default();
        let public = if config.public_url.is_empty() {
            "none"
        } else {
            config.public_url.as_str()
        };
        tracing::info!("HTTP listener on {} (public URL: {public})", config.http_listen);
        if webhook_mode {
            let secret = webhook::new_secret();
            webhook::register(&client, &base, &config.public_url, &secret).await?;
            app = app.merge(webhook::routes(host.clone(), secret));
            tracing::info!(bot = %host.bot_username, listen = %config.http_listen, "webhook receiving");
        }
        intake.push(crate::http::serve(listener, app, config.http_limits, shutdown.clone()));
    } else if routes.is_some() {
        tracing::info!("host features have HTTP routes: set `[http] public_url` to serve them");
    }
    if !webhook_mode {
        tracing::info!(bot = %host.bot_username, "polling started");
        intake.push(tokio::spawn(poller::run(host.clone(), client, base, shutdown.clone())));
    }
    Ok(intake)
}

/// After polling started: progress messages a crash left, the command menu, the features'
/// start steps (e.g. the scheduler's timer and the jobs of every workspace: the scan grows with
/// the chats), idle eviction.
fn after_polling_started(host: &Arc<TelegramHost>, bot: Bot, marks: Arc<ProgressMarks>, shutdown: &CancellationToken) {
    {
        let tg = host.tg.clone();
        tokio::spawn(async move { marks.sweep(&tg).await });
    }
    {
        let host = host.clone();
        tokio::spawn(async move {
            let list = commands::announced(&host).await;
            if let Err(e) = bot.set_my_commands(list).await {
                tracing::warn!("setMyCommands failed: {e}");
            }
        });
    }
    host.features.start();
    tokio::spawn(evict_idle(host.clone(), shutdown.clone()));
}

/// Drops idle sessions from memory every minute, or twice per idle period when that is shorter,
/// until shutdown.
async fn evict_idle(host: Arc<TelegramHost>, shutdown: CancellationToken) {
    let every = (host.config.session_idle / 2).clamp(Duration::from_millis(500), Duration::from_secs(60));
    let mut tick = tokio::time::interval(every);
    loop {
        tokio::select! {
            () = shutdown.cancelled() => break,
            _ = tick.tick() => {
                if host.chats.evict_idle().await > 0 {
                    // The evicted sessions' pages go back to the system (see `allocator`).
                    let _ = tokio::task::spawn_blocking(crate::allocator::release_free).await;
                }
            }
        }
    }
}

impl Running {
    /// Shuts down: stops taking updates, lets runs finish within [`SHUTDOWN_GRACE`] (then aborts
    /// them), stops the features, closes the sessions, delivers what is queued (bounded), and
    /// makes the journal's last progress durable.
    async fn shut_down(self) {
        let host = self.host;
        host.chats.shutting_down();
        self.shutdown.cancel();
        for task in self.intake {
            let _ = task.await;
        }
        let sessions = host.chats.all_loaded().await;
        let all_idle = async {
            for s in &sessions {
                s.wait_for_idle().await;
            }
        };
        if tokio::time::timeout(SHUTDOWN_GRACE, all_idle).await.is_err() {
            for s in &sessions {
                s.abort();
            }
            for s in &sessions {
                let _ = tokio::time::timeout(Duration::from_secs(5), s.wait_for_idle()).await;
            }
        }
        // The features finish (e.g. runs cut short record their outcome) before the sessions go.
        self.features.stop().await;
        for s in &sessions {
            s.dispose().await;
        }
        // From here a prompt still on its way meets its session closed and stays in the journal.
        tracing::info!(sessions = sessions.len(), "the chats' sessions are closed");
        // The answers of runs that finished may still be queued for Telegram: deliver them.
        let outputs = host.chats.outputs();
        let flushed = async {
            for o in &outputs {
                o.flush().await;
            }
        };
        if tokio::time::timeout(Duration::from_secs(5), flushed).await.is_err() {
            tracing::warn!("some output was not delivered before exit");
        }
        // Progress recorded last (a `started` mark rides along with the next sync) is on disk.
        host.journal.barrier().await;
    }
}

/// How many chats have a workspace folder (`<id>` or `g<id>`, see
/// [`chat_key`](crate::features::port::chat_key)) under `root`.
fn known_chats(root: &std::path::Path) -> usize {
    let Ok(dirs) = std::fs::read_dir(root) else { return 0 };
    dirs.flatten()
        .filter(|d| d.path().is_dir())
        .filter(|d| crate::features::port::chat_of_workspace(&d.path()).is_some())
        .count()
}

/// SIGINT or SIGTERM, listened for from this call on: a signal during start-up (crash recovery
/// may already be answering) waits for the start to finish and then shuts down gracefully,
/// instead of ending the process at once.
fn shutdown_signal() -> impl std::future::Future<Output = ()> {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        let streams = (signal(SignalKind::terminate()), signal(SignalKind::interrupt()));
        async move {
            match streams {
                (Ok(mut term), Ok(mut int)) => {
                    tokio::select! {
                        _ = term.recv() => {}
                        _ = int.recv() => {}
                    }
                }
                _ => {
                    let _ = tokio::signal::ctrl_c().await;
                }
            }
        }
    }
    #[cfg(not(unix))]
    {
        async {
            let _ = tokio::signal::ctrl_c().await;
        }
    }
}

//! The Telegram host: one agent session per chat (per forum topic in forums), long polling with
//! persist-before-acknowledge, deny-by-default access, per-chat settings, commands, rendered and
//! chunked output, and graceful shutdown.
//!
//! Start-up does the least work before polling starts (start to first `getUpdates` is a
//! benchmark figure): `getMe`, then polling; `setMyCommands`, crash recovery, idle eviction and
//! the host features' start steps run after it in the background.
//!
//! The host features ([`crate::features`]: the scheduler, Google Calendar, …) are built from
//! one list and reach the host only through the items re-exported here.

mod conversation;
mod inbound;
pub mod outbound;

pub(crate) use conversation::conversations::{Chat, ChatDelivery, OwnSession, chat_key};
pub(crate) use inbound::journal::prompt_digest;
pub(crate) use inbound::update::InMessage;
pub(crate) use outbound::api::{Target, Tg};

use crate::config::Config;
use crate::features::{Features, Services, TelegramServices};
use crate::host;
use anyhow::{Context, bail};
use std::sync::Arc;
use std::time::Duration;
use teloxide::prelude::*;
use tokio_util::sync::CancellationToken;
use volcanic_core::sessions::FileSessionStore;

/// How long shutdown lets running runs finish before aborting them.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(10);

/// The answer to the prompt at `index` of a transcript, by the rule crash recovery uses: the
/// first final assistant message after it, as `(its index, what to show)`; `None` when the run
/// was cut off before one. (For features delivering into a chat, e.g. scheduled runs.)
pub(crate) fn answer_after(
    messages: &[volcanic_abstractions::messages::Message],
    index: usize,
) -> Option<(usize, String)> {
    conversation::recovery::answer_after(messages, index)
}

/// Runs the bot until SIGINT/SIGTERM; returns the exit code.
/// How many chats have a workspace folder (`<id>` or `g<id>`, see [`chat_key`]) under `root`.
fn known_chats(root: &std::path::Path) -> usize {
    let Ok(dirs) = std::fs::read_dir(root) else { return 0 };
    dirs.flatten()
        .filter(|d| d.path().is_dir())
        .filter(|d| {
            let name = d.file_name();
            let name = name.to_string_lossy();
            name.strip_prefix('g').unwrap_or(&name).parse::<u64>().is_ok()
        })
        .count()
}

pub async fn run(config: Config) -> anyhow::Result<i32> {
    let signal = shutdown_signal();
    let token = match config
        .telegram
        .token
        .clone()
        .or_else(|| std::env::var("TELEGRAM_BOT_TOKEN").ok())
    {
        Some(t) if !t.trim().is_empty() => t,
        _ => bail!(
            "no Telegram bot token: set the environment variable TELEGRAM_BOT_TOKEN (or [telegram] token in the config); get one from @BotFather"
        ),
    };
    let models = host::model_registry(&config)?;
    host::check_model(&models, &config.model, "config key `model`")?;
    if config.telegram.allowed_users.is_empty() {
        tracing::warn!("telegram.allowed_users is empty: the bot answers nobody (deny by default)");
    }
    if let Some(warning) = crate::placement::root_warning() {
        tracing::warn!("{warning}");
    }
    std::fs::create_dir_all(&config.state_dir).with_context(|| format!("state_dir {}", config.state_dir.display()))?;
    std::fs::create_dir_all(&config.workspaces_dir)
        .with_context(|| format!("workspaces_dir {}", config.workspaces_dir.display()))?;
    let config = Arc::new(config);
    let (settings, aside) = conversation::settings::SettingsStore::load(&config.state_dir, &models)?;
    if let Some(p) = aside {
        tracing::warn!("chat-settings.json was corrupt and was set aside as {}", p.display());
    }
    let access = conversation::access::Access::load(
        &config.state_dir,
        &config.telegram.allowed_users,
        &config.telegram.allowed_chats,
        &config.telegram.owners,
    )?;
    let (journal, unfinished) = inbound::journal::Journal::open(&config.state_dir)?;
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
    let tg = Arc::new(outbound::api::Tg::new(bot.clone(), journal.clone()));
    let store = Arc::new(FileSessionStore::new(config.state_dir.join("sessions")));
    let workspaces_root = std::fs::canonicalize(&config.workspaces_dir).ok();
    let processes = host::process_policy(&config);
    let factory = host::factory(
        &config,
        store,
        processes.clone(),
        Some(config.state_dir.clone()),
        workspaces_root.clone(),
    )?;
    let shutdown = CancellationToken::new();
    let delivery = Arc::new(ChatDelivery::default());
    let mut services = Services::new(
        config.clone(),
        processes,
        config.state_dir.clone(),
        workspaces_root.unwrap_or_else(|| config.workspaces_dir.clone()),
        shutdown.clone(),
    );
    services.telegram = Some(TelegramServices {
        api: tg.clone(),
        chats: delivery.clone(),
    });
    let features = Arc::new(Features::build(&services)?);
    conversation::commands::check(&features)?;
    let pending = Arc::new(outbound::ui::Pending::default());
    let marks = Arc::new(outbound::progress_marks::ProgressMarks::new(&config.state_dir));
    let chats = conversation::conversations::Chats::new(conversation::conversations::ChatsDeps {
        factory,
        config: config.clone(),
        settings: Arc::new(settings),
        tg: tg.clone(),
        journal: journal.clone(),
        pending: pending.clone(),
        marks: marks.clone(),
        features: features.clone(),
    });
    let host = Arc::new(inbound::router::Host {
        config: config.clone(),
        access,
        chats,
        tg: tg.clone(),
        journal: journal.clone(),
        pending,
        albums: Default::default(),
        bot_id: i64::try_from(me.id.0).unwrap_or_default(),
        bot_username: me.username.clone().unwrap_or_default(),
        features: features.clone(),
    });
    delivery.bind(Arc::downgrade(&host));
    // Each recovering chat takes its place in line before any new message can.
    conversation::recovery::recover(&host, unfinished);

    let client = reqwest::Client::builder().build().context("HTTP client")?;
    let base = format!("{api_url}/bot{token}");
    let webhook_mode = config.telegram.mode == "webhook";
    // The one HTTP listener: the features' routes and webhook mode's, with `[http] public_url`
    // set (webhook mode requires it).
    let routes = features.routes();
    let listening = if webhook_mode || (routes.is_some() && !config.public_url.is_empty()) {
        let listener = tokio::net::TcpListener::bind(&config.http_listen)
            .await
            .with_context(|| format!("config key `http.listen`: cannot listen on {}", config.http_listen))?;
        let mut app = routes.unwrap_or_default();
        tracing::info!(
            "HTTP listener on {} (public URL: {})",
            config.http_listen,
            if config.public_url.is_empty() {
                "none"
            } else {
                config.public_url.as_str()
            }
        );
        if webhook_mode {
            let secret = inbound::webhook::new_secret();
            inbound::webhook::register(&client, &base, &config.public_url, &secret).await?;
            app = app.merge(inbound::webhook::routes(host.clone(), secret));
            tracing::info!(bot = %host.bot_username, listen = %config.http_listen, "webhook receiving");
        }
        let stop = shutdown.clone();
        // Without TCP_NODELAY the end of a short SSE stream waits ~40 ms on a delayed ACK.
        let listener = axum::serve::ListenerExt::tap_io(listener, |tcp| {
            let _ = tcp.set_nodelay(true);
        });
        Some(tokio::spawn(async move {
            let served = axum::serve(listener, app)
                .with_graceful_shutdown(stop.cancelled_owned())
                .await;
            if let Err(e) = served {
                tracing::error!("the HTTP listener failed: {e}");
            }
        }))
    } else {
        if routes.is_some() {
            tracing::info!("host features have HTTP routes: set `[http] public_url` to serve them");
        }
        None
    };
    let polling = (!webhook_mode).then(|| {
        tracing::info!(bot = %host.bot_username, "polling started");
        tokio::spawn(inbound::poller::run(host.clone(), client, base, shutdown.clone()))
    });

    // After polling started: commands, progress messages a crash left, the features, idle
    // eviction.
    {
        let tg = tg.clone();
        tokio::spawn(async move { marks.sweep(&tg).await });
    }
    {
        let bot = bot.clone();
        let host = host.clone();
        tokio::spawn(async move {
            let list = conversation::commands::announced(&host).await;
            if let Err(e) = bot.set_my_commands(list).await {
                tracing::warn!("setMyCommands failed: {e}");
            }
        });
    }
    // E.g. the scheduler's timer and the jobs of every workspace (the scan grows with the chats).
    features.start();
    {
        let host = host.clone();
        let shutdown = shutdown.clone();
        tokio::spawn(async move {
            // Sweep every minute, or twice per idle period when that is shorter.
            let every = (host.config.session_idle / 2).clamp(Duration::from_millis(500), Duration::from_secs(60));
            let mut tick = tokio::time::interval(every);
            loop {
                tokio::select! {
                    () = shutdown.cancelled() => break,
                    _ = tick.tick() => {
                        if host.chats.evict_idle().await > 0 {
                            // The evicted sessions' pages go back to the system (see `memory`).
                            let _ = tokio::task::spawn_blocking(crate::memory::release_free).await;
                        }
                    }
                }
            }
        });
    }

    signal.await;
    tracing::info!("shutting down");
    host.chats.shutting_down();
    shutdown.cancel();
    for task in [polling, listening].into_iter().flatten() {
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
    features.stop().await;
    for s in &sessions {
        s.dispose().await;
    }
    // The answers of runs that finished may still be queued for Telegram: deliver them (bounded).
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
    Ok(0)
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

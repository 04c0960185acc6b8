//! The bot's commands, from one table ([`BUILTINS`]): each built-in is declared once with its
//! name, menu description, `/help` line, place in the chat's line ([`Turn`]) and handler; the
//! host features' commands ([`Features`](crate::features::Features)) and every command the chat's
//! extensions register (the sessions' `CommandRegistry`) come after. `setMyCommands`
//! ([`announced`]), `/help` ([`help`]), the ordering rule ([`takes_turn`]) and dispatch
//! ([`handle`]) all read from there.

use crate::features::port::Target;
use crate::features::port::chat_key;
use crate::features::{CommandCall, Turn};
use crate::telegram::TelegramHost;
use crate::telegram::conversation::conversations::SessionUse;
use crate::telegram::conversation::menus;
use crate::telegram::inbound::update::InMessage;
use crate::telegram::outbound::ui::Asker;
use crate::telegram::outbound::{failures, texts};
use futures::future::BoxFuture;
use std::sync::Arc;
use teloxide::types::BotCommand;
use volcanic_abstractions::model::ThinkingLevel;
use volcanic_core::agent::PromptInput;

/// One run of a built-in command.
struct Call<'a> {
    target: Target,
    /// The chat's key (its folder name).
    key: String,
    args: &'a str,
    /// Whether the sender is an owner.
    owner: bool,
}

/// A built-in's handler: the answer, or `None` when there is none to send.
type Handler = for<'a> fn(&'a Arc<TelegramHost>, Call<'a>) -> BoxFuture<'a, Option<String>>;

/// A built-in command.
struct Builtin {
    /// Name (Telegram's `[a-z0-9_]{1,32}`).
    name: &'static str,
    /// Menu description (`setMyCommands`).
    description: &'static str,
    /// Its `/help` line; `None`: not listed there.
    help: Option<&'static str>,
    /// Its place in the chat's line.
    turn: Turn,
    /// Only owners may run it (the others are told so).
    owners: bool,
    /// What it does.
    run: Handler,
}

/// The built-in commands, in menu order: everyone's first, then (after the features' commands)
/// the owners'.
const BUILTINS: &[Builtin] = &[
    Builtin {
        name: "start",
        description: "What this bot does",
        help: None,
        turn: Turn::AtOnce,
        owners: false,
        run: help_command,
    },
    Builtin {
        name: "help",
        description: "Commands",
        help: None,
        turn: Turn::AtOnce,
        owners: false,
        run: help_command,
    },
    Builtin {
        name: "new",
        description: "Start a new session",
        help: Some("/new - start a new session"),
        turn: Turn::Holds,
        owners: false,
        run: new_session,
    },
    Builtin {
        name: "stop",
        description: "Stop the current run",
        help: Some("/stop - stop the current run"),
        turn: Turn::AtOnce,
        owners: false,
        run: stop,
    },
    Builtin {
        name: "compact",
        description: "Summarise the conversation so far",
        help: Some("/compact - summarise the conversation so far"),
        turn: Turn::Holds,
        owners: false,
        run: compact,
    },
    Builtin {
        name: "model",
        description: "Show or change the model",
        help: Some(
            "/model [provider/id] - show or change the model; /model fallback [provider/id ...] - fallback models",
        ),
        turn: Turn::Holds,
        owners: false,
        run: model,
    },
    Builtin {
        name: "thinking",
        description: "Show or change the thinking level",
        help: Some("/thinking [level] - off, minimal, low, medium, high, xhigh"),
        turn: Turn::Holds,
        owners: false,
        run: thinking,
    },
    Builtin {
        name: "tz",
        description: "Show or set the time zone",
        help: Some("/tz [zone] - show or set the time zone (IANA, e.g. Europe/Berlin)"),
        turn: Turn::Holds,
        owners: false,
        run: time_zone,
    },
    Builtin {
        name: "voice",
        description: "Voice: spoken answers, the language notes are heard in",
        help: Some("/voice [on|off|auto|lang CODE] - voice settings: spoken answers, the language of voice notes"),
        turn: Turn::Holds,
        owners: false,
        run: voice,
    },
    Builtin {
        name: "session",
        description: "Model, tokens, cost, session file",
        help: Some("/session - model, tokens, cost, session file"),
        turn: Turn::Holds,
        owners: false,
        run: session_stats,
    },
    Builtin {
        name: "allow",
        description: "Owners: allow a user id",
        help: Some("/allow ID, /deny ID - owners: let a user in or out"),
        turn: Turn::Holds,
        owners: true,
        run: allow,
    },
    Builtin {
        name: "deny",
        description: "Owners: deny a user id",
        help: None,
        turn: Turn::Holds,
        owners: true,
        run: deny,
    },
];

fn builtin(name: &str) -> Option<&'static Builtin> {
    BUILTINS.iter().find(|b| b.name == name)
}

/// Checks the features' commands against the table and Telegram's name rule (a clash is a
/// programming error: the host refuses to start, naming it).
pub fn check(host_features: &crate::features::Features) -> anyhow::Result<()> {
    let mut seen: Vec<&str> = BUILTINS.iter().map(|b| b.name).collect();
    for c in host_features.commands() {
        if !volcanic_core::commands::is_valid_command_name(c.name) {
            anyhow::bail!("feature command `/{}`: Telegram accepts only [a-z0-9_]{{1,32}}", c.name);
        }
        if seen.contains(&c.name) {
            anyhow::bail!("feature command `/{}` is declared twice", c.name);
        }
        if c.description.trim().is_empty() || c.description.chars().count() > 256 {
            anyhow::bail!(
                "feature command `/{}`: its description must have 1 to 256 characters (Bot API BotCommand)",
                c.name
            );
        }
        seen.push(c.name);
    }
    Ok(())
}

/// The menu (`setMyCommands`): everyone's built-ins, the features' commands, the owners'
/// built-ins, then every command the chat sessions' extensions register (read from a session's
/// `CommandRegistry`, which refuses names outside Telegram's `[a-z0-9_]{1,32}` with a log line);
/// an extension command named like one before it is left out (the earlier one answers).
pub async fn announced(host: &TelegramHost) -> Vec<BotCommand> {
    let mut list: Vec<BotCommand> = Vec::new();
    let builtins = |owners: bool| {
        BUILTINS
            .iter()
            .filter(move |b| b.owners == owners)
            .map(|b| BotCommand::new(b.name, b.description))
    };
    list.extend(builtins(false));
    list.extend(
        host.features
            .commands()
            .into_iter()
            .map(|c| BotCommand::new(c.name, c.description)),
    );
    list.extend(builtins(true));
    match host.chats.extension_commands().await {
        Ok(extra) => {
            for c in extra {
                if list.iter().any(|b| b.command == c.name) {
                    continue;
                }
                let mut description: String = c.description.chars().take(256).collect();
                if description.trim().is_empty() {
                    description = format!("/{}", c.name);
                }
                list.push(BotCommand::new(c.name, description));
            }
        }
        Err(e) => tracing::warn!("cannot list extension commands: {e:#}"),
    }
    list
}

/// `/start` and `/help`: what the bot is, then the table's lines with the features' after
/// everyone's built-ins.
pub fn help(host: &TelegramHost) -> String {
    let line = |owners: bool| {
        BUILTINS
            .iter()
            .filter(move |b| b.owners == owners)
            .filter_map(|b| b.help)
    };
    let lines: Vec<&str> = line(false).chain(host.features.help()).chain(line(true)).collect();
    format!("{}\n\n{}", texts::HELP_INTRO, lines.join("\n"))
}

/// The command's name (lowercase, without `/` and `@bot`) and its arguments.
fn split(line: &str) -> (String, &str) {
    let (head, args) = line
        .split_once(char::is_whitespace)
        .map_or((line, ""), |(h, a)| (h, a.trim()));
    let name = head
        .trim_start_matches('/')
        .split('@')
        .next()
        .unwrap_or_default()
        .to_lowercase();
    (name, args)
}

/// A command's place in the line: the table's, a feature's, else (an extension's command, or
/// an unknown one) [`Turn::Waits`].
fn turn_of(host: &TelegramHost, name: &str) -> Turn {
    builtin(name)
        .map(|b| b.turn)
        .or_else(|| host.features.command(name).map(|(_, c)| c.turn))
        .unwrap_or(Turn::Waits)
}

/// Whether `line` takes a place in its chat's line ([`Turnstile`](crate::telegram::inbound::merge::Turnstile),
/// with the prompts): every command but those that act at once ([`Turn::AtOnce`]). Take the
/// ticket where the arrival order is known, and give it to [`handle`].
pub fn takes_turn(host: &TelegramHost, line: &str) -> bool {
    turn_of(host, &split(line).0) != Turn::AtOnce
}

/// Runs a command line (`/name args`, mention already stripped). `turn`: its place in the chat's
/// line ([`takes_turn`]): it waits for the commands and prompts before it; a [`Turn::Holds`]
/// command lets the next one go once applied and answered, the others when their turn comes,
/// before they run.
pub async fn handle(
    host: &Arc<TelegramHost>,
    m: &InMessage,
    line: &str,
    mut turn: Option<crate::telegram::inbound::merge::Ticket>,
) {
    let target = Target {
        chat_id: m.chat_id,
        thread: m.thread,
    };
    let (name, args) = split(line);
    if let Some(t) = turn.as_mut() {
        t.wait().await;
    }
    if turn_of(host, &name) != Turn::Holds {
        drop(turn.take());
    }
    let reply = run(host, m, target, &name, args).await;
    if let Some(text) = reply {
        let conversation = host.chats.conversation(target);
        conversation.output.notice(text);
    }
    drop(turn);
}

async fn run(host: &Arc<TelegramHost>, m: &InMessage, target: Target, name: &str, args: &str) -> Option<String> {
    let key = chat_key(m.chat_id);
    if let Some(b) = builtin(name) {
        let owner = host.access.is_owner(m.from_id);
        if b.owners && !owner {
            return Some(format!("Only an owner may /{name}."));
        }
        return (b.run)(
            host,
            Call {
                target,
                key,
                args,
                owner,
            },
        )
        .await;
    }
    if let Some((feature, _)) = host.features.command(name) {
        let zone = zone_name(host, &key);
        let call = CommandCall {
            message: &m.incoming(),
            target,
            args,
            time_zone: &zone,
            bot_username: &host.bot_username,
        };
        return feature.command(name, call).await;
    }
    // An extension's command (from the session's registry) runs in the session.
    let session = match session_of(host, target).await {
        Ok(s) => s,
        Err(e) => return Some(e),
    };
    if !session.commands().iter().any(|c| c.name == name) {
        return Some(texts::unknown_command(name));
    }
    // The questions it asks are for its sender (or an owner), as a prompt's are.
    let sender = Asker {
        id: m.from_id,
        name: m.from_name.clone(),
    };
    let _running = host.chats.conversation(target).ledger.command_of(sender);
    let line = if args.is_empty() {
        format!("/{name}")
    } else {
        format!("/{name} {args}")
    };
    match session.prompt(PromptInput::text(line)).await {
        Ok(()) => None,
        Err(e) => Some(failures::session(&e)),
    }
}

/// The chat's session, loaded if needed and taken for the command; the error as the chat is
/// told it.
async fn session_of(host: &TelegramHost, target: Target) -> Result<SessionUse, String> {
    let conversation = host.chats.conversation(target);
    host.chats.session(&conversation).await.map_err(|e| failures::open(&e))
}

/// The chat's IANA time zone: its own, else the default.
fn zone_name(host: &TelegramHost, key: &str) -> String {
    host.chats
        .settings()
        .get(key)
        .time_zone
        .unwrap_or_else(|| host.config.default_time_zone.name().to_owned())
}

fn help_command<'a>(host: &'a Arc<TelegramHost>, _c: Call<'a>) -> BoxFuture<'a, Option<String>> {
    Box::pin(async move { Some(help(host)) })
}

fn stop<'a>(host: &'a Arc<TelegramHost>, c: Call<'a>) -> BoxFuture<'a, Option<String>> {
    // A stopped run tells the chat itself, once (outbound/live/stop.rs).
    Box::pin(async move { (!host.stop_run(c.target).await).then(|| "Nothing is running.".into()) })
}

fn new_session<'a>(host: &'a Arc<TelegramHost>, c: Call<'a>) -> BoxFuture<'a, Option<String>> {
    Box::pin(async move {
        let session = match session_of(host, c.target).await {
            Ok(s) => s,
            Err(e) => return Some(e),
        };
        Some(match session.new_session().await {
            Ok(()) => "New session started.".into(),
            Err(e) => failures::session(&e),
        })
    })
}

fn compact<'a>(host: &'a Arc<TelegramHost>, c: Call<'a>) -> BoxFuture<'a, Option<String>> {
    Box::pin(async move {
        let session = match session_of(host, c.target).await {
            Ok(s) => s,
            Err(e) => return Some(e),
        };
        let before = session.stats();
        let instructions = (!c.args.is_empty()).then(|| c.args.to_owned());
        Some(match session.compact(instructions).await {
            Ok(_) => {
                let after = session.stats();
                format!(
                    "Compacted: context {} → about {} tokens (of {}).",
                    before.context_tokens, after.context_tokens, after.context_window
                )
            }
            Err(e) => failures::session(&e),
        })
    })
}

fn model<'a>(host: &'a Arc<TelegramHost>, c: Call<'a>) -> BoxFuture<'a, Option<String>> {
    Box::pin(async move {
        let session = match session_of(host, c.target).await {
            Ok(s) => s,
            Err(e) => return Some(e),
        };
        let (head, rest) = c.args.split_once(char::is_whitespace).unwrap_or((c.args, ""));
        if head == "fallback" {
            let answer = super::fallback::command(host, &session, &c.key, c.target, c.owner, rest).await;
            return Some(answer);
        }
        let models = session.available_models();
        if c.args.is_empty() {
            let current = session.model().map(|m| m.key());
            let (text, buttons) = menus::model_menu(&models, current.as_deref());
            return show_menu(host, c.target, &text, buttons).await;
        }
        let Some(wanted) = menus::resolve_model(c.args, &models) else {
            return Some("⚠️ That model is no longer configured; send /model to see the current ones.".into());
        };
        Some(match session.set_model(&wanted).await {
            Ok(model) => {
                let _ = host.chats.settings().update(&c.key, |s| s.model = Some(model.key()));
                format!("Model: `{}`", model.key())
            }
            Err(e) => failures::session(&e),
        })
    })
}

/// Sends a menu (text and buttons) after everything already queued for the chat; a refusal
/// becomes the answer instead.
async fn show_menu(
    host: &TelegramHost,
    target: Target,
    text: &str,
    buttons: teloxide::types::InlineKeyboardMarkup,
) -> Option<String> {
    host.chats.conversation(target).output.flush().await;
    match host.tg.send_plain(target, text, Some(buttons)).await {
        Ok(_) => None,
        Err(e) => Some(format!(
            "⚠️ Could not show the menu: {}",
            crate::telegram::outbound::api::refusal(&e)
        )),
    }
}

fn thinking<'a>(host: &'a Arc<TelegramHost>, c: Call<'a>) -> BoxFuture<'a, Option<String>> {
    Box::pin(async move {
        let session = match session_of(host, c.target).await {
            Ok(s) => s,
            Err(e) => return Some(e),
        };
        if c.args.is_empty() {
            let model = session.model();
            let (text, buttons) = menus::thinking_menu(session.thinking_level(), model.as_ref());
            return show_menu(host, c.target, &text, buttons).await;
        }
        Some(match c.args.parse::<ThinkingLevel>() {
            Ok(level) => match session.set_thinking_level(level).await {
                Ok(()) => {
                    let _ = host.chats.settings().update(&c.key, |s| s.thinking = Some(level));
                    format!(
                        "Thinking level: {level}{}",
                        crate::agent_setup::no_reasoning_note(&session)
                    )
                }
                Err(e) => failures::session(&e),
            },
            Err(e) => format!("⚠️ {e}"),
        })
    })
}

fn session_stats<'a>(host: &'a Arc<TelegramHost>, c: Call<'a>) -> BoxFuture<'a, Option<String>> {
    Box::pin(async move {
        let session = match session_of(host, c.target).await {
            Ok(s) => s,
            Err(e) => return Some(e),
        };
        let s = session.stats();
        Some(format!(
            "Model: `{}`\nThinking: {}\nContext: {}{} / {} tokens{}\nTotal: {} tokens, ${:.4}\nMessages: {}\nSession file: `{}`",
            session.model().map(|m| m.key()).unwrap_or_default(),
            session.thinking_level(),
            if s.context_estimated { "~" } else { "" },
            s.context_tokens,
            s.context_window,
            if s.compacted { " (compacted)" } else { "" },
            s.total_tokens,
            s.cost,
            s.messages,
            s.session_file.map(|p| p.display().to_string()).unwrap_or_default()
        ))
    })
}

/// The user id `/allow` and `/deny` take.
fn user_id(name: &str, args: &str) -> Result<i64, String> {
    args.trim()
        .parse::<i64>()
        .map_err(|_| format!("Usage: /{name} USER_ID (a number)"))
}

fn allow<'a>(host: &'a Arc<TelegramHost>, c: Call<'a>) -> BoxFuture<'a, Option<String>> {
    Box::pin(async move {
        let id = match user_id("allow", c.args) {
            Ok(id) => id,
            Err(usage) => return Some(usage),
        };
        Some(
            host.access
                .allow(id)
                .map(|()| format!("User {id} may now talk to me."))
                .unwrap_or_else(|e| failures::not_saved("access.json", &e)),
        )
    })
}

fn deny<'a>(host: &'a Arc<TelegramHost>, c: Call<'a>) -> BoxFuture<'a, Option<String>> {
    Box::pin(async move {
        let id = match user_id("deny", c.args) {
            Ok(id) => id,
            Err(usage) => return Some(usage),
        };
        Some(
            host.access
                .deny(id)
                .map(|ok| {
                    if ok {
                        format!("User {id} is denied.")
                    } else {
                        format!("User {id} is an owner and cannot be denied.")
                    }
                })
                .unwrap_or_else(|e| failures::not_saved("access.json", &e)),
        )
    })
}

fn time_zone<'a>(host: &'a Arc<TelegramHost>, c: Call<'a>) -> BoxFuture<'a, Option<String>> {
    Box::pin(async move {
        let args = c.args;
        if args.is_empty() {
            return Some(format!(
                "Time zone: {} (change with /tz Area/City, e.g. /tz Europe/Berlin)",
                zone_name(host, &c.key)
            ));
        }
        let Ok(tz) = args.parse::<chrono_tz::Tz>() else {
            return Some(format!(
                "`{args}` is not an IANA time zone. Try e.g. Europe/Berlin, America/New_York, Asia/Tokyo, UTC."
            ));
        };
        if let Err(e) = host
            .chats
            .settings()
            .update(&c.key, |s| s.time_zone = Some(tz.name().to_owned()))
        {
            return Some(failures::not_saved("chat-settings.json", &e));
        }
        // Every loaded topic of the chat takes the zone now; the others when they load.
        for s in host.chats.loaded_in_chat(c.target.chat_id).await {
            s.set_time_zone(Some(tz));
        }
        Some(format!("Time zone: {}", tz.name()))
    })
}

fn voice<'a>(host: &'a Arc<TelegramHost>, c: Call<'a>) -> BoxFuture<'a, Option<String>> {
    Box::pin(async move { Some(crate::telegram::voice::command::run(host, &c.key, c.args)) })
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn the_table_names_each_command_once_in_telegrams_alphabet() {
        for (i, b) in BUILTINS.iter().enumerate() {
            assert!(volcanic_core::commands::is_valid_command_name(b.name), "{}", b.name);
            assert!(
                !BUILTINS[..i].iter().any(|o| o.name == b.name),
                "{} is declared twice",
                b.name
            );
            assert!(!b.description.is_empty() && b.description.chars().count() <= 256);
        }
    }

    #[test]
    fn stop_start_and_help_act_at_once_and_settings_hold_their_place() {
        let turn = |n: &str| builtin(n).map(|b| b.turn);
        for n in ["stop", "start", "help"] {
            assert_eq!(turn(n), Some(Turn::AtOnce), "{n}");
        }
        for n in ["tz", "model", "thinking", "new", "session", "allow", "deny", "compact"] {
            assert_eq!(turn(n), Some(Turn::Holds), "{n}");
        }
    }

    /// A feature with the commands `names`.
    struct Commands(Vec<crate::features::FeatureCommand>);

    #[async_trait::async_trait]
    impl crate::features::HostFeature for Commands {
        fn name(&self) -> &'static str {
            "commands"
        }
        fn commands(&self) -> &[crate::features::FeatureCommand] {
            &self.0
        }
    }

    fn with(name: &'static str, description: &'static str) -> anyhow::Result<()> {
        let command = crate::features::FeatureCommand {
            name,
            description,
            turn: Turn::Waits,
        };
        let features = crate::features::Features::of(vec![Arc::new(Commands(vec![command]))]);
        check(&features)
    }

    #[test]
    fn a_feature_command_that_clashes_or_breaks_telegrams_rules_stops_the_start() {
        assert!(with("remind", "Reminders").is_ok());
        let err = |n, d| with(n, d).unwrap_err().to_string();
        assert_eq!(err("tz", "Zone"), "feature command `/tz` is declared twice");
        assert!(err("Remind", "Reminders").contains("[a-z0-9_]{1,32}"));
        assert!(err("remind", " ").contains("1 to 256 characters"));
    }

    #[test]
    fn names_are_split_from_mentions_and_arguments() {
        assert_eq!(split("/TZ@Bot Europe/Berlin"), ("tz".to_owned(), "Europe/Berlin"));
        assert_eq!(split("/new"), ("new".to_owned(), ""));
    }
}

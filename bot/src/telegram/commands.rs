//! The bot's commands: `/start`, `/help`, `/new`, `/stop`, `/compact`, `/model`, `/thinking`,
//! `/tz`, `/session`, `/allow`, `/deny`, and every command the chat's extensions register.

use super::api::Target;
use super::chats::chat_key;
use super::inbound::InMessage;
use super::router::Host;
use super::texts;
use std::sync::Arc;
use teloxide::types::BotCommand;
use volcanic_abstractions::model::ThinkingLevel;
use volcanic_core::agent::PromptInput;

/// The built-in commands as announced with `setMyCommands`.
pub fn builtin() -> Vec<BotCommand> {
    [
        ("start", "What this bot does"),
        ("help", "Commands"),
        ("new", "Start a new session"),
        ("stop", "Stop the current run"),
        ("compact", "Summarise the conversation so far"),
        ("model", "Show or change the model"),
        ("thinking", "Show or change the thinking level"),
        ("tz", "Show or set the time zone"),
        ("session", "Model, tokens, cost, session file"),
        ("calendar", "Google Calendar: connect, status, disconnect"),
        ("allow", "Owners: allow a user id"),
        ("deny", "Owners: deny a user id"),
    ]
    .into_iter()
    .map(|(c, d)| BotCommand::new(c, d))
    .collect()
}

/// The built-in commands plus every command the host's extensions register (learned from a
/// throw-away in-memory session); names outside Telegram's `[a-z0-9_]{1,32}` never get here
/// (the command registry refuses them with a log line).
pub async fn announced(host: &Host) -> Vec<BotCommand> {
    let mut list = builtin();
    match host.chats.probe_commands().await {
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

/// Commands that act at once, out of turn: `/stop` must not wait behind what it stops.
const OUT_OF_TURN: [&str; 3] = ["stop", "start", "help"];

/// Commands that keep their place in the chat's line until they are applied, so that a message
/// sent after them is handled with what they set (`/tz Asia/Tokyo`, then a question; `/compact`,
/// then a message that runs on the compacted context).
const APPLIED_IN_TURN: [&str; 8] = ["tz", "model", "thinking", "new", "session", "allow", "deny", "compact"];

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

/// Whether `line` takes a place in its chat's line ([`Turnstile`](super::merge::Turnstile), with
/// the prompts): every command but [`OUT_OF_TURN`]. Take the ticket where the arrival order is
/// known, and give it to [`handle`].
pub fn takes_turn(line: &str) -> bool {
    !OUT_OF_TURN.contains(&split(line).0.as_str())
}

/// Runs a command line (`/name args`, mention already stripped). `turn`: its place in the chat's
/// line ([`takes_turn`]): it waits for the commands and prompts before it; the commands of
/// [`APPLIED_IN_TURN`] let the next one go once applied and answered, the others (`/calendar`,
/// an extension's command, which may wait for a button) when their turn comes, before they run.
pub async fn handle(host: &Arc<Host>, m: &InMessage, line: &str, mut turn: Option<super::merge::Ticket>) {
    let target = Target {
        chat_id: m.chat_id,
        thread: m.thread,
    };
    let (name, args) = split(line);
    if let Some(t) = turn.as_mut() {
        t.wait().await;
    }
    if !APPLIED_IN_TURN.contains(&name.as_str()) {
        drop(turn.take());
    }
    let reply = run(host, m, target, &name, args).await;
    if let Some(text) = reply {
        let slot = host.chats.slot(target);
        slot.output.notice(text);
    }
    drop(turn);
}

async fn run(host: &Arc<Host>, m: &InMessage, target: Target, name: &str, args: &str) -> Option<String> {
    let key = chat_key(m.chat_id);
    match name {
        "start" | "help" => Some(texts::HELP.to_owned()),
        "stop" => {
            let slot = host.chats.slot(target);
            match host.chats.loaded(&slot).await {
                Some(s) if !s.is_idle() => {
                    s.abort();
                    Some("Stopped.".into())
                }
                _ => Some("Nothing is running.".into()),
            }
        }
        "allow" | "deny" => Some(access_command(host, m.from_id, name, args)),
        "tz" => Some(time_zone(host, target, &key, args).await),
        "calendar" => super::calendar::command(host, m, target, args).await,
        _ => {
            let slot = host.chats.slot(target);
            let session = match host.chats.session(&slot).await {
                Ok(s) => s,
                Err(e) => return Some(format!("⚠️ {e}")),
            };
            match name {
                "new" => Some(match session.new_session().await {
                    Ok(()) => "New session started.".into(),
                    Err(e) => format!("⚠️ {e}"),
                }),
                "compact" => {
                    let before = session.stats();
                    let instructions = (!args.is_empty()).then(|| args.to_owned());
                    Some(match session.compact(instructions).await {
                        Ok(_) => {
                            let after = session.stats();
                            format!(
                                "Compacted: context {} → about {} tokens (of {}).",
                                before.context_tokens, after.context_tokens, after.context_window
                            )
                        }
                        Err(e) => format!("⚠️ {e}"),
                    })
                }
                "model" if args.is_empty() => {
                    let current = session.model().map(|m| m.key());
                    let list: Vec<String> = session
                        .available_models()
                        .iter()
                        .map(|m| {
                            let mark = if Some(m.key()) == current { "▸" } else { "•" };
                            format!("{mark} `{}`", m.key())
                        })
                        .collect();
                    Some(format!("Models (change with /model provider/id):\n{}", list.join("\n")))
                }
                "model" => Some(match session.set_model(args).await {
                    Ok(model) => {
                        let _ = host.chats.settings().update(&key, |s| s.model = Some(model.key()));
                        format!("Model: `{}`", model.key())
                    }
                    Err(e) => format!("⚠️ {e}"),
                }),
                "thinking" if args.is_empty() => Some(format!(
                    "Thinking level: {} (change with /thinking off|minimal|low|medium|high|xhigh)",
                    session.thinking_level()
                )),
                "thinking" => Some(match args.parse::<ThinkingLevel>() {
                    Ok(level) => match session.set_thinking_level(level).await {
                        Ok(()) => {
                            let _ = host.chats.settings().update(&key, |s| s.thinking = Some(level));
                            format!("Thinking level: {level}{}", crate::host::no_reasoning_note(&session))
                        }
                        Err(e) => format!("⚠️ {e}"),
                    },
                    Err(e) => format!("⚠️ {e}"),
                }),
                "session" => {
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
                }
                other if session.commands().iter().any(|c| c.name == other) => {
                    let line = if args.is_empty() {
                        format!("/{other}")
                    } else {
                        format!("/{other} {args}")
                    };
                    match session.prompt(PromptInput::text(line)).await {
                        Ok(()) => None,
                        Err(e) => Some(format!("⚠️ {e}")),
                    }
                }
                other => Some(texts::unknown_command(other)),
            }
        }
    }
}

fn access_command(host: &Host, from: i64, name: &str, args: &str) -> String {
    if !host.access.is_owner(from) {
        return format!("Only an owner may /{name}.");
    }
    let Ok(id) = args.trim().parse::<i64>() else {
        return format!("Usage: /{name} USER_ID (a number)");
    };
    let r = if name == "allow" {
        host.access.allow(id).map(|()| format!("User {id} may now talk to me."))
    } else {
        host.access.deny(id).map(|ok| {
            if ok {
                format!("User {id} is denied.")
            } else {
                format!("User {id} is an owner and cannot be denied.")
            }
        })
    };
    r.unwrap_or_else(|e| format!("⚠️ cannot save access.json: {e}"))
}

async fn time_zone(host: &Arc<Host>, target: Target, key: &str, args: &str) -> String {
    if args.is_empty() {
        let tz = host
            .chats
            .settings()
            .get(key)
            .time_zone
            .unwrap_or_else(|| host.config.default_time_zone.name().to_owned());
        return format!("Time zone: {tz} (change with /tz Area/City, e.g. /tz Europe/Berlin)");
    }
    let Ok(tz) = args.parse::<chrono_tz::Tz>() else {
        return format!(
            "`{args}` is not an IANA time zone. Try e.g. Europe/Berlin, America/New_York, Asia/Tokyo, UTC."
        );
    };
    if let Err(e) = host
        .chats
        .settings()
        .update(key, |s| s.time_zone = Some(tz.name().to_owned()))
    {
        return format!("⚠️ cannot save chat-settings.json: {e}");
    }
    // Every loaded topic of the chat takes the zone now; the others when they load.
    for s in host.chats.loaded_in_chat(target.chat_id).await {
        s.set_time_zone(Some(tz));
    }
    format!("Time zone: {}", tz.name())
}

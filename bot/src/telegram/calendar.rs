//! The host side of Google Calendar: `/calendar connect | status | disconnect`, the paste-back
//! message taken before any session sees it, and the OAuth callback route on the bot's HTTP
//! listener (`<public_url>/oauth/google/callback`).

use std::collections::HashMap;
use std::sync::Arc;

use axum::Router;
use axum::extract::{Query, State};
use axum::http::StatusCode;
use axum::response::Html;
use axum::routing::get;
use teloxide::types::{InlineKeyboardButton, InlineKeyboardMarkup};
use volcanic_abstractions::processes::SecretRedactor;
use volcanic_google_calendar::{CALLBACK_PATH, ChatRef, GoogleCalendarConnections};

use super::api::{Target, Tg};
use super::chats::chat_key;
use super::inbound::InMessage;
use super::router::Host;
use crate::config::Config;

/// The process-wide service from `[google]` and `[http] public_url`; a revoked connection is
/// told to its chat through `tg`.
pub fn connections(
    config: &Config,
    redactor: Arc<dyn SecretRedactor>,
    tg: Arc<Tg>,
) -> anyhow::Result<Arc<GoogleCalendarConnections>> {
    let connections = GoogleCalendarConnections::new(config.google.clone(), &config.state_dir, redactor)?;
    let handle = tokio::runtime::Handle::current();
    connections.set_notifier(Arc::new(move |chat_id, thread, text| {
        let tg = tg.clone();
        handle.spawn(async move {
            let _ = tg.send_plain(Target { chat_id, thread }, &text, None).await;
        });
    }));
    Ok(connections)
}

/// The chat a message belongs to, as the calendar service names it.
pub fn chat_ref(chat_id: i64) -> ChatRef {
    ChatRef {
        id: chat_id,
        key: chat_key(chat_id),
    }
}

/// Told in a group when its sign-in link went to the user privately.
pub const LINK_SENT_PRIVATELY: &str =
    "I sent you the sign-in link in a private message: only you can connect this group's Google Calendar with it.";

/// Told in a group when the bot cannot write to the user privately.
pub fn no_private_chat(bot_username: &str) -> String {
    format!(
        "⚠️ I can send the sign-in link only privately, and cannot write to you yet: open a private chat \
         with @{bot_username}, press Start, then run /calendar connect here again."
    )
}

/// The private message carrying a group's sign-in link.
pub const PRIVATE_LINK: &str = "Sign-in for the group you ran /calendar connect in: open the link below and allow \
                                access; I confirm in the group when it is done. The link works once, for 10 \
                                minutes. Do not share it: whoever signs in with it connects their account to the group.";

/// `/calendar …`; `None` when the answer was already sent (the link with its button).
pub async fn command(host: &Arc<Host>, m: &InMessage, target: Target, args: &str) -> Option<String> {
    let chat = chat_ref(m.chat_id);
    match args.split_whitespace().next().unwrap_or_default() {
        "connect" => {
            let link = match host.calendar.connect(chat, m.from_id, m.thread) {
                Ok(l) => l,
                Err(e) => return Some(format!("⚠️ {e}")),
            };
            let text = if link.paste_back {
                "Open the link below and allow access. Your browser then lands on a page that does not \
                 load (an address starting with http://127.0.0.1): copy that whole address from the \
                 address bar and send it here. I take it before the assistant sees it and delete it. \
                 The link works once, for 10 minutes."
            } else {
                "Open the link below and allow access; I confirm here when it is done. The link works \
                 once, for 10 minutes."
            };
            let Ok(url) = url::Url::parse(&link.url) else {
                return Some("⚠️ the sign-in address is not a valid URL: check `[google] auth_url`".into());
            };
            let markup = InlineKeyboardMarkup::new([[InlineKeyboardButton::url("Connect Google Calendar", url)]]);
            if m.is_group() && !link.paste_back {
                // The callback cannot tell who opened the link: in a group only the user who
                // asked gets it, privately.
                let private = Target {
                    chat_id: m.from_id,
                    thread: None,
                };
                return Some(match host.tg.send_plain(private, PRIVATE_LINK, Some(markup)).await {
                    Ok(_) => LINK_SENT_PRIVATELY.to_owned(),
                    Err(e) => {
                        tracing::info!(
                            chat = m.chat_id,
                            user = m.from_id,
                            "cannot send the sign-in link privately: {e}"
                        );
                        no_private_chat(&host.bot_username)
                    }
                });
            }
            if let Err(e) = host.tg.send_plain(target, text, Some(markup)).await {
                return Some(format!("⚠️ cannot send the sign-in link: {e}"));
            }
            None
        }
        "status" | "" => {
            let key = chat_key(m.chat_id);
            let zone = host
                .chats
                .settings()
                .get(&key)
                .time_zone
                .unwrap_or_else(|| host.config.default_time_zone.name().to_owned());
            Some(host.calendar.status(&chat, &zone).await)
        }
        "disconnect" => Some(match host.calendar.disconnect(&chat).await {
            Ok(text) => text,
            Err(e) => format!("⚠️ {e}"),
        }),
        other => Some(format!(
            "Unknown `/calendar {other}`: use /calendar connect, status or disconnect."
        )),
    }
}

/// Added to the answer when the pasted address could not be deleted.
pub const UNDELETED: &str = "\n\n⚠️ I could not delete your message with the address (it carries a sign-in code): \
                             please delete it yourself.";

/// Takes a pasted address: deletes the message (it carries a code), finishes the sign-in, answers.
pub async fn paste(host: &Arc<Host>, m: &InMessage, text: &str) {
    let target = Target {
        chat_id: m.chat_id,
        thread: m.thread,
    };
    let message_id = i32::try_from(m.message_id).unwrap_or_default();
    let deleted = host.tg.try_delete(target, message_id).await;
    let mut answer = match host.calendar.finish_paste(&chat_ref(m.chat_id), m.from_id, text).await {
        Ok(connected) => connected.message(),
        Err(e) => format!("⚠️ {e}"),
    };
    if let Err(e) = deleted {
        tracing::warn!(chat = m.chat_id, "could not delete a pasted sign-in address: {e}");
        answer.push_str(UNDELETED);
    }
    let _ = host.tg.send_plain(target, &answer, None).await;
}

/// `GET /oauth/google/callback` (merged into the bot's HTTP router).
pub fn routes(host: Arc<Host>) -> Router {
    Router::new().route(CALLBACK_PATH, get(callback)).with_state(host)
}

fn page(title: &str, body: &str) -> Html<String> {
    let esc = |s: &str| s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;");
    Html(format!(
        "<!doctype html><html><head><meta charset=\"utf-8\"><title>{t}</title></head>\
         <body><h1>{t}</h1><p>{b}</p></body></html>",
        t = esc(title),
        b = esc(body)
    ))
}

async fn callback(
    State(host): State<Arc<Host>>,
    Query(params): Query<HashMap<String, String>>,
) -> (StatusCode, Html<String>) {
    match host.calendar.finish_callback(&params).await {
        Ok(connected) => {
            let target = Target {
                chat_id: connected.chat.id,
                thread: connected.topic,
            };
            let _ = host.tg.send_plain(target, &connected.message(), None).await;
            (
                StatusCode::OK,
                page(
                    "Done",
                    "Google Calendar is connected. You can close this page and go back to Telegram.",
                ),
            )
        }
        Err(e) => (StatusCode::BAD_REQUEST, page("Not connected", &e.to_string())),
    }
}

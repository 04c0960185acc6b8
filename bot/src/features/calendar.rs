//! The Google Calendar feature (Telegram only): per chat session the `calendar` tool bound to its
//! chat (only when an OAuth client is configured: the tool costs every request its definition);
//! `/calendar connect | status | disconnect`; the paste-back message taken before any session
//! sees it; the OAuth callback route on the bot's HTTP listener
//! (`<public_url>/oauth/google/callback`); the chat's token file, moved with a migrating group.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;

use async_trait::async_trait;
use axum::Router;
use axum::extract::{Query, State};
use axum::http::StatusCode;
use axum::response::Html;
use axum::routing::get;
use volcanic_abstractions::extensions::ExtensionFactory;
use volcanic_abstractions::processes::SecretRedactor;
use volcanic_google_calendar::{CALLBACK_PATH, ChatRef, GoogleCalendarConnections};

use super::port::{ChatPort, Incoming, Target, UrlButton, chat_key};
use super::{CommandCall, FeatureCommand, HostFeature, Services, SessionPlace, Turn};
use crate::config::Config;

/// The feature: the process-wide connections and the chat port.
#[derive(Debug)]
pub struct Calendar {
    connections: Arc<GoogleCalendarConnections>,
    chats: Arc<dyn ChatPort>,
    state_dir: PathBuf,
    /// `[http] public_url` is set: the callback route is served.
    callback: bool,
}

/// Builds it in the Telegram host (the sign-in is per chat, through `/calendar connect`).
pub fn build(services: &Services) -> anyhow::Result<Option<Arc<dyn HostFeature>>> {
    let Some(chats) = &services.chats else {
        return Ok(None);
    };
    let connections = connections(&services.config, services.redactor.clone(), chats.clone())?;
    Ok(Some(Arc::new(Calendar {
        connections,
        chats: chats.clone(),
        state_dir: services.state_dir.clone(),
        callback: !services.config.public_url.is_empty(),
    })))
}

/// The process-wide service from `[google]` and `[http] public_url`; a revoked connection is
/// told to its chat through `chats`.
fn connections(
    config: &Config,
    redactor: Arc<dyn SecretRedactor>,
    chats: Arc<dyn ChatPort>,
) -> anyhow::Result<Arc<GoogleCalendarConnections>> {
    let connections = GoogleCalendarConnections::new(config.google.clone(), &config.state_dir, redactor)?;
    let handle = tokio::runtime::Handle::current();
    connections.set_notifier(Arc::new(move |chat_id, thread, text| {
        let chats = chats.clone();
        handle.spawn(async move {
            let _ = chats.send(Target { chat_id, thread }, &text, &[]).await;
        });
    }));
    Ok(connections)
}

/// The chat a message belongs to, as the calendar service names it.
fn chat_ref(chat_id: i64) -> ChatRef {
    ChatRef {
        id: chat_id,
        key: chat_key(chat_id),
    }
}

const COMMANDS: &[FeatureCommand] = &[FeatureCommand {
    name: "calendar",
    description: "Google Calendar: connect, status, disconnect",
    turn: Turn::Waits,
}];

#[async_trait]
impl HostFeature for Calendar {
    fn name(&self) -> &'static str {
        "google-calendar"
    }

    fn session_extensions(&self, place: &SessionPlace<'_>) -> Vec<ExtensionFactory> {
        match place.chat {
            Some(chat) if self.connections.is_configured() => {
                vec![self.connections.extension_factory(chat_ref(chat.chat_id))]
            }
            _ => Vec::new(),
        }
    }

    fn routes(&self) -> Option<Router> {
        self.callback.then(|| {
            Router::new().route(CALLBACK_PATH, get(callback)).with_state(Callback {
                connections: self.connections.clone(),
                chats: self.chats.clone(),
            })
        })
    }

    fn commands(&self) -> &[FeatureCommand] {
        COMMANDS
    }

    async fn command(&self, _name: &str, call: CommandCall<'_>) -> Option<String> {
        self.run(call).await
    }

    fn help(&self) -> &[&'static str] {
        &["/calendar connect|status|disconnect - Google Calendar of this chat"]
    }

    fn takes(&self, text: &str) -> bool {
        self.connections.is_paste(text)
    }

    async fn take(&self, m: &Incoming, text: &str) {
        self.paste(m, text).await;
    }

    fn chat_files(&self, chat_key: &str) -> Vec<PathBuf> {
        // The token file is named by the chat key.
        vec![self.state_dir.join("google").join(format!("{chat_key}.json"))]
    }
}

/// Told in a group when its sign-in link went to the user privately.
const LINK_SENT_PRIVATELY: &str =
    "I sent you the sign-in link in a private message: only you can connect this group's Google Calendar with it.";

/// Told in a group when the bot cannot write to the user privately.
fn no_private_chat(bot_username: &str) -> String {
    format!(
        "⚠️ I can send the sign-in link only privately, and cannot write to you yet: open a private chat \
         with @{bot_username}, press Start, then run /calendar connect here again."
    )
}

/// The private message carrying a group's sign-in link.
const PRIVATE_LINK: &str = "Sign-in for the group you ran /calendar connect in: open the link below and allow \
                            access; I confirm in the group when it is done. The link works once, for 10 \
                            minutes. Do not share it: whoever signs in with it connects their account to the group.";

/// Added to the answer when the pasted address could not be deleted.
const UNDELETED: &str = "\n\n⚠️ I could not delete your message with the address (it carries a sign-in code): \
                         please delete it yourself.";

impl Calendar {
    /// `/calendar …`; `None` when the answer was already sent (the link with its button).
    async fn run(&self, call: CommandCall<'_>) -> Option<String> {
        let m = call.message;
        let target = call.target;
        let chat = chat_ref(m.chat_id);
        match call.args.split_whitespace().next().unwrap_or_default() {
            "connect" => {
                let link = match self.connections.connect(chat, m.from_id, m.thread) {
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
                let button = [UrlButton {
                    text: "Connect Google Calendar".into(),
                    url,
                }];
                if m.is_group() && !link.paste_back {
                    // The callback cannot tell who opened the link: in a group only the user who
                    // asked gets it, privately.
                    let private = Target {
                        chat_id: m.from_id,
                        thread: None,
                    };
                    return Some(match self.chats.send(private, PRIVATE_LINK, &button).await {
                        Ok(_) => LINK_SENT_PRIVATELY.to_owned(),
                        Err(e) => {
                            tracing::info!(
                                chat = m.chat_id,
                                user = m.from_id,
                                "cannot send the sign-in link privately: {e}"
                            );
                            no_private_chat(call.bot_username)
                        }
                    });
                }
                if let Err(e) = self.chats.send(target, text, &button).await {
                    return Some(format!("⚠️ cannot send the sign-in link: {e}"));
                }
                None
            }
            "status" | "" => Some(self.connections.status(&chat, call.time_zone).await),
            "disconnect" => Some(match self.connections.disconnect(&chat).await {
                Ok(text) => text,
                Err(e) => format!("⚠️ {e}"),
            }),
            other => Some(format!(
                "Unknown `/calendar {other}`: use /calendar connect, status or disconnect."
            )),
        }
    }

    /// Takes a pasted address: deletes the message (it carries a code), finishes the sign-in,
    /// answers.
    async fn paste(&self, m: &Incoming, text: &str) {
        let target = m.target();
        let deleted = self.chats.delete(target, m.message_id).await;
        let mut answer = match self
            .connections
            .finish_paste(&chat_ref(m.chat_id), m.from_id, text)
            .await
        {
            Ok(connected) => connected.message(),
            Err(e) => format!("⚠️ {e}"),
        };
        if let Err(e) = deleted {
            tracing::warn!(chat = m.chat_id, "could not delete a pasted sign-in address: {e}");
            answer.push_str(UNDELETED);
        }
        let _ = self.chats.send(target, &answer, &[]).await;
    }
}

/// The callback route's state.
#[derive(Clone)]
struct Callback {
    connections: Arc<GoogleCalendarConnections>,
    chats: Arc<dyn ChatPort>,
}

/// `GET /oauth/google/callback`.
async fn callback(
    State(cb): State<Callback>,
    Query(params): Query<HashMap<String, String>>,
) -> (StatusCode, Html<String>) {
    match cb.connections.finish_callback(&params).await {
        Ok(connected) => {
            let target = Target {
                chat_id: connected.chat.id,
                thread: connected.topic,
            };
            let _ = cb.chats.send(target, &connected.message(), &[]).await;
            (
                StatusCode::OK,
                super::sign_in_page(
                    "Done",
                    "Google Calendar is connected. You can close this page and go back to Telegram.",
                ),
            )
        }
        Err(e) => (
            StatusCode::BAD_REQUEST,
            super::sign_in_page("Not connected", &e.to_string()),
        ),
    }
}

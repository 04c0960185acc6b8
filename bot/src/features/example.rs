//! The example feature: the smallest complete host feature, compiled in and off unless the config
//! has its section. It shows every part of the seam in one file, and the end-to-end test
//! `bot/tests/e2e/features.rs` drives it through the real binary:
//!
//! ```toml
//! [example]
//! reply = "pong"   # what /example and GET /example/ping answer (default "pong")
//! ```
//!
//! - the host command `/example` (it waits for its place in the chat's line);
//! - per session, the extension `example`: the tool `example_where` (the session's chat, time
//!   zone and workspace folder) and the command `/example_note TEXT` (a notice through the
//!   session's UI). The console gets it too (there the tool says there is no chat);
//! - the route `GET /example/ping` on the bot's HTTP listener.

use super::port::{Target, chat_key};
use super::{CommandCall, FeatureCommand, HostFeature, Services, SessionPlace, Turn};
use async_trait::async_trait;
use std::sync::Arc;
use tokio_util::sync::CancellationToken;
use volcanic_abstractions::extensions::{BoxError, CommandDefinition, Extension, ExtensionApi, ExtensionFactory};
use volcanic_abstractions::tools::{ToolError, ToolInvocation, ToolResult, TypedTool, typed};
use volcanic_abstractions::ui::NotifyLevel;

/// `[example]`.
#[derive(Debug, serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct Section {
    /// What `/example` and the route answer.
    #[serde(default = "default_reply")]
    reply: String,
}

fn default_reply() -> String {
    "pong".into()
}

/// The route's path.
pub const PING_PATH: &str = "/example/ping";

/// The example feature (see the module docs).
#[derive(Debug)]
pub struct Example {
    reply: String,
}

/// Builds it when the config has `[example]`.
pub fn build(services: &Services) -> anyhow::Result<Option<Arc<dyn HostFeature>>> {
    let Some(section) = services.section::<Section>("example")? else {
        return Ok(None);
    };
    Ok(Some(Arc::new(Example { reply: section.reply })))
}

const COMMANDS: &[FeatureCommand] = &[FeatureCommand {
    name: "example",
    description: "The example feature answers",
    turn: Turn::Waits,
}];

#[async_trait]
impl HostFeature for Example {
    fn name(&self) -> &'static str {
        "example"
    }

    fn session_extensions(&self, place: &SessionPlace<'_>) -> Vec<ExtensionFactory> {
        let (chat, zone) = (place.chat, place.time_zone);
        let folder = place
            .workspace
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        vec![Arc::new(move || {
            Box::new(ExampleExtension {
                chat,
                zone,
                folder: folder.clone(),
            }) as Box<dyn Extension>
        })]
    }

    fn routes(&self) -> Option<axum::Router> {
        let reply = self.reply.clone();
        Some(axum::Router::new().route(PING_PATH, axum::routing::get(move || async move { reply })))
    }

    fn commands(&self) -> &[FeatureCommand] {
        COMMANDS
    }

    async fn command(&self, _name: &str, call: CommandCall<'_>) -> Option<String> {
        Some(format!(
            "{} (chat {}, time zone {})",
            self.reply,
            chat_key(call.target.chat_id),
            call.time_zone
        ))
    }

    fn help(&self) -> &[&'static str] {
        &["/example - the example feature answers"]
    }
}

/// The per-session part: the `example_where` tool and `/example_note`.
#[derive(Debug)]
struct ExampleExtension {
    chat: Option<Target>,
    /// The session's zone when it was made (`/tz` may change it later).
    zone: chrono_tz::Tz,
    /// Its workspace folder's name.
    folder: String,
}

#[async_trait]
impl Extension for ExampleExtension {
    fn name(&self) -> &str {
        "example"
    }

    async fn activate(&self, api: Arc<dyn ExtensionApi>) -> Result<(), BoxError> {
        api.register_tool(typed(WhereTool {
            chat: self.chat,
            zone: self.zone,
            folder: self.folder.clone(),
        }));
        api.register_command(
            "example_note",
            CommandDefinition {
                description: "The example feature repeats a note".into(),
                handler: Arc::new(|args, ctx, _cancel| {
                    Box::pin(async move {
                        if let Some(ui) = ctx.ui() {
                            ui.notify(&format!("example note: {args}"), NotifyLevel::Info).await;
                        }
                        Ok(())
                    })
                }),
            },
        );
        Ok(())
    }
}

/// `example_where` takes no arguments.
#[derive(Debug, serde::Deserialize, schemars::JsonSchema)]
struct NoArgs {}

#[derive(Debug)]
struct WhereTool {
    chat: Option<Target>,
    zone: chrono_tz::Tz,
    folder: String,
}

#[async_trait]
impl TypedTool for WhereTool {
    type Args = NoArgs;
    fn name(&self) -> &str {
        "example_where"
    }
    fn description(&self) -> &str {
        "Says where this session is: its chat, time zone and workspace folder (the example feature)"
    }
    async fn run(
        &self,
        _args: NoArgs,
        inv: ToolInvocation,
        _cancel: CancellationToken,
    ) -> Result<ToolResult, ToolError> {
        let chat = self.chat.map_or_else(
            || "no chat (console)".to_owned(),
            |t| format!("chat {}", chat_key(t.chat_id)),
        );
        // The zone now (after a /tz), else the one the session started with.
        let zone = inv.ctx.time_zone().unwrap_or_else(|| self.zone.name().to_owned());
        Ok(ToolResult::text(format!(
            "{chat}, time zone {zone}, workspace {}",
            self.folder
        )))
    }
}

//! Example extensions, written against `volcanic-abstractions` only (spec: extensions.md,
//! "Writing extensions"):
//!
//! - [`HelloExtension`]: a typed `hello` tool and a `/hello` command that asks the model to use it;
//! - [`ConfirmDangerousCommands`]: before `bash` runs a command containing `rm -rf`, asks the user
//!   "Run `…`?" with the choices Allow / Block (buttons on Telegram); without a UI the command is
//!   blocked, and a question the UI could not show blocks it with "could not ask the user: …";
//! - [`AskExtension`]: `/ask` walks through every `UserInterface` method;
//! - [`SlowInput`]: an `input` handler that awaits (`[wait 300ms]` in a message holds it that
//!   long), to see that a slow handler never reorders a chat's messages.

mod slow_input;

pub use slow_input::{MAX_HOLD, SlowInput, hold};

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::Deserialize;
use std::sync::Arc;
use tokio_util::sync::CancellationToken;
use volcanic_abstractions::extensions::events::ToolCallEvent;
use volcanic_abstractions::extensions::{
    BoxError, CommandDefinition, Delivery, Extension, ExtensionApi, ExtensionApiExt, ExtensionFactory,
};
use volcanic_abstractions::tools::{ToolError, ToolInvocation, ToolResult, TypedTool, typed};
use volcanic_abstractions::ui::NotifyLevel;

/// Arguments of the `hello` tool.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct HelloArgs {
    /// Name to greet.
    pub name: String,
}

/// Greets someone.
#[derive(Debug)]
pub struct HelloTool;

#[async_trait]
impl TypedTool for HelloTool {
    type Args = HelloArgs;
    fn name(&self) -> &str {
        "hello"
    }
    fn description(&self) -> &str {
        "Greets someone"
    }
    fn prompt_snippet(&self) -> Option<String> {
        Some("greet a person by name".into())
    }
    async fn run(
        &self,
        args: HelloArgs,
        _inv: ToolInvocation,
        _cancel: CancellationToken,
    ) -> Result<ToolResult, ToolError> {
        Ok(ToolResult::text(format!("Hello, {}!", args.name)).with_details(serde_json::json!({"greeted": args.name})))
    }
}

/// The `hello` tool and `/hello NAME`.
#[derive(Debug, Default)]
pub struct HelloExtension;

#[async_trait]
impl Extension for HelloExtension {
    fn name(&self) -> &str {
        "hello"
    }

    async fn activate(&self, api: Arc<dyn ExtensionApi>) -> Result<(), BoxError> {
        api.register_tool(typed(HelloTool));
        let me = api.clone();
        api.register_command(
            "hello",
            CommandDefinition {
                description: "Say hello through the model".into(),
                handler: Arc::new(move |args, _ctx, _cancel| {
                    let api = me.clone();
                    Box::pin(async move {
                        api.send_user_message(
                            format!("Please greet {args} using the hello tool."),
                            Vec::new(),
                            Delivery::FollowUp,
                        )?;
                        Ok(())
                    })
                }),
            },
        );
        Ok(())
    }
}

/// The text that makes a `bash` command dangerous.
pub const DANGEROUS: &str = "rm -rf";

/// Asks before `bash` runs `rm -rf …`: Allow / Block.
#[derive(Debug, Default)]
pub struct ConfirmDangerousCommands;

#[async_trait]
impl Extension for ConfirmDangerousCommands {
    fn name(&self) -> &str {
        "confirm-dangerous"
    }

    async fn activate(&self, api: Arc<dyn ExtensionApi>) -> Result<(), BoxError> {
        api.on::<ToolCallEvent, _>(|e, ctx, cancel| {
            Box::pin(async move {
                if e.tool_name != "bash" {
                    return Ok(());
                }
                let command = e.input["command"].as_str().unwrap_or_default().to_owned();
                if !command.contains(DANGEROUS) {
                    return Ok(());
                }
                let Some(ui) = ctx.ui() else {
                    e.block("Dangerous command blocked (no UI to confirm)");
                    return Ok(());
                };
                let options = ["Allow".to_owned(), "Block".to_owned()];
                // A question that could not be shown is reported as such, not as a refusal.
                match ui.try_select(&format!("Run `{command}`?"), &options, cancel).await {
                    Ok(Some(choice)) if choice == "Allow" => {}
                    Ok(_) => e.block("Blocked by user"),
                    Err(not_asked) => e.block(format!("Not run: {not_asked}")),
                }
                Ok(())
            })
        });
        Ok(())
    }
}

/// `/ask`: walks through every `UserInterface` method: `confirm`, `select`, `input`, `status`,
/// then `notify` with what the user answered. Useful to try a host's UI.
#[derive(Debug, Default)]
pub struct AskExtension;

#[async_trait]
impl Extension for AskExtension {
    fn name(&self) -> &str {
        "ask"
    }

    async fn activate(&self, api: Arc<dyn ExtensionApi>) -> Result<(), BoxError> {
        api.register_command(
            "ask",
            CommandDefinition {
                description: "Try the chat's buttons and questions".into(),
                handler: Arc::new(|_args, ctx, cancel| {
                    Box::pin(async move {
                        let Some(ui) = ctx.ui() else {
                            return Err("this host has no UI".into());
                        };
                        let go = ui.confirm("Ask", "Shall we start?", cancel.clone()).await;
                        if go != Some(true) {
                            ui.notify("Maybe later.", NotifyLevel::Info).await;
                            return Ok(());
                        }
                        let colours = ["red".to_owned(), "green".to_owned(), "blue".to_owned()];
                        let colour = ui.select("Pick a colour", &colours, cancel.clone()).await;
                        let name = ui.input("What is your name?", Some("Ada"), cancel).await;
                        ui.status("ask", Some("thinking")).await;
                        let name = name.unwrap_or_else(|| "stranger".into());
                        let colour = colour.unwrap_or_else(|| "nothing".into());
                        ui.notify(&format!("Hello {name}, you picked {colour}."), NotifyLevel::Info)
                            .await;
                        Ok(())
                    })
                }),
            },
        );
        Ok(())
    }
}

/// Factories by name, for hosts: `hello`, `confirm-dangerous`, `ask`, `slow-input`.
pub fn factories() -> Vec<(&'static str, ExtensionFactory)> {
    vec![
        ("hello", Arc::new(|| Box::new(HelloExtension) as Box<dyn Extension>)),
        (
            "confirm-dangerous",
            Arc::new(|| Box::new(ConfirmDangerousCommands) as Box<dyn Extension>),
        ),
        ("ask", Arc::new(|| Box::new(AskExtension) as Box<dyn Extension>)),
        ("slow-input", Arc::new(|| Box::new(SlowInput) as Box<dyn Extension>)),
    ]
}

//! The built-in `send` tool: delivers a file or a text into the conversation's chat. Registered
//! only for sessions with a [`ChatChannel`](volcanic_abstractions::ui::ChatChannel).

use super::open::{Access, open_argument};
use super::paths::{has_image_extension, resolve_path};
use super::until_cancelled;
use async_trait::async_trait;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;
use tokio_util::sync::CancellationToken;
use volcanic_abstractions::tools::{ToolError, ToolInvocation, ToolResult, TypedTool};

/// Arguments of `send`: exactly one of `path` and `text` (checked when it runs: the schema
/// leaves both optional, as a `oneOf` would confuse some models).
#[derive(Debug, Deserialize, JsonSchema)]
#[schemars(transform = super::model_schema)]
pub struct SendArgs {
    /// File to send: relative to the working directory, or absolute
    pub path: Option<String>,
    /// Message text (Markdown) to send instead of a file
    pub text: Option<String>,
    /// Caption for the file
    pub caption: Option<String>,
}

/// `send {path?, text?, caption?}`: exactly one of `path` (a file; png, jpg, jpeg, gif and webp go
/// as photos, anything else as a document) or `text`.
#[derive(Debug, Default, Clone, Copy)]
pub struct SendTool;

#[async_trait]
impl TypedTool for SendTool {
    type Args = SendArgs;

    fn name(&self) -> &str {
        "send"
    }

    fn description(&self) -> &str {
        "Send a file or a message into this chat. Give exactly one of path (a file: images png, \
         jpg, gif and webp arrive as photos, other files as documents; optional caption) or text. \
         Your final answer reaches the chat anyway: use send for files, or for a message that \
         must arrive while you keep working."
    }

    fn prompt_snippet(&self) -> Option<String> {
        Some("Send files (images as photos) or messages into the chat".to_owned())
    }

    fn prompt_guidelines(&self) -> Vec<String> {
        vec!["Use send to deliver files you created to the user; mentioning a path is not enough".to_owned()]
    }

    async fn run(
        &self,
        args: SendArgs,
        invocation: ToolInvocation,
        cancel: CancellationToken,
    ) -> Result<ToolResult, ToolError> {
        let channel = invocation
            .ctx
            .channel()
            .ok_or_else(|| ToolError::msg("send is not available: this session has no chat to send to"))?;
        match (args.path, args.text) {
            (Some(path), None) => {
                let absolute = resolve_path(&invocation.ctx.cwd(), &path);
                // Opened within the boundary now; the channel sends this descriptor's file.
                let file = open_argument(&*invocation.ctx, &path, Access::Read)?;
                if !file.metadata().is_ok_and(|m| m.is_file()) {
                    return Err(ToolError::msg(format!("File not found: {path}")));
                }
                let name = absolute
                    .file_name()
                    .map_or_else(|| path.clone(), |n| n.to_string_lossy().into_owned());
                let as_photo = has_image_extension(&absolute);
                let sending = channel.send_file(file, &name, args.caption.as_deref(), as_photo);
                until_cancelled(&cancel, sending)
                    .await?
                    .map_err(|e| ToolError::msg(format!("Could not send {path}: {e}")))?;
                let kind = if as_photo { "photo" } else { "file" };
                Ok(ToolResult::text(format!("Sent {kind} {path}"))
                    .with_details(json!({ "path": absolute, "asPhoto": as_photo })))
            }
            (None, Some(text)) => {
                if text.trim().is_empty() {
                    return Err(ToolError::msg("text is empty; nothing was sent"));
                }
                until_cancelled(&cancel, channel.send_text(&text))
                    .await?
                    .map_err(|e| ToolError::msg(format!("Could not send the message: {e}")))?;
                Ok(ToolResult::text(format!(
                    "Sent message ({} characters)",
                    text.chars().count()
                )))
            }
            (Some(_), Some(_)) | (None, None) => Err(ToolError::msg(
                "Give exactly one of path (a file) or text (a message); nothing was sent",
            )),
        }
    }
}

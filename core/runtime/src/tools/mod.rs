//! The tools slice: known and active tools, argument validation, output truncation and the
//! built-in tools.
//!
//! Entry type: [`ToolRegistry`]. The first registration of a name wins, except that an extension
//! tool replaces a built-in of the same name; a refused registration is a [`ToolRegistryError`]
//! the caller logs. [`ToolRegistry::validate`] checks arguments against the tool's JSON Schema
//! (compiled once per tool) and explains failures field by field, for the model.
//!
//! Built-in tools ([`builtin_tools`]), with pi's argument names; each is a
//! [`TypedTool`](volcanic_abstractions::tools::TypedTool) whose schema comes from its argument
//! struct (`schemars`):
//!
//! | tool | arguments | notes |
//! |---|---|---|
//! | `read` | `path, offset?, limit?` | head-truncated text with a continuation notice; images as image content |
//! | `bash` | `command, timeout?` | through `ctx.prepare_process`; own process group; tail-truncated, full output saved to a temp file |
//! | `edit` | `path, edits: [{oldText, newText}]` | each oldText unique in the original file, no overlaps, all or nothing; sequential |
//! | `write` | `path, content` | creates parent directories; sequential |
//! | `send` | `path? \| text?, caption?` | only for sessions with a chat channel |
//!
//! Relative paths resolve against `ctx.cwd()`, `~` against `$HOME`. `read`, `write`, `edit` and
//! `send` reach only what `ctx.file_boundary()` allows (the sandbox's boundary, checked on the
//! resolved target: [`check_reach`]); `read`, `write` and `edit` also do their I/O through a
//! descriptor opened inside a pinned, re-checked folder ([`open_within`]), so a link swapped in
//! after the check leads nowhere. Tools never redact: the agent
//! loop redacts every result, update and error. Cancelling the `cancel` token aborts a call
//! (`bash` kills its whole process group); truncation limits are [`DEFAULT_MAX_LINES`] lines and
//! [`DEFAULT_MAX_BYTES`] bytes, never splitting a UTF-8 character.

mod bash;
mod bash_output;
mod diff;
mod edit;
mod open;
mod paths;
mod read;
mod registry;
mod send;
mod truncate;
mod validation;
mod write;

pub use bash::{BashTool, DEFAULT_TIMEOUT_SECS, DRAIN_GRACE_MS, PROGRESS_INTERVAL_MS};
pub use diff::{CONTEXT_LINES, LineDiff, line_diff};
pub use edit::EditTool;
pub use open::{Access, open_within};
pub use paths::{check_reach, has_image_extension, image_mime_type, resolve_path};
pub use read::{MAX_IMAGE_BYTES, ReadTool};
pub use registry::{ToolRegistry, ToolRegistryError, ToolSource};
pub use send::SendTool;
pub use truncate::{
    DEFAULT_MAX_BYTES, DEFAULT_MAX_LINES, TruncatedBy, Truncation, format_size, truncate_head, truncate_tail,
};
pub use write::WriteTool;

use std::future::Future;
use std::sync::Arc;
use tokio_util::sync::CancellationToken;
use volcanic_abstractions::tools::{Tool, ToolError, typed};

/// The built-in tools: `read`, `bash`, `edit`, `write`, and `send` when the session has a chat
/// channel.
pub fn builtin_tools(has_channel: bool) -> Vec<Arc<dyn Tool>> {
    let mut tools: Vec<Arc<dyn Tool>> = vec![typed(ReadTool), typed(BashTool), typed(EditTool), typed(WriteTool)];
    if has_channel {
        tools.push(typed(SendTool));
    }
    tools
}

/// Shapes an argument struct's schema as the model sees it, as small as the hand-written ones
/// were: no description from the struct's doc comment (those are for Rust readers; the tool has
/// its own), an optional field typed as its value rather than also `null` (leave it out instead),
/// no `format` (the type says enough).
fn model_schema(schema: &mut schemars::Schema) {
    let Some(schema) = schema.as_object_mut() else { return };
    schema.remove("description");
    let properties = schema.get_mut("properties").and_then(serde_json::Value::as_object_mut);
    for property in properties.into_iter().flat_map(|p| p.values_mut()) {
        let Some(property) = property.as_object_mut() else {
            continue;
        };
        property.remove("format");
        let single = match property.get("type") {
            Some(serde_json::Value::Array(types)) if types.len() == 2 => {
                types.iter().find(|t| t.as_str() != Some("null")).cloned()
            }
            _ => None,
        };
        if let Some(single) = single {
            property.insert("type".to_owned(), single);
        }
    }
}

/// Runs `future` unless `cancel` fires first (then [`ToolError::Aborted`]).
async fn until_cancelled<F: Future>(cancel: &CancellationToken, future: F) -> Result<F::Output, ToolError> {
    tokio::select! {
        biased;
        () = cancel.cancelled() => Err(ToolError::Aborted),
        output = future => Ok(output),
    }
}

/// A file-system error as a message naming the path the model gave.
fn io_error(action: &str, path: &str, error: &std::io::Error) -> ToolError {
    use std::io::ErrorKind;
    ToolError::msg(match error.kind() {
        ErrorKind::NotFound => format!("File not found: {path}"),
        ErrorKind::IsADirectory => format!("{path} is a directory, not a file"),
        ErrorKind::PermissionDenied => format!("Permission denied: could not {action} {path}"),
        _ => format!("Could not {action} {path}: {error}"),
    })
}

#[cfg(test)]
mod test_support;

#[cfg(test)]
mod bash_tests;
#[cfg(test)]
mod edit_tests;
#[cfg(test)]
mod read_write_tests;
#[cfg(test)]
mod registry_tests;
#[cfg(test)]
mod send_tests;
#[cfg(test)]
mod truncate_tests;

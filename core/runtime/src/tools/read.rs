//! The built-in `read` tool: text files with head truncation and continuation notices, images as
//! image content.

use super::open::{Access, open_argument, read_to_end};
use super::paths::image_mime_type;
use super::truncate::{DEFAULT_MAX_BYTES, DEFAULT_MAX_LINES, TruncatedBy, format_size, truncate_head};
use super::{io_error, until_cancelled};
use async_trait::async_trait;
use base64::Engine;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;
use tokio_util::sync::CancellationToken;
use volcanic_abstractions::messages::{ImageContent, TextContent, UserContent};
use volcanic_abstractions::tools::{ToolError, ToolInvocation, ToolResult, TypedTool};

/// Images larger than this are not attached (bytes): providers reject them, and a rejected image
/// would stay in the transcript.
pub const MAX_IMAGE_BYTES: usize = 5 * 1024 * 1024;

/// Arguments of `read`. Line numbers are read as numbers (a model may write `10.0`) and checked
/// as integers from 1 by the schema.
#[derive(Debug, Deserialize, JsonSchema)]
#[schemars(transform = super::model_schema)]
pub struct ReadArgs {
    /// File to read: relative to the working directory, or absolute
    pub path: String,
    /// First line to read (1-based)
    #[schemars(with = "Option<u64>", range(min = 1))]
    pub offset: Option<f64>,
    /// Maximum number of lines to read
    #[schemars(with = "Option<u64>", range(min = 1))]
    pub limit: Option<f64>,
}

/// `read {path, offset?, limit?}`: reads a text file (at most 2000 lines / 50 KiB per call, with a
/// notice saying how to continue) or an image (png, jpg, gif, webp, as image content).
#[derive(Debug, Default, Clone, Copy)]
pub struct ReadTool;

#[async_trait]
impl TypedTool for ReadTool {
    type Args = ReadArgs;

    fn name(&self) -> &str {
        "read"
    }

    fn description(&self) -> &str {
        "Read a file. Text files come back as text, at most 2000 lines or 50KB per call \
         (whichever comes first); use offset and limit to page through larger files and keep \
         going with the offset the notice suggests until you have what you need. Images (png, \
         jpg, gif, webp) come back as image attachments."
    }

    fn prompt_snippet(&self) -> Option<String> {
        Some("Read file contents (text, or images as attachments)".to_owned())
    }

    fn prompt_guidelines(&self) -> Vec<String> {
        vec!["Use read to look at files instead of cat, head or sed".to_owned()]
    }

    async fn run(
        &self,
        args: ReadArgs,
        invocation: ToolInvocation,
        cancel: CancellationToken,
    ) -> Result<ToolResult, ToolError> {
        let file = open_argument(&*invocation.ctx, &args.path, Access::Read)?;
        let bytes = until_cancelled(&cancel, read_to_end(file))
            .await?
            .map_err(|e| io_error("read", &args.path, &e))?;
        if let Some(mime_type) = image_mime_type(&bytes) {
            return Ok(image_result(&bytes, mime_type));
        }
        let text = String::from_utf8_lossy(&bytes);
        read_text(&text, &args)
    }
}

fn image_result(bytes: &[u8], mime_type: &str) -> ToolResult {
    if bytes.len() > MAX_IMAGE_BYTES {
        return ToolResult::text(format!(
            "Image file [{mime_type}] is {}, larger than the {} an image may have; not attached.",
            format_size(bytes.len()),
            format_size(MAX_IMAGE_BYTES)
        ));
    }
    ToolResult {
        content: vec![
            UserContent::Text(TextContent {
                text: format!("Read image file [{mime_type}]"),
                text_signature: None,
            }),
            UserContent::Image(ImageContent {
                data: base64::engine::general_purpose::STANDARD.encode(bytes),
                mime_type: mime_type.to_owned(),
            }),
        ],
        ..ToolResult::default()
    }
}

/// Converts a validated positive integer argument (sent as a JSON number) to a count.
fn positive(value: Option<f64>) -> Option<usize> {
    // Validation guarantees an integer ≥ 1; truncation of absurd values is harmless.
    #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
    value.map(|v| v.max(1.0) as usize)
}

fn read_text(text: &str, args: &ReadArgs) -> Result<ToolResult, ToolError> {
    let lines: Vec<&str> = text.split('\n').collect();
    let total = lines.len();
    let start = positive(args.offset).map_or(0, |o| o - 1);
    if start >= total {
        return Err(ToolError::msg(format!(
            "Offset {} is beyond the end of {} ({total} lines in total)",
            start + 1,
            args.path
        )));
    }
    let end = positive(args.limit).map_or(total, |l| start.saturating_add(l).min(total));
    let selected = lines[start..end].join("\n");
    let truncation = truncate_head(&selected, DEFAULT_MAX_LINES, DEFAULT_MAX_BYTES);
    let first = start + 1;
    let output = if truncation.first_line_exceeds_limit {
        format!(
            "[Line {first} is {}, more than the {} limit. Use bash: sed -n '{first}p' {} | head -c {DEFAULT_MAX_BYTES}]",
            format_size(lines[start].len()),
            format_size(DEFAULT_MAX_BYTES),
            args.path
        )
    } else if truncation.truncated {
        let last = first + truncation.output_lines - 1;
        let limit_note = match truncation.truncated_by {
            Some(TruncatedBy::Bytes) => format!(" ({} limit)", format_size(DEFAULT_MAX_BYTES)),
            Some(TruncatedBy::Lines) | None => String::new(),
        };
        format!(
            "{}\n\n[Showing lines {first}-{last} of {total}{limit_note}. Use offset={} to continue.]",
            truncation.content,
            last + 1
        )
    } else if end < total {
        format!(
            "{}\n\n[{} more lines in file. Use offset={} to continue.]",
            truncation.content,
            total - end,
            end + 1
        )
    } else {
        truncation.content.clone()
    };
    let result = ToolResult::text(output);
    Ok(if truncation.truncated {
        result.with_details(json!({ "truncation": truncation.to_details() }))
    } else {
        result
    })
}

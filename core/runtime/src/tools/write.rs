//! The built-in `write` tool.

use super::open::{Access, open_argument, replace_content};
use super::{io_error, until_cancelled};
use async_trait::async_trait;
use schemars::JsonSchema;
use serde::Deserialize;
use tokio_util::sync::CancellationToken;
use volcanic_abstractions::tools::{ExecutionMode, ToolError, ToolInvocation, ToolResult, TypedTool};

/// Arguments of `write`.
#[derive(Debug, Deserialize, JsonSchema)]
#[schemars(transform = super::model_schema)]
pub struct WriteArgs {
    /// File to write: relative to the working directory, or absolute
    pub path: String,
    /// The complete new content of the file
    pub content: String,
}

/// `write {path, content}`: creates or overwrites a file, creating parent directories. Runs its
/// batch sequentially.
#[derive(Debug, Default, Clone, Copy)]
pub struct WriteTool;

#[async_trait]
impl TypedTool for WriteTool {
    type Args = WriteArgs;

    fn name(&self) -> &str {
        "write"
    }

    fn description(&self) -> &str {
        "Write content to a file: creates it if missing, replaces it completely if it exists, and \
         creates missing parent directories."
    }

    fn prompt_snippet(&self) -> Option<String> {
        Some("Create or overwrite files".to_owned())
    }

    fn prompt_guidelines(&self) -> Vec<String> {
        vec!["Use write only for new files or complete rewrites; use edit to change part of a file".to_owned()]
    }

    fn execution_mode(&self) -> ExecutionMode {
        ExecutionMode::Sequential
    }

    async fn run(
        &self,
        args: WriteArgs,
        invocation: ToolInvocation,
        cancel: CancellationToken,
    ) -> Result<ToolResult, ToolError> {
        let file = open_argument(&*invocation.ctx, &args.path, Access::Write)?;
        until_cancelled(&cancel, replace_content(file, args.content.as_bytes()))
            .await?
            .map_err(|e| io_error("write", &args.path, &e))?;
        Ok(ToolResult::text(format!(
            "Successfully wrote {} bytes to {}",
            args.content.len(),
            args.path
        )))
    }
}

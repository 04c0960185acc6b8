//! The built-in `write` tool.

use super::paths::resolve_path;
use super::{io_error, parse_args, until_cancelled};
use async_trait::async_trait;
use serde::Deserialize;
use serde_json::{Value, json};
use std::sync::{Arc, LazyLock};
use tokio_util::sync::CancellationToken;
use volcanic_abstractions::tools::{ExecutionMode, Tool, ToolError, ToolInvocation, ToolResult};

#[derive(Debug, Deserialize)]
struct WriteArgs {
    path: String,
    content: String,
}

/// `write {path, content}`: creates or overwrites a file, creating parent directories. Runs its
/// batch sequentially.
#[derive(Debug, Default, Clone, Copy)]
pub struct WriteTool;

#[async_trait]
impl Tool for WriteTool {
    fn name(&self) -> &str {
        "write"
    }

    fn description(&self) -> &str {
        "Write content to a file: creates it if missing, replaces it completely if it exists, and \
         creates missing parent directories."
    }

    fn parameters(&self) -> Arc<Value> {
        // Sent with every model request: built once per process.
        static SCHEMA: LazyLock<Arc<Value>> = LazyLock::new(|| {
            Arc::new(json!({
                "type": "object",
                "properties": {
                    "path": {"type": "string", "description": "File to write: relative to the working directory, or absolute"},
                    "content": {"type": "string", "description": "The complete new content of the file"}
                },
                "required": ["path", "content"]
            }))
        });
        SCHEMA.clone()
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

    async fn execute(
        &self,
        args: Value,
        invocation: ToolInvocation,
        cancel: CancellationToken,
    ) -> Result<ToolResult, ToolError> {
        let args: WriteArgs = parse_args(self.name(), args)?;
        let absolute = resolve_path(&invocation.ctx.cwd(), &args.path);
        let write = async {
            if let Some(parent) = absolute.parent() {
                tokio::fs::create_dir_all(parent).await?;
            }
            tokio::fs::write(&absolute, args.content.as_bytes()).await
        };
        until_cancelled(&cancel, write)
            .await?
            .map_err(|e| io_error("write", &args.path, &e))?;
        Ok(ToolResult::text(format!(
            "Successfully wrote {} bytes to {}",
            args.content.len(),
            args.path
        )))
    }
}

//! The built-in `edit` tool (pi 0.73's shape: `{path, edits: [{oldText, newText}]}`).
//!
//! Every `oldText` is matched against the ORIGINAL file and must occur exactly once; matched
//! regions must not overlap. Any failure writes nothing. Line endings (LF or CRLF) and a UTF-8
//! BOM are kept: matching happens on LF-normalised text.

use super::diff::line_diff;
use super::open::{Access, open_argument, read_to_end, replace_content};
use super::{io_error, until_cancelled};
use async_trait::async_trait;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;
use tokio_util::sync::CancellationToken;
use volcanic_abstractions::tools::{ExecutionMode, ToolError, ToolInvocation, ToolResult, TypedTool};

/// Arguments of `edit`.
#[derive(Debug, Deserialize, JsonSchema)]
#[schemars(transform = super::model_schema)]
pub struct EditArgs {
    /// File to edit: relative to the working directory, or absolute
    pub path: String,
    /// Replacements, each matched against the original file
    #[schemars(length(min = 1))]
    pub edits: Vec<Replacement>,
}

/// One replacement of `edit` (pi's field names: `oldText`, `newText`).
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(transform = super::model_schema)]
pub struct Replacement {
    /// Exact text to replace; must occur exactly once in the file
    pub old_text: String,
    /// Text to put in its place
    pub new_text: String,
}

/// `edit {path, edits: [{oldText, newText}]}`: exact, unique, non-overlapping replacements in one
/// file, all or nothing. Runs its batch sequentially.
#[derive(Debug, Default, Clone, Copy)]
pub struct EditTool;

#[async_trait]
impl TypedTool for EditTool {
    type Args = EditArgs;

    fn name(&self) -> &str {
        "edit"
    }

    fn description(&self) -> &str {
        "Edit one file by exact text replacement. Each edits[].oldText must appear exactly once in \
         the original file (whitespace and line breaks included) and must not overlap another \
         edit; all edits apply to the original file at once, or none does. Merge changes that \
         touch the same or neighbouring lines into one edit."
    }

    fn prompt_snippet(&self) -> Option<String> {
        Some("Make exact text replacements in a file, several separate ones in one call".to_owned())
    }

    fn prompt_guidelines(&self) -> Vec<String> {
        vec![
            "Use edit for precise changes; edits[].oldText must match the file exactly".to_owned(),
            "To change several places in one file, send one edit call with several entries in edits[]".to_owned(),
            "Every edits[].oldText is matched against the original file, not the result of earlier \
             edits; never send overlapping or nested edits, merge nearby changes into one"
                .to_owned(),
            "Keep oldText as short as possible while unique in the file".to_owned(),
        ]
    }

    fn execution_mode(&self) -> ExecutionMode {
        ExecutionMode::Sequential
    }

    async fn run(
        &self,
        args: EditArgs,
        invocation: ToolInvocation,
        cancel: CancellationToken,
    ) -> Result<ToolResult, ToolError> {
        let file = open_argument(&*invocation.ctx, &args.path, Access::ReadWrite)?;
        let rewrite = file.try_clone().map_err(|e| io_error("write", &args.path, &e))?;
        let bytes = until_cancelled(&cancel, read_to_end(file))
            .await?
            .map_err(|e| io_error("read", &args.path, &e))?;
        let raw = String::from_utf8(bytes).map_err(|_| {
            ToolError::msg(format!(
                "{} is not valid UTF-8 text; edit does not rewrite it (use bash for binary files)",
                args.path
            ))
        })?;
        let file = SourceText::parse(&raw);
        let (new_body, count) = apply_edits(&file.body, &args.edits, &args.path)?;
        let output = file.render(&new_body);
        until_cancelled(&cancel, replace_content(rewrite, output.as_bytes()))
            .await?
            .map_err(|e| io_error("write", &args.path, &e))?;
        let diff = line_diff(&file.body, &new_body);
        Ok(
            ToolResult::text(format!("Successfully replaced {count} block(s) in {}.", args.path)).with_details(json!({
                "diff": diff.diff,
                "firstChangedLine": diff.first_changed_line,
            })),
        )
    }
}

/// A file split into BOM, line-ending style and LF-normalised body.
struct SourceText {
    bom: bool,
    crlf: bool,
    body: String,
}

impl SourceText {
    fn parse(raw: &str) -> Self {
        let (bom, text) = match raw.strip_prefix('\u{feff}') {
            Some(rest) => (true, rest),
            None => (false, raw),
        };
        let crlf = text
            .find('\n')
            .is_some_and(|i| i > 0 && text.as_bytes()[i - 1] == b'\r');
        SourceText {
            bom,
            crlf,
            body: normalize(text),
        }
    }

    fn render(&self, body: &str) -> String {
        let body = if self.crlf {
            body.replace('\n', "\r\n")
        } else {
            body.to_owned()
        };
        if self.bom { format!("\u{feff}{body}") } else { body }
    }
}

/// Start offsets of every occurrence of `needle` in `haystack`, overlapping ones included (bytes).
fn occurrences(haystack: &str, needle: &str) -> Vec<usize> {
    let mut found = Vec::new();
    let mut from = 0;
    while let Some(at) = haystack[from..].find(needle) {
        let start = from + at;
        found.push(start);
        // Continue after the first character of this match.
        from = start + haystack[start..].chars().next().map_or(1, char::len_utf8);
    }
    found
}

fn normalize(text: &str) -> String {
    text.replace("\r\n", "\n")
}

/// Applies `edits` to `body` (LF-normalised), or explains every edit that cannot apply.
/// Returns the new body and the number of replaced blocks.
fn apply_edits(body: &str, edits: &[Replacement], path: &str) -> Result<(String, usize), ToolError> {
    let total = edits.len();
    let mut problems = Vec::new();
    let mut spans: Vec<(usize, usize, usize, String)> = Vec::new();
    for (index, edit) in edits.iter().enumerate() {
        let n = index + 1;
        let old = normalize(&edit.old_text);
        if old.is_empty() {
            problems.push(format!(
                "Edit {n} of {total}: oldText is empty; it must be text from the file."
            ));
            continue;
        }
        let found = occurrences(body, &old);
        match found.as_slice() {
            [at] => spans.push((*at, *at + old.len(), n, normalize(&edit.new_text))),
            [] => problems.push(format!(
                "Edit {n} of {total}: oldText matched 0 times in {path}. It must match exactly, \
                 including whitespace and line breaks; read the file again and retry."
            )),
            many => problems.push(format!(
                "Edit {n} of {total}: oldText matched {} times in {path}; it must match exactly \
                 once. Include more surrounding lines to make it unique.",
                many.len()
            )),
        }
    }
    spans.sort_by_key(|&(start, ..)| start);
    for pair in spans.windows(2) {
        if let [(_, end_a, a, _), (start_b, _, b, _)] = pair
            && start_b < end_a
        {
            let (first, second) = ((*a).min(*b), (*a).max(*b));
            problems.push(format!(
                "Edits {first} and {second} overlap in {path}; merge them into one edit."
            ));
        }
    }
    if !problems.is_empty() {
        problems.push(format!("Nothing was changed in {path}."));
        return Err(ToolError::msg(problems.join("\n")));
    }
    let mut out = String::with_capacity(body.len());
    let mut copied = 0;
    for (start, end, _, new_text) in &spans {
        out.push_str(&body[copied..*start]);
        out.push_str(new_text);
        copied = *end;
    }
    out.push_str(&body[copied..]);
    if out == body {
        return Err(ToolError::msg(format!(
            "No changes made to {path}: every newText equals its oldText."
        )));
    }
    Ok((out, spans.len()))
}

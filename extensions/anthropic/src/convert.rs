//! How the coding agent's own roles reach a model: as user text, worded as pi words them
//! (`packages/coding-agent/src/core/messages.ts`, `convertToLlm`).
//!
//! This file is kept identical in `volcanic-anthropic` and `volcanic-openai`
//! (`src/convert.rs`); change both.

use volcanic_abstractions::{BashExecutionMessage, SummaryMessage};

/// Lead-in of a compaction summary.
const COMPACTION_SUMMARY_PREFIX: &str = "The conversation history before this point was compacted into the following summary:\n\n<summary>\n";
/// Tail of a compaction summary.
const COMPACTION_SUMMARY_SUFFIX: &str = "\n</summary>";
/// Lead-in of a branch summary.
const BRANCH_SUMMARY_PREFIX: &str =
    "The following is a summary of a branch that this conversation came back from:\n\n<summary>\n";
/// Tail of a branch summary.
const BRANCH_SUMMARY_SUFFIX: &str = "</summary>";

/// Text standing in for an image the model cannot take.
pub(crate) const IMAGE_OMITTED: &str = "[image omitted: this model does not accept images]";

/// A user-run shell command as the model sees it; `None` when it is excluded from context.
pub(crate) fn bash_execution_text(message: &BashExecutionMessage) -> Option<String> {
    if message.exclude_from_context == Some(true) {
        return None;
    }
    let mut text = format!("Ran `{}`\n", message.command);
    if message.output.is_empty() {
        text.push_str("(no output)");
    } else {
        text.push_str("```\n");
        text.push_str(&message.output);
        text.push_str("\n```");
    }
    if message.cancelled {
        text.push_str("\n\n(command cancelled)");
    } else if let Some(code) = message.exit_code.filter(|code| *code != 0) {
        text.push_str(&format!("\n\nCommand exited with code {code}"));
    }
    if message.truncated
        && let Some(path) = &message.full_output_path
    {
        text.push_str(&format!("\n\n[Output truncated. Full output: {path}]"));
    }
    Some(text)
}

/// A compaction summary as the model sees it.
pub(crate) fn compaction_summary_text(message: &SummaryMessage) -> String {
    format!(
        "{COMPACTION_SUMMARY_PREFIX}{}{COMPACTION_SUMMARY_SUFFIX}",
        message.summary
    )
}

/// A branch summary as the model sees it.
pub(crate) fn branch_summary_text(message: &SummaryMessage) -> String {
    format!(
        "{BRANCH_SUMMARY_PREFIX}{}{BRANCH_SUMMARY_SUFFIX}",
        message.summary
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    fn bash(output: &str, exit_code: Option<i64>, cancelled: bool) -> BashExecutionMessage {
        BashExecutionMessage {
            command: "ls -a".into(),
            output: output.into(),
            exit_code,
            cancelled,
            truncated: false,
            full_output_path: None,
            timestamp: 1,
            exclude_from_context: None,
        }
    }

    #[test]
    fn bash_execution_is_worded_as_pi_words_it() {
        assert_eq!(
            bash_execution_text(&bash("a\nb", Some(0), false)).as_deref(),
            Some("Ran `ls -a`\n```\na\nb\n```")
        );
        assert_eq!(
            bash_execution_text(&bash("", Some(2), false)).as_deref(),
            Some("Ran `ls -a`\n(no output)\n\nCommand exited with code 2")
        );
        assert_eq!(
            bash_execution_text(&bash("x", None, true)).as_deref(),
            Some("Ran `ls -a`\n```\nx\n```\n\n(command cancelled)")
        );
        let mut truncated = bash("x", Some(0), false);
        truncated.truncated = true;
        truncated.full_output_path = Some("/tmp/out.txt".into());
        assert_eq!(
            bash_execution_text(&truncated).as_deref(),
            Some("Ran `ls -a`\n```\nx\n```\n\n[Output truncated. Full output: /tmp/out.txt]")
        );
        let mut excluded = bash("x", Some(0), false);
        excluded.exclude_from_context = Some(true);
        assert_eq!(bash_execution_text(&excluded), None);
    }

    #[test]
    fn summaries_are_wrapped_in_summary_tags() {
        let summary = SummaryMessage {
            summary: "did things".into(),
            tokens_before: Some(10),
            from_id: None,
            timestamp: 1,
        };
        assert_eq!(
            compaction_summary_text(&summary),
            "The conversation history before this point was compacted into the following \
             summary:\n\n<summary>\ndid things\n</summary>"
        );
        assert_eq!(
            branch_summary_text(&summary),
            "The following is a summary of a branch that this conversation came back \
             from:\n\n<summary>\ndid things</summary>"
        );
    }
}

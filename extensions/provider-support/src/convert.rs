//! Transcript conversion shared by the wire APIs: how the coding agent's own roles reach a
//! model (as user text, worded as pi words them: `packages/coding-agent/src/core/messages.ts`,
//! `convertToLlm`), tool-call ids rewritten to an API's rule, and streamed tool-call arguments
//! read back.

use serde_json::{Map, Value};
use volcanic_abstractions::{
    BashExecutionMessage, ImageContent, Model, SummaryMessage, ToolResultMessage, Usage, UserContent,
};

/// Lead-in of a compaction summary.
const COMPACTION_SUMMARY_PREFIX: &str =
    "The conversation history before this point was compacted into the following summary:\n\n<summary>\n";
/// Tail of a compaction summary.
const COMPACTION_SUMMARY_SUFFIX: &str = "\n</summary>";
/// Lead-in of a branch summary.
const BRANCH_SUMMARY_PREFIX: &str =
    "The following is a summary of a branch that this conversation came back from:\n\n<summary>\n";
/// Tail of a branch summary.
const BRANCH_SUMMARY_SUFFIX: &str = "</summary>";

/// Text standing in for an image the model cannot take.
pub const IMAGE_OMITTED: &str = "[image omitted: this model does not accept images]";

/// A tool result for the OpenAI wire APIs, whose tool messages carry text only: returns the text,
/// and appends the images to send beside it (in a user message), each made an API part by
/// `part`, to `images` when `model` takes images. An image the model cannot take becomes
/// [`IMAGE_OMITTED`] in the text; an empty result reads `(no output)`, or `(see attached image)`
/// when only images came back.
pub fn tool_result_text<P>(
    model: &Model,
    result: &ToolResultMessage,
    images: &mut Vec<P>,
    part: impl Fn(&ImageContent) -> P,
) -> String {
    let mut text = volcanic_abstractions::join_text(&result.content);
    let attached: Vec<&ImageContent> = result
        .content
        .iter()
        .filter_map(|block| match block {
            UserContent::Image(image) => Some(image),
            UserContent::Text(_) => None,
        })
        .collect();
    if !attached.is_empty() && !model.takes_images() {
        if !text.is_empty() {
            text.push('\n');
        }
        text.push_str(IMAGE_OMITTED);
        return text;
    }
    if text.is_empty() {
        text.push_str(if attached.is_empty() {
            "(no output)"
        } else {
            "(see attached image)"
        });
    }
    images.extend(attached.into_iter().map(part));
    text
}

/// The usage of one call from its token counts (`input` uncached), with the total and the cost
/// at `model`'s prices.
pub fn priced_usage(model: &Model, input: u64, output: u64, cache_read: u64, cache_write: u64) -> Usage {
    let mut usage = Usage {
        input,
        output,
        cache_read,
        cache_write,
        total_tokens: input + output + cache_read + cache_write,
        ..Usage::default()
    };
    usage.cost = model.cost_of(&usage);
    usage
}

/// A user-run shell command as the model sees it; `None` when it is excluded from context.
pub fn bash_execution_text(message: &BashExecutionMessage) -> Option<String> {
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
pub fn compaction_summary_text(message: &SummaryMessage) -> String {
    format!(
        "{COMPACTION_SUMMARY_PREFIX}{}{COMPACTION_SUMMARY_SUFFIX}",
        message.summary
    )
}

/// A branch summary as the model sees it.
pub fn branch_summary_text(message: &SummaryMessage) -> String {
    format!("{BRANCH_SUMMARY_PREFIX}{}{BRANCH_SUMMARY_SUFFIX}", message.summary)
}

/// A tool-call id rewritten to satisfy an API's rule (at most `max_len` bytes, every char
/// `allowed`): unchanged when it is non-empty and already satisfies it, else its allowed ASCII
/// characters (others become `_`, non-ASCII ones are dropped) cut to leave room for `_` and a
/// 16-hex-digit hash of the original id, so the mapping is deterministic (a call and its result
/// map alike) and distinct ids stay distinct. The result satisfies the rule when `allowed`
/// accepts `_` and ASCII hex digits.
pub fn sanitize_id(id: &str, max_len: usize, allowed: fn(char) -> bool) -> String {
    if !id.is_empty() && id.len() <= max_len && id.chars().all(allowed) {
        return id.to_owned();
    }
    let hash = format!("{:016x}", fnv1a(id.as_bytes()));
    let keep = max_len.saturating_sub(hash.len() + 1);
    let mut out: String = id
        .chars()
        .map(|c| if allowed(c) { c } else { '_' })
        .filter(char::is_ascii)
        .take(keep)
        .collect();
    out.push('_');
    out.push_str(&hash);
    out.chars().take(max_len).collect()
}

/// 64-bit FNV-1a, a stable hash for [`sanitize_id`].
fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |hash, byte| {
        (hash ^ u64::from(*byte)).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

/// Tool-call arguments from the streamed JSON text: `{}` when the text is blank, the parsed
/// value, or, when the text is not valid JSON, the raw text as a JSON string, so that
/// validating it against the tool's object schema fails with a clear "not an object" error for
/// the model to correct.
pub fn tool_arguments(raw: &str) -> Value {
    if raw.trim().is_empty() {
        return Value::Object(Map::new());
    }
    serde_json::from_str(raw).unwrap_or_else(|_| Value::String(raw.to_owned()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;
    use serde_json::json;

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

    #[test]
    fn sanitize_id_keeps_valid_ids_and_maps_others_deterministically() {
        let anthropic = |c: char| c.is_ascii_alphanumeric() || c == '_' || c == '-';
        assert_eq!(sanitize_id("toolu_01A-b", 64, anthropic), "toolu_01A-b");
        let mapped = sanitize_id("call|fc_1.2", 64, anthropic);
        assert!(mapped.starts_with("call_fc_1_2_"), "{mapped}");
        assert!(mapped.chars().all(anthropic));
        assert_eq!(mapped, sanitize_id("call|fc_1.2", 64, anthropic));
        assert_ne!(mapped, sanitize_id("call:fc_1.2", 64, anthropic));
        let long = "x".repeat(100);
        let cut = sanitize_id(&long, 40, |_| true);
        assert_eq!(cut.len(), 40);
        assert_ne!(cut, sanitize_id(&"x".repeat(101), 40, |_| true));
        let empty = sanitize_id("", 64, anthropic);
        assert!(!empty.is_empty() && empty.chars().all(anthropic));
    }

    #[test]
    fn tool_arguments_table() {
        let cases = [
            ("", json!({})),
            ("  ", json!({})),
            ("{\"a\":1}", json!({"a": 1})),
            ("{\"a\":", json!("{\"a\":")),
            ("not json", json!("not json")),
            ("[1]", json!([1])),
        ];
        for (raw, expected) in cases {
            assert_eq!(tool_arguments(raw), expected, "{raw:?}");
        }
    }
}

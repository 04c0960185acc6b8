//! A `tools/call` result as a tool result (MCP 2025-11-25, "Tools: Tool Result"): text as text,
//! images as image content, audio and embedded resources described, resource links named,
//! `structuredContent` as JSON text when no content block carries it; `isError` makes it an error
//! result the model reads.

use serde_json::Value;
use volcanic_abstractions::messages::{ImageContent, TextContent, UserContent};
use volcanic_abstractions::tools::{ToolError, ToolResult};

/// Maps a `CallToolResult` (as its wire JSON); `isError` gives [`ToolError::WithResult`].
pub fn to_tool_result(result: &Value) -> Result<ToolResult, ToolError> {
    let mut content = Vec::new();
    let mut texts = Vec::new();
    for block in result.get("content").and_then(Value::as_array).into_iter().flatten() {
        let kind = block.get("type").and_then(Value::as_str).unwrap_or_default();
        let s = |k: &str| block.get(k).and_then(Value::as_str).unwrap_or_default().to_owned();
        match kind {
            "text" => {
                texts.push(s("text"));
                content.push(text(s("text")));
            }
            "image" => content.push(UserContent::Image(ImageContent {
                data: s("data"),
                mime_type: s("mimeType"),
            })),
            "audio" => content.push(text(format!("[audio: {}, not shown]", s("mimeType")))),
            "resource_link" => content.push(text(format!(
                "[resource link: {} <{}>{}]",
                s("name"),
                s("uri"),
                block
                    .get("description")
                    .and_then(Value::as_str)
                    .map(|d| format!(": {d}"))
                    .unwrap_or_default()
            ))),
            "resource" => {
                let r = block.get("resource").cloned().unwrap_or_default();
                let uri = r.get("uri").and_then(Value::as_str).unwrap_or_default();
                match r.get("text").and_then(Value::as_str) {
                    Some(t) => content.push(text(format!("[resource <{uri}>]\n{t}"))),
                    None => content.push(text(format!(
                        "[resource <{uri}>: {} binary, not shown]",
                        r.get("mimeType").and_then(Value::as_str).unwrap_or("unknown type")
                    ))),
                }
            }
            other => content.push(text(format!("[unsupported MCP content `{other}`]"))),
        }
    }
    if let Some(structured) = result.get("structuredContent").filter(|v| !v.is_null()) {
        // Servers usually repeat it as a text block; add it only when none says the same.
        let json = structured.to_string();
        let repeated = texts
            .iter()
            .any(|t| serde_json::from_str::<Value>(t).is_ok_and(|v| &v == structured));
        if !repeated {
            content.push(text(json));
        }
    }
    let tool_result = ToolResult {
        content,
        ..ToolResult::default()
    };
    if result.get("isError").and_then(Value::as_bool) == Some(true) {
        return Err(ToolError::WithResult(tool_result));
    }
    Ok(tool_result)
}

fn text(text: String) -> UserContent {
    UserContent::Text(TextContent {
        text,
        text_signature: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn blocks_map_to_content() {
        let r = to_tool_result(&json!({"content": [
            {"type": "text", "text": "hi"},
            {"type": "image", "data": "AAAA", "mimeType": "image/png"},
            {"type": "resource_link", "uri": "file:///a", "name": "a.txt"}
        ], "structuredContent": {"n": 1}}));
        let Ok(r) = r else { panic!("{r:?}") };
        assert_eq!(r.content.len(), 4);
        assert!(matches!(&r.content[1], UserContent::Image(i) if i.mime_type == "image/png"));
        assert!(r.text_content().contains("[resource link: a.txt <file:///a>]"));
        assert!(r.text_content().contains(r#"{"n":1}"#));
    }

    #[test]
    fn is_error_becomes_an_error_result() {
        let r = to_tool_result(&json!({"content": [{"type": "text", "text": "boom"}], "isError": true}));
        assert!(matches!(r, Err(ToolError::WithResult(t)) if t.text_content() == "boom"));
    }
}

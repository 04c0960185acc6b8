//! Tool-argument validation against the tool's JSON Schema, with messages a model can act on:
//! `invalid arguments for edit: edits[0].oldText: is a required property`.

use jsonschema::error::{TypeKind, ValidationErrorKind};
use jsonschema::{ValidationError, Validator};
use serde_json::Value;

/// Longest preview of a non-object argument value in a message (characters).
const PREVIEW_CHARS: usize = 40;

/// Compiles a tool's parameter schema.
pub(crate) fn compile(schema: &Value) -> Result<Validator, String> {
    jsonschema::validator_for(schema).map_err(|e| e.to_string())
}

/// Checks `args` against `validator`; the error names every offending field.
pub(crate) fn check(tool: &str, validator: &Validator, args: &Value) -> Result<(), String> {
    if !args.is_object() {
        return Err(not_an_object(tool, args));
    }
    let problems: Vec<String> = validator.iter_errors(args).map(|e| describe(&e)).collect();
    if problems.is_empty() {
        Ok(())
    } else {
        Err(format!("invalid arguments for {tool}: {}", problems.join("; ")))
    }
}

/// The message for arguments that are not a JSON object at all (typically the raw text of
/// malformed JSON the provider could not parse).
pub(crate) fn not_an_object(tool: &str, args: &Value) -> String {
    match args {
        Value::String(raw) => {
            let preview: String = raw.chars().take(PREVIEW_CHARS).collect();
            let ellipsis = if raw.chars().count() > PREVIEW_CHARS { "..." } else { "" };
            format!(
                "invalid arguments for {tool}: expected a JSON object, got string \
                 \"{preview}{ellipsis}\" (malformed JSON from the model?)"
            )
        }
        other => {
            let shown = other.to_string();
            let preview: String = shown.chars().take(PREVIEW_CHARS).collect();
            let ellipsis = if shown.chars().count() > PREVIEW_CHARS {
                "..."
            } else {
                ""
            };
            format!(
                "invalid arguments for {tool}: expected a JSON object, got {} {preview}{ellipsis}",
                json_type(other)
            )
        }
    }
}

/// `field: message` for one validation error.
fn describe(error: &ValidationError<'_>) -> String {
    let mut field = field_name(error.instance_path().as_str());
    let message = match error.kind() {
        ValidationErrorKind::Required { property } => {
            let name = property.as_str().map_or_else(|| property.to_string(), str::to_owned);
            field = if field.is_empty() {
                name
            } else {
                format!("{field}.{name}")
            };
            "is a required property".to_owned()
        }
        ValidationErrorKind::Type { kind } => {
            let expected = match kind {
                TypeKind::Single(t) => t.to_string(),
                TypeKind::Multiple(set) => set.into_iter().map(|t| t.to_string()).collect::<Vec<_>>().join(" or "),
            };
            format!("expected {expected}, got {}", json_type(error.instance()))
        }
        _ => error.to_string(),
    };
    if field.is_empty() {
        message
    } else {
        format!("{field}: {message}")
    }
}

/// `/edits/0/oldText` → `edits[0].oldText`.
fn field_name(pointer: &str) -> String {
    let mut out = String::new();
    for segment in pointer.split('/').skip(1) {
        let segment = segment.replace("~1", "/").replace("~0", "~");
        if !segment.is_empty() && segment.bytes().all(|b| b.is_ascii_digit()) {
            out.push('[');
            out.push_str(&segment);
            out.push(']');
        } else {
            if !out.is_empty() {
                out.push('.');
            }
            out.push_str(&segment);
        }
    }
    out
}

/// The JSON type of a value, as a model would name it.
fn json_type(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

//! Questions from servers (MCP 2025-11-25, "Client Features: Elicitation", form mode): a
//! `requestedSchema` read as fields, asked through an [`Elicitor`], defaults applied to what the
//! user left out (SEP-1034: "clients SHOULD pre-populate form fields with these default values").
//!
//! The user accepts (the content), declines (an explicit "Decline") or cancels (dismissed, timed
//! out); a question that could not be put at all is an error to the server, never a refusal.

use async_trait::async_trait;
use serde_json::{Map, Value};
use std::sync::Arc;
use tokio_util::sync::CancellationToken;
use volcanic_abstractions::ui::UserInterface;

/// What a field takes (the schema's primitive types; enums in their 2025-11-25 forms).
#[derive(Debug, Clone, PartialEq)]
pub enum FieldKind {
    /// `type: string` (free text).
    Text,
    /// `type: integer`.
    Integer,
    /// `type: number`.
    Number,
    /// `type: boolean`.
    Boolean,
    /// One of these `(value, label)` (`enum` + `enumNames`, or `oneOf` of `{const, title}`).
    Choice(Vec<(String, String)>),
    /// Several of these `(value, label)` (`type: array` with `items.enum` or `items.anyOf`).
    Choices(Vec<(String, String)>),
}

/// One field of a form.
#[derive(Debug, Clone, PartialEq)]
pub struct Field {
    /// Property name (the key in the answer).
    pub name: String,
    /// What the user sees: the title, else the name, with the description.
    pub label: String,
    /// Its type.
    pub kind: FieldKind,
    /// `default` from the schema.
    pub default: Option<Value>,
    /// Listed in `required`.
    pub required: bool,
}

/// Why a schema cannot be asked.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum SchemaError {
    /// A property is not one of the primitive types the spec allows.
    #[error("field `{0}` has a type a form cannot ask (the spec allows string, number, integer, boolean, enums)")]
    Unsupported(String),
}

/// The fields of `schema` (a `requestedSchema`), in its property order.
pub fn fields(schema: &Value) -> Result<Vec<Field>, SchemaError> {
    let required: Vec<&str> = schema
        .get("required")
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let mut out = Vec::new();
    let props = schema.get("properties").and_then(Value::as_object);
    for (name, p) in props.into_iter().flatten() {
        let s = |k: &str| p.get(k).and_then(Value::as_str);
        let kind = match (s("type"), p.get("enum"), p.get("oneOf")) {
            (Some("string"), Some(Value::Array(values)), _) => {
                let names = p.get("enumNames").and_then(Value::as_array);
                FieldKind::Choice(
                    values
                        .iter()
                        .enumerate()
                        .filter_map(|(i, v)| {
                            let v = v.as_str()?.to_owned();
                            let label = names.and_then(|n| n.get(i)).and_then(Value::as_str).unwrap_or(&v);
                            Some((v.clone(), label.to_owned()))
                        })
                        .collect(),
                )
            }
            (Some("string"), _, Some(Value::Array(options))) => FieldKind::Choice(const_titles(options)),
            (Some("string"), _, _) => FieldKind::Text,
            (Some("integer"), _, _) => FieldKind::Integer,
            (Some("number"), _, _) => FieldKind::Number,
            (Some("boolean"), _, _) => FieldKind::Boolean,
            (Some("array"), _, _) => {
                let items = p.get("items");
                match (
                    items.and_then(|i| i.get("enum")).and_then(Value::as_array),
                    items.and_then(|i| i.get("anyOf")).and_then(Value::as_array),
                ) {
                    (Some(values), _) => FieldKind::Choices(
                        values
                            .iter()
                            .filter_map(Value::as_str)
                            .map(|v| (v.to_owned(), v.to_owned()))
                            .collect(),
                    ),
                    (None, Some(options)) => FieldKind::Choices(const_titles(options)),
                    _ => return Err(SchemaError::Unsupported(name.clone())),
                }
            }
            _ => return Err(SchemaError::Unsupported(name.clone())),
        };
        let mut label = s("title").unwrap_or(name).to_owned();
        if let Some(d) = s("description") {
            label = format!("{label}: {d}");
        }
        out.push(Field {
            name: name.clone(),
            label,
            kind,
            default: p.get("default").cloned(),
            required: required.contains(&name.as_str()),
        });
    }
    Ok(out)
}

fn const_titles(options: &[Value]) -> Vec<(String, String)> {
    options
        .iter()
        .filter_map(|o| {
            let v = o.get("const")?.as_str()?.to_owned();
            let t = o.get("title").and_then(Value::as_str).unwrap_or(&v).to_owned();
            Some((v, t))
        })
        .collect()
}

/// Fills every field the answer leaves out with its schema `default` (SEP-1034).
pub fn apply_defaults(fields: &[Field], content: &mut Map<String, Value>) {
    for f in fields {
        if let (false, Some(d)) = (content.contains_key(&f.name), &f.default) {
            content.insert(f.name.clone(), d.clone());
        }
    }
}

/// The user's answer to a form.
#[derive(Debug, Clone, PartialEq)]
pub enum Answer {
    /// Accepted with these values (defaults are applied afterwards).
    Accept(Map<String, Value>),
    /// Declined explicitly.
    Decline,
    /// Dismissed or timed out.
    Cancel,
}

/// A question that could not be put to the user (the text says why).
#[derive(Debug, thiserror::Error)]
#[error("could not ask the user: {0}")]
pub struct AskFailed(pub String);

/// Who answers a server's questions.
#[async_trait]
pub trait Elicitor: Send + Sync {
    /// Asks `message` from `server` with these fields.
    async fn ask(
        &self,
        server: &str,
        message: &str,
        fields: &[Field],
        cancel: CancellationToken,
    ) -> Result<Answer, AskFailed>;
}

/// Accepts every form without asking, so the defaults fill it (the conformance client; never a chat).
#[derive(Debug, Default)]
pub struct AcceptDefaults;

#[async_trait]
impl Elicitor for AcceptDefaults {
    async fn ask(&self, _: &str, _: &str, _: &[Field], _: CancellationToken) -> Result<Answer, AskFailed> {
        Ok(Answer::Accept(Map::new()))
    }
}

/// Asks through a session's [`UserInterface`]: first "Answer" or "Decline", then each field in
/// turn (enums and booleans as buttons, a default offered as a button, text as the next message).
pub struct UiElicitor(pub Arc<dyn UserInterface>);

/// The buttons of the first question.
const ANSWER: &str = "Answer";
const DECLINE: &str = "Decline";
/// The button that keeps an optional field empty.
const SKIP: &str = "Skip";
/// The button that asks for another value than the default.
const OTHER: &str = "Other value…";
/// How many unreadable answers to one field before the form counts as cancelled.
const MAX_TRIES: usize = 3;

impl UiElicitor {
    async fn select(
        &self,
        title: &str,
        options: &[String],
        cancel: &CancellationToken,
    ) -> Result<Option<String>, AskFailed> {
        self.0
            .try_select(title, options, cancel.clone())
            .await
            .map_err(|e| AskFailed(e.to_string()))
    }

    /// One field's value; `Ok(None)` = the user dismissed it, `Some(None)` inside = skipped.
    async fn field(
        &self,
        head: &str,
        f: &Field,
        cancel: &CancellationToken,
    ) -> Result<Option<Option<Value>>, AskFailed> {
        let title = format!("{head}\n\n{}{}", f.label, if f.required { "" } else { " (optional)" });
        let default = f.default.as_ref().map(show);
        let mut extra = Vec::new();
        if let Some(d) = &default {
            extra.push(format!("{d} (default)"));
        }
        if !f.required && default.is_none() {
            extra.push(SKIP.to_owned());
        }
        let pick = |options: Vec<String>, values: Vec<Value>| (options, values);
        let (options, values) = match &f.kind {
            FieldKind::Boolean => pick(
                vec!["Yes".into(), "No".into()],
                vec![Value::Bool(true), Value::Bool(false)],
            ),
            FieldKind::Choice(opts) => pick(
                opts.iter().map(|(_, l)| l.clone()).collect(),
                opts.iter().map(|(v, _)| Value::String(v.clone())).collect(),
            ),
            FieldKind::Choices(opts) => {
                let names: Vec<&str> = opts.iter().map(|(_, l)| l.as_str()).collect();
                let title = format!("{title}\nSeveral of: {} (comma-separated)", names.join(", "));
                return self.typed(&title, f, &extra, default.as_deref(), cancel).await;
            }
            FieldKind::Text | FieldKind::Integer | FieldKind::Number => {
                return self.typed(&title, f, &extra, default.as_deref(), cancel).await;
            }
        };
        let mut all = options.clone();
        all.extend(extra.iter().cloned());
        let Some(choice) = self.select(&title, &all, cancel).await? else {
            return Ok(None);
        };
        if choice == SKIP {
            return Ok(Some(None));
        }
        if let Some(i) = options.iter().position(|o| *o == choice) {
            return Ok(Some(values.get(i).cloned()));
        }
        // The default button: keep the schema's default.
        Ok(Some(f.default.clone()))
    }

    /// A typed value: the default and skip as buttons first when there are any, then text.
    async fn typed(
        &self,
        title: &str,
        f: &Field,
        extra: &[String],
        default: Option<&str>,
        cancel: &CancellationToken,
    ) -> Result<Option<Option<Value>>, AskFailed> {
        if !extra.is_empty() {
            let mut options = extra.to_vec();
            options.push(OTHER.to_owned());
            match self.select(title, &options, cancel).await? {
                None => return Ok(None),
                Some(c) if c == SKIP => return Ok(Some(None)),
                Some(c) if default.is_some_and(|d| c == format!("{d} (default)")) => {
                    return Ok(Some(f.default.clone()));
                }
                Some(_) => {}
            }
        }
        let mut prompt = title.to_owned();
        for _ in 0..MAX_TRIES {
            let answer = self
                .0
                .try_input(&prompt, None, cancel.clone())
                .await
                .map_err(|e| AskFailed(e.to_string()))?;
            let Some(text) = answer else { return Ok(None) };
            match parse(&f.kind, text.trim()) {
                Ok(v) => return Ok(Some(Some(v))),
                Err(why) => prompt = format!("{title}\n({why}; try again)"),
            }
        }
        Ok(None)
    }
}

/// A default as the user sees it.
fn show(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Bool(true) => "Yes".into(),
        Value::Bool(false) => "No".into(),
        other => other.to_string(),
    }
}

/// A typed answer as the field's JSON value, or why it is not one.
fn parse(kind: &FieldKind, text: &str) -> Result<Value, String> {
    match kind {
        FieldKind::Integer => text
            .parse::<i64>()
            .map(Value::from)
            .map_err(|_| format!("`{text}` is not a whole number")),
        FieldKind::Number => match text.parse::<f64>().ok().and_then(serde_json::Number::from_f64) {
            Some(n) => Ok(Value::Number(n)),
            None => Err(format!("`{text}` is not a number")),
        },
        FieldKind::Choices(opts) => {
            let mut out = Vec::new();
            for part in text.split(',').map(str::trim).filter(|p| !p.is_empty()) {
                match opts
                    .iter()
                    .find(|(v, l)| v.eq_ignore_ascii_case(part) || l.eq_ignore_ascii_case(part))
                {
                    Some((v, _)) => out.push(Value::String(v.clone())),
                    None => return Err(format!("`{part}` is not one of the choices")),
                }
            }
            Ok(Value::Array(out))
        }
        FieldKind::Text | FieldKind::Boolean | FieldKind::Choice(_) => Ok(Value::String(text.to_owned())),
    }
}

#[async_trait]
impl Elicitor for UiElicitor {
    async fn ask(
        &self,
        server: &str,
        message: &str,
        fields: &[Field],
        cancel: CancellationToken,
    ) -> Result<Answer, AskFailed> {
        let head = format!("MCP server `{server}` asks: {message}");
        let first = [ANSWER.to_owned(), DECLINE.to_owned()];
        match self.select(&head, &first, &cancel).await? {
            None => return Ok(Answer::Cancel),
            Some(c) if c == DECLINE => return Ok(Answer::Decline),
            Some(_) => {}
        }
        let mut content = Map::new();
        for f in fields {
            match self.field(&head, f, &cancel).await? {
                None => return Ok(Answer::Cancel),
                Some(None) => {}
                Some(Some(v)) => {
                    content.insert(f.name.clone(), v);
                }
            }
        }
        Ok(Answer::Accept(content))
    }
}

#[cfg(test)]
#[path = "elicit_tests.rs"]
mod tests;

#![allow(clippy::unwrap_used, clippy::expect_used)]

use super::*;
use async_trait::async_trait;
use pretty_assertions::assert_eq;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;
use volcanic_abstractions::tools::{ToolError, ToolInvocation, ToolResult};

struct Named(&'static str, &'static str);

#[async_trait]
impl Tool for Named {
    fn name(&self) -> &str {
        self.0
    }
    fn description(&self) -> &str {
        self.1
    }
    fn parameters(&self) -> std::sync::Arc<Value> {
        std::sync::Arc::new(json!({"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}))
    }
    async fn execute(&self, _a: Value, _i: ToolInvocation, _c: CancellationToken) -> Result<ToolResult, ToolError> {
        Ok(ToolResult::text(self.1))
    }
}

fn ext(name: &str) -> ToolSource {
    ToolSource::Extension(name.to_owned())
}

fn registry_with_builtins() -> ToolRegistry {
    let registry = ToolRegistry::new();
    for tool in builtin_tools(false) {
        registry.register(tool, ToolSource::Builtin).unwrap();
    }
    registry
}

#[test]
fn builtins_register_in_order_and_are_active() {
    let registry = registry_with_builtins();
    assert_eq!(registry.active_names(), vec!["read", "bash", "edit", "write"]);
    let names: Vec<String> = registry.specs().into_iter().map(|s| s.name).collect();
    assert_eq!(names, vec!["read", "bash", "edit", "write"]);
    assert!(builtin_tools(true).iter().any(|t| t.name() == "send"));
}

#[test]
fn extension_tool_replaces_a_builtin_in_place_and_first_extension_wins() {
    let registry = registry_with_builtins();
    registry
        .register(Arc::new(Named("bash", "ext bash")), ext("guard"))
        .unwrap();
    assert_eq!(registry.get("bash").unwrap().description(), "ext bash");
    assert_eq!(registry.source("bash"), Some(ext("guard")));
    assert_eq!(registry.active_names(), vec!["read", "bash", "edit", "write"]);

    let refused = registry.register(Arc::new(Named("bash", "other")), ext("late"));
    assert_eq!(
        refused.map_err(|e| e.to_string()),
        Err("tool `bash` from extension `late` was not registered: extension `guard` registered it first".to_owned())
    );
    assert_eq!(registry.get("bash").unwrap().description(), "ext bash");

    registry.register(Arc::new(Named("hello", "a")), ext("one")).unwrap();
    assert!(registry.register(Arc::new(Named("hello", "b")), ext("two")).is_err());
    assert!(
        registry
            .register(Arc::new(Named("hello", "c")), ToolSource::Builtin)
            .is_err()
    );
    assert_eq!(registry.get("hello").unwrap().description(), "a");
}

#[test]
fn invalid_names_are_refused() {
    let registry = ToolRegistry::new();
    assert_eq!(
        registry.register(Arc::new(Named("has space", "x")), ext("e")),
        Err(ToolRegistryError::InvalidName("has space".to_owned()))
    );
}

#[test]
fn set_active_keeps_registration_order_and_ignores_unknown_names() {
    let registry = registry_with_builtins();
    registry.set_active(["write", "nope", "read"]);
    assert_eq!(registry.active_names(), vec!["read", "write"]);
    assert_eq!(registry.active().len(), 2);
    assert_eq!(registry.all().len(), 4);
    assert!(!registry.is_active("bash"));
    assert_eq!(registry.specs().len(), 2);
}

#[test]
fn validation_names_a_missing_nested_field() {
    let registry = registry_with_builtins();
    let args = json!({"path": "a.txt", "edits": [{"newText": "x"}]});
    assert_eq!(
        registry.validate("edit", &args),
        Err("invalid arguments for edit: edits[0].oldText: is a required property".to_owned())
    );
}

#[test]
fn validation_names_a_wrong_type_and_a_missing_top_level_field() {
    let registry = registry_with_builtins();
    assert_eq!(
        registry.validate("read", &json!({"path": 5})),
        Err("invalid arguments for read: path: expected string, got number".to_owned())
    );
    assert_eq!(
        registry.validate("write", &json!({"path": "a"})),
        Err("invalid arguments for write: content: is a required property".to_owned())
    );
    assert_eq!(registry.validate("read", &json!({"path": "a", "offset": 2})), Ok(()));
}

#[test]
fn validation_explains_arguments_that_are_not_an_object() {
    let registry = registry_with_builtins();
    let raw = Value::String("{\"command\": \"ls -la /tmp && echo done with a long tail\"".to_owned());
    assert_eq!(
        registry.validate("bash", &raw),
        Err("invalid arguments for bash: expected a JSON object, got string \
             \"{\"command\": \"ls -la /tmp && echo done wi...\" (malformed JSON from the model?)"
            .to_owned())
    );
    assert_eq!(
        registry.validate("bash", &json!([1, 2])),
        Err("invalid arguments for bash: expected a JSON object, got array [1,2]".to_owned())
    );
}

#[test]
fn validation_of_an_unknown_tool_fails() {
    assert_eq!(
        ToolRegistry::new().validate("nope", &json!({})),
        Err("Tool nope not found".to_owned())
    );
}

#[test]
fn registry_is_send_sync_static() {
    fn assert_send_sync<T: Send + Sync + 'static>() {}
    assert_send_sync::<ToolRegistry>();
}

#[test]
fn builtin_schemas_come_from_their_argument_structs_with_pis_names() {
    let tools = crate::tools::builtin_tools(true);
    let schema = |name: &str| (*tools.iter().find(|t| t.name() == name).unwrap().parameters()).clone();
    let required: Vec<(&str, Value)> = tools
        .iter()
        .map(|t| (t.name(), t.parameters()["required"].clone()))
        .collect();
    assert_eq!(
        required,
        vec![
            ("read", json!(["path"])),
            ("bash", json!(["command"])),
            ("edit", json!(["path", "edits"])),
            ("write", json!(["path", "content"])),
            ("send", Value::Null),
        ]
    );
    assert_eq!(
        schema("read")["properties"]["offset"],
        json!({"description": "First line to read (1-based)", "minimum": 1, "type": "integer"})
    );
    assert_eq!(
        schema("edit")["properties"]["edits"],
        json!({
            "description": "Replacements, each matched against the original file",
            "minItems": 1,
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "oldText": {"description": "Exact text to replace; must occur exactly once in the file", "type": "string"},
                    "newText": {"description": "Text to put in its place", "type": "string"}
                },
                "required": ["oldText", "newText"]
            }
        })
    );
    assert_eq!(
        schema("bash")["properties"]["timeout"],
        json!({"description": "Timeout in seconds (default 180; 0 for none)", "minimum": 0, "type": "number"})
    );
    assert_eq!(schema("send")["properties"]["path"]["type"], json!("string"));
    // The argument structs' doc comments are not sent to the model.
    assert!(tools.iter().all(|t| t.parameters().get("description").is_none()));
}

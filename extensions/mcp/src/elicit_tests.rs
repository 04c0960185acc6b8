use super::*;
use serde_json::json;
use std::sync::Mutex;
use volcanic_abstractions::ui::NotifyLevel;

/// The schema of the conformance runner's `elicitation-sep1034-client-defaults`.
fn sep1034() -> Value {
    json!({"type": "object", "required": [], "properties": {
        "name": {"type": "string", "description": "User name", "default": "John Doe"},
        "age": {"type": "integer", "default": 30},
        "score": {"type": "number", "default": 95.5},
        "status": {"type": "string", "enum": ["active", "inactive", "pending"], "default": "active"},
        "verified": {"type": "boolean", "default": true}
    }})
}

#[test]
fn fields_read_every_primitive_and_defaults_fill_what_is_left_out() {
    let fields = fields(&sep1034()).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(fields.len(), 5);
    let status = fields
        .iter()
        .find(|f| f.name == "status")
        .unwrap_or_else(|| panic!("no status"));
    assert!(matches!(&status.kind, FieldKind::Choice(o) if o.len() == 3));
    let mut content = Map::new();
    content.insert("age".into(), json!(41));
    apply_defaults(&fields, &mut content);
    assert_eq!(
        Value::Object(content),
        json!({"name": "John Doe", "age": 41, "score": 95.5, "status": "active", "verified": true})
    );
}

#[test]
fn a_nested_object_is_refused_by_name() {
    let schema = json!({"type": "object", "properties": {"addr": {"type": "object"}}});
    assert_eq!(fields(&schema), Err(SchemaError::Unsupported("addr".into())));
}

#[test]
fn one_of_with_titles_gives_labelled_choices() {
    let schema = json!({"type": "object", "required": ["c"], "properties": {"c": {"type": "string",
        "oneOf": [{"const": "r", "title": "Red"}, {"const": "g", "title": "Green"}]}}});
    let f = &fields(&schema).unwrap_or_else(|e| panic!("{e}"))[0];
    assert!(f.required);
    assert_eq!(
        f.kind,
        FieldKind::Choice(vec![("r".into(), "Red".into()), ("g".into(), "Green".into())])
    );
}

/// A UI answering from a script, recording what it was asked.
struct Scripted {
    answers: Mutex<Vec<Option<String>>>,
    asked: Mutex<Vec<(String, Vec<String>)>>,
}

impl Scripted {
    fn new(answers: &[Option<&str>]) -> Arc<Self> {
        Arc::new(Scripted {
            answers: Mutex::new(answers.iter().rev().map(|a| a.map(str::to_owned)).collect()),
            asked: Mutex::default(),
        })
    }
    fn next(&self, title: &str, options: &[String]) -> Option<String> {
        self.asked
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push((title.to_owned(), options.to_vec()));
        self.answers.lock().unwrap_or_else(|e| e.into_inner()).pop().flatten()
    }
}

#[async_trait]
impl UserInterface for Scripted {
    async fn select(&self, title: &str, options: &[String], _: CancellationToken) -> Option<String> {
        self.next(title, options)
    }
    async fn confirm(&self, title: &str, _: &str, _: CancellationToken) -> Option<bool> {
        self.next(title, &[]).map(|a| a == "yes")
    }
    async fn input(&self, title: &str, _: Option<&str>, _: CancellationToken) -> Option<String> {
        self.next(title, &[])
    }
    async fn notify(&self, _: &str, _: NotifyLevel) {}
    async fn status(&self, _: &str, _: Option<&str>) {}
}

#[tokio::test]
async fn the_ui_asks_field_by_field_with_defaults_as_buttons() {
    let ui = Scripted::new(&[
        Some("Answer"),
        // Fields come in name order (the schema's properties are a map).
        Some("Other value…"), // age: not the default
        Some("forty"),        // unreadable: asked again
        Some("40"),
        Some("Other value…"), // name
        Some("Jane"),
        Some("95.5 (default)"), // score
        Some("pending"),        // status
        Some("Yes (default)"),  // verified
    ]);
    let fields = fields(&sep1034()).unwrap_or_else(|e| panic!("{e}"));
    let answer = UiElicitor(ui.clone())
        .ask("srv", "Who are you?", &fields, CancellationToken::new())
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let Answer::Accept(content) = answer else {
        panic!("{answer:?}")
    };
    assert_eq!(
        Value::Object(content),
        json!({"name": "Jane", "age": 40, "score": 95.5, "status": "pending", "verified": true})
    );
    let asked = ui.asked.lock().unwrap_or_else(|e| e.into_inner());
    assert!(asked[0].0.contains("MCP server `srv` asks: Who are you?"), "{asked:?}");
    assert!(asked[3].0.contains("not a whole number"), "{asked:?}");
}

#[tokio::test]
async fn decline_and_dismissal_are_told_apart() {
    let fields = fields(&sep1034()).unwrap_or_else(|e| panic!("{e}"));
    let declined = UiElicitor(Scripted::new(&[Some("Decline")]))
        .ask("s", "m", &fields, CancellationToken::new())
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(declined, Answer::Decline);
    let dismissed = UiElicitor(Scripted::new(&[Some("Answer"), None]))
        .ask("s", "m", &fields, CancellationToken::new())
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(dismissed, Answer::Cancel);
}

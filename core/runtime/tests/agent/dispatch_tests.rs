//! The dispatch rules of extensions.md: handler order, failing handlers, short-circuits,
//! two-phase activation, commands, and messages sent from commands.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support::*;
use async_trait::async_trait;
use futures::future::BoxFuture;
use pretty_assertions::assert_eq;
use serde_json::{Value, json};
use std::sync::Arc;
use tokio_util::sync::CancellationToken;
use volcanic_abstractions::events::AgentSessionEvent;
use volcanic_abstractions::extensions::events::{
    InputEvent, SessionBeforeSwitchEvent, SessionStartEvent, ToolCallEvent, TurnStartEvent,
};
use volcanic_abstractions::extensions::{
    BoxError, CommandDefinition, CommandInfo, Delivery, ExtensionApiExt, ExtensionCommandContext, ExtensionFactory,
};
use volcanic_abstractions::tools::{Tool, ToolError, ToolInvocation, ToolResult};
use volcanic_core::agent::{PromptInput, SessionError};

/// A tool that answers "ran".
struct NamedTool(&'static str);

#[async_trait]
impl Tool for NamedTool {
    fn name(&self) -> &str {
        self.0
    }
    fn description(&self) -> &str {
        "test tool"
    }
    fn parameters(&self) -> std::sync::Arc<Value> {
        std::sync::Arc::new(json!({"type": "object", "properties": {}}))
    }
    async fn execute(&self, _: Value, _: ToolInvocation, _: CancellationToken) -> Result<ToolResult, ToolError> {
        Ok(ToolResult::text("ran"))
    }
}

/// A command whose handler runs `f(args)`.
fn command(f: impl Fn(String) -> Result<(), BoxError> + Send + Sync + 'static) -> CommandDefinition {
    let f = Arc::new(f);
    CommandDefinition {
        description: "test command".into(),
        handler: Arc::new(
            move |args: String,
                  _: Arc<dyn ExtensionCommandContext>,
                  _: CancellationToken|
                  -> BoxFuture<'static, Result<(), BoxError>> {
                let r = f(args);
                Box::pin(async move { r })
            },
        ),
    }
}

fn extension_errors(h: &Harness) -> Vec<(String, String, String)> {
    h.events
        .lock()
        .unwrap()
        .iter()
        .filter_map(|e| match e {
            AgentSessionEvent::ExtensionError {
                extension,
                event,
                error,
            } => Some((extension.clone(), event.clone(), error.clone())),
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn handlers_run_in_load_order_then_registration_order() {
    let log = new_log();
    let l = log.clone();
    // ext1 registers its second handler late (from session_start): it still runs before ext2's.
    let ext1 = ext("ext1", move |api| {
        let l1 = l.clone();
        on_sync::<TurnStartEvent>(&*api, move |_, _| note(&l1, "ext1.h1"));
        let (l2, api2) = (l.clone(), api.clone());
        on_sync::<SessionStartEvent>(&*api, move |_, _| {
            let l2 = l2.clone();
            on_sync::<TurnStartEvent>(&*api2, move |_, _| note(&l2, "ext1.h2"));
            Ok(())
        });
        Ok(())
    });
    let l = log.clone();
    let ext2 = ext("ext2", move |api| {
        for h in ["h1", "h2"] {
            let l = l.clone();
            on_sync::<TurnStartEvent>(&*api, move |_, _| note(&l, format!("ext2.{h}")));
        }
        Ok(())
    });
    let h = harness(vec![FauxTurn::text("ok")], vec![ext1, ext2]).await;
    h.session.prompt(PromptInput::text("go")).await.unwrap();
    assert_eq!(logged(&log), vec!["ext1.h1", "ext1.h2", "ext2.h1", "ext2.h2"]);
}

#[tokio::test]
async fn failing_handlers_are_reported_and_later_handlers_still_run() {
    let bad = ext("bad", |api| {
        on_sync::<TurnStartEvent>(&*api, |_, _| Err("boom".into()));
        api.on::<TurnStartEvent, _>(|_, _, _| Box::pin(async { panic!("async boom") }));
        on_sync::<TurnStartEvent>(&*api, |_, _| panic!("sync boom"));
        Ok(())
    });
    let log = new_log();
    let l = log.clone();
    let good = ext("good", move |api| {
        let l = l.clone();
        on_sync::<TurnStartEvent>(&*api, move |e, _| note(&l, format!("good saw turn {}", e.turn_index)));
        Ok(())
    });
    let h = harness(vec![FauxTurn::text("ok")], vec![bad, good]).await;
    h.session.prompt(PromptInput::text("go")).await.unwrap();
    assert_eq!(logged(&log), vec!["good saw turn 0"]);
    let err = |e: &str| ("bad".to_owned(), "turn_start".to_owned(), e.to_owned());
    assert_eq!(
        extension_errors(&h),
        vec![err("boom"), err("panicked: async boom"), err("panicked: sync boom")]
    );
    // The run itself went on.
    assert_eq!(
        transcript(&h.session.messages()),
        vec![("user", "go".into()), ("assistant", "ok".into())]
    );
}

#[tokio::test]
async fn cancel_block_and_mark_handled_stop_later_handlers() {
    let stopper = ext("stopper", |api| {
        on_sync::<SessionBeforeSwitchEvent>(&*api, |e, _| {
            e.cancel();
            Ok(())
        });
        on_sync::<ToolCallEvent>(&*api, |e, _| {
            if e.input["command"].as_str().unwrap_or_default().contains("stop") {
                e.block("stopped by stopper");
            }
            Ok(())
        });
        on_sync::<InputEvent>(&*api, |e, _| {
            if e.text.starts_with("stop") {
                e.mark_handled();
            }
            Ok(())
        });
        Ok(())
    });
    let log = new_log();
    let l = log.clone();
    // Would leave a marker file and a log line for everything it sees.
    let later = ext("later", move |api| {
        let l1 = l.clone();
        on_sync::<SessionBeforeSwitchEvent>(&*api, move |_, _| note(&l1, "switch"));
        let l2 = l.clone();
        on_sync::<ToolCallEvent>(&*api, move |e, _| {
            push(&l2, format!("tool_call {}", e.tool_call_id));
            e.input = json!({"command": format!("touch later-{}", e.tool_call_id)});
            Ok(())
        });
        let l3 = l.clone();
        on_sync::<InputEvent>(&*api, move |e, _| note(&l3, format!("input {}", e.text)));
        Ok(())
    });
    let turns = vec![
        FauxTurn::calls(vec![
            ("c1", "bash", json!({"command": "touch stop-c1"})),
            ("c2", "bash", json!({"command": "touch go-c2"})),
        ]),
        FauxTurn::text("ok"),
    ];
    let h = harness(turns, vec![stopper, later]).await;
    h.session.prompt(PromptInput::text("stop right there")).await.unwrap();
    assert_eq!(h.faux.calls(), 0);
    h.session.prompt(PromptInput::text("go")).await.unwrap();
    assert!(matches!(h.session.new_session().await, Err(SessionError::Cancelled)));
    assert_eq!(logged(&log), vec!["input go", "tool_call c2"]);
    let ws = h.workspace();
    assert!(!ws.join("stop-c1").exists() && !ws.join("later-c1").exists() && !ws.join("go-c2").exists());
    assert!(ws.join("later-c2").exists());
    let results = tool_results_of(&h.session.messages());
    assert_eq!(
        results,
        vec![
            ("c1".to_owned(), true, "stopped by stopper".to_owned()),
            ("c2".to_owned(), false, "(no output)".to_owned())
        ]
    );
}

#[tokio::test]
async fn failed_activation_discards_every_registration_and_others_still_load() {
    let broken = ext("broken", |api| {
        api.register_tool(Arc::new(NamedTool("broken_tool")));
        api.register_command("broken_cmd", command(|_| Ok(())));
        on_sync::<TurnStartEvent>(&*api, |_, _| Err("the broken extension's handler ran".into()));
        Err("activation failed on purpose".into())
    });
    let log = new_log();
    let l = log.clone();
    let probe = ext("probe", move |api| {
        push(
            &l,
            format!(
                "send_message {:?}",
                api.send_message(custom("x", "early"), Delivery::FollowUp, true)
            ),
        );
        push(&l, format!("append_entry {:?}", api.append_entry("x", json!(1))));
        api.register_tool(Arc::new(NamedTool("probe_tool")));
        let (l, api2) = (l.clone(), api.clone());
        on_sync::<SessionStartEvent>(&*api, move |_, _| {
            let names: Vec<String> = api2.get_all_tools()?.into_iter().map(|t| t.name).collect();
            push(
                &l,
                format!("broken_tool listed: {}", names.iter().any(|n| n == "broken_tool")),
            );
            push(
                &l,
                format!("probe_tool listed: {}", names.iter().any(|n| n == "probe_tool")),
            );
            Ok(())
        });
        Ok(())
    });
    let h = harness(vec![FauxTurn::text("ok")], vec![broken, probe]).await;
    assert_eq!(
        h.session.extension_errors(),
        vec![("broken".to_owned(), "activation failed on purpose".to_owned())]
    );
    assert_eq!(
        logged(&log),
        vec![
            "send_message Err(NotBound(\"send_message\"))",
            "append_entry Err(NotBound(\"append_entry\"))",
            "broken_tool listed: false",
            "probe_tool listed: true",
        ]
    );
    assert!(h.session.commands().iter().all(|c| c.name != "broken_cmd"));
    assert!(matches!(
        h.session.prompt(PromptInput::text("/broken_cmd")).await,
        Ok(())
    ));
    // Not a command: it went to the model as text, with no broken tool on offer.
    let tools: Vec<String> = h.faux.context(0).tools.into_iter().map(|t| t.name).collect();
    assert!(
        tools.contains(&"probe_tool".to_owned()) && !tools.contains(&"broken_tool".to_owned()),
        "{tools:?}"
    );
    assert_eq!(
        transcript(&h.faux.context(0).messages),
        vec![("user", "/broken_cmd".into())]
    );
    assert_eq!(extension_errors(&h), vec![]);
}

fn greeter(name: &'static str, log: Log) -> ExtensionFactory {
    ext(name, move |api| {
        let l = log.clone();
        api.register_command("hello", command(move |args| note(&l, format!("{name}: {args}"))));
        Ok(())
    })
}

#[tokio::test]
async fn duplicate_commands_are_suffixed_and_run_without_a_model_call() {
    let log = new_log();
    let h = harness(
        vec![],
        vec![greeter("greeter", log.clone()), greeter("greeter2", log.clone())],
    )
    .await;
    let info = |name: &str, source: &str| CommandInfo {
        name: name.into(),
        description: "test command".into(),
        source: Some(source.into()),
    };
    assert_eq!(
        h.session.commands(),
        vec![info("hello", "greeter"), info("hello_2", "greeter2")]
    );
    h.session.prompt(PromptInput::text("/hello world")).await.unwrap();
    h.session.prompt(PromptInput::text("/hello_2 again")).await.unwrap();
    assert_eq!(logged(&log), vec!["greeter: world", "greeter2: again"]);
    assert_eq!(h.faux.calls(), 0);
    assert_eq!(h.session.messages(), vec![]);
}

#[tokio::test]
async fn follow_up_with_trigger_from_a_command_starts_a_run_when_idle() {
    let notifier = ext("notifier", |api| {
        let api2 = api.clone();
        api.register_command(
            "notify",
            command(move |args| {
                Ok(api2.send_message(custom("note", &format!("note: {args}")), Delivery::FollowUp, true)?)
            }),
        );
        Ok(())
    });
    let h = harness(vec![FauxTurn::text("noted")], vec![notifier]).await;
    h.session
        .prompt(PromptInput::text("/notify build finished"))
        .await
        .unwrap();
    eventually(|| h.event_names().contains(&"agent_settled")).await;
    assert_eq!(h.faux.calls(), 1);
    // A custom message in the provider context: providers send it with the user role.
    assert_eq!(
        transcript(&h.faux.context(0).messages),
        vec![("custom", "note: build finished".into())]
    );
    assert_eq!(
        transcript(&h.session.messages()),
        vec![("custom", "note: build finished".into()), ("assistant", "noted".into())]
    );
    assert!(h.session.is_idle());
}

#[tokio::test]
async fn a_dropped_session_frees_its_extensions() {
    use std::sync::Weak;
    use volcanic_abstractions::extensions::ExtensionApiExt;
    use volcanic_abstractions::extensions::events::TurnStartEvent;
    struct Marker;
    let marker = std::sync::Arc::new(Marker);
    let weak: Weak<Marker> = std::sync::Arc::downgrade(&marker);
    let m = std::sync::Mutex::new(Some(marker));
    let h = harness(
        vec![],
        vec![ext("holder", move |api| {
            // The handler keeps both its API and extension state alive, as real extensions do.
            let state = m.lock().unwrap().take();
            let api2 = api.clone();
            api.on::<TurnStartEvent, _>(move |_, _, _| {
                let _keep = (&state, &api2);
                Box::pin(async { Ok(()) })
            });
            Ok(())
        })],
    )
    .await;
    assert!(weak.upgrade().is_some());
    drop(h);
    eventually(|| weak.upgrade().is_none()).await;
}

/// A tool that panics.
struct PanickyTool;

#[async_trait]
impl Tool for PanickyTool {
    fn name(&self) -> &str {
        "panicky"
    }
    fn description(&self) -> &str {
        "panics"
    }
    fn parameters(&self) -> std::sync::Arc<Value> {
        std::sync::Arc::new(json!({"type": "object", "properties": {}}))
    }
    async fn execute(&self, _: Value, _: ToolInvocation, _: CancellationToken) -> Result<ToolResult, ToolError> {
        panic!("overflow in date arithmetic")
    }
}

#[tokio::test]
async fn a_panicking_tool_becomes_an_error_result_and_the_session_settles() {
    let panicky = ext("panicky", |api| {
        api.register_tool(Arc::new(PanickyTool));
        Ok(())
    });
    let h = harness(
        vec![
            FauxTurn::calls(vec![("c1", "panicky", json!({}))]),
            FauxTurn::text("sorry, the tool broke"),
        ],
        vec![panicky],
    )
    .await;
    h.session
        .prompt(PromptInput::text("go"))
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(h.session.is_idle(), "the run ended");
    let results = tool_results_of(&h.session.messages());
    assert_eq!(results.len(), 1);
    assert!(results[0].1, "an error result");
    assert!(results[0].2.contains("overflow in date arithmetic"), "{results:?}");
    h.session
        .prompt(PromptInput::text("again?"))
        .await
        .unwrap_or_else(|e| panic!("{e}"));
}

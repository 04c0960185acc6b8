//! The Events table of extensions.md: each event's mutation takes effect; notify-only events
//! fire with the right data, in the right order.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support::*;
use pretty_assertions::assert_eq;
use serde_json::json;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use volcanic_abstractions::extensions::events::*;
use volcanic_abstractions::extensions::{Delivery, ExtensionApi, ExtensionContext, ExtensionError};
use volcanic_abstractions::messages::{AssistantContent, Message, TextContent, UserContent};
use volcanic_abstractions::model::ThinkingLevel;
use volcanic_abstractions::sessions::EntryKind;
use volcanic_core::agent::{PromptInput, SessionError};

#[tokio::test]
async fn session_start_reports_startup_then_resume_and_state_survives_reopen() {
    let log = new_log();
    let l = log.clone();
    let state = ext("state", move |api| {
        let (l, api2) = (l.clone(), api.clone());
        on_sync::<SessionStartEvent>(&*api, move |e, ctx| {
            let seen: Vec<i64> = ctx
                .session()?
                .branch()
                .into_iter()
                .filter_map(|en| match en.kind {
                    EntryKind::Custom {
                        custom_type,
                        data: Some(d),
                    } if custom_type == "counter" => d["n"].as_i64(),
                    _ => None,
                })
                .collect();
            push(&l, format!("{:?} {seen:?}", e.reason));
            api2.append_entry("counter", json!({ "n": seen.len() + 1 }))?;
            Ok(())
        });
        Ok(())
    });
    let h = harness(vec![], vec![state]).await;
    let reopened = reopen(&h).await;
    assert_eq!(logged(&log), vec!["Startup []", "Resume [1]"]);
    // The custom entries never reach the model context.
    assert_eq!(reopened.messages(), vec![]);
}

#[tokio::test]
async fn session_shutdown_fires_on_dispose_and_old_api_and_ctx_turn_stale() {
    let log = new_log();
    type Kept = Arc<Mutex<Option<(Arc<dyn ExtensionApi>, Arc<dyn ExtensionContext>)>>>;
    let kept: Kept = Arc::default();
    let (l, k) = (log.clone(), kept.clone());
    let keeper = ext("keeper", move |api| {
        let (k, api2) = (k.clone(), api.clone());
        on_sync::<SessionStartEvent>(&*api, move |_, ctx| {
            *k.lock().unwrap() = Some((api2.clone(), ctx.clone()));
            Ok(())
        });
        let l = l.clone();
        on_sync::<SessionShutdownEvent>(&*api, move |_, _| {
            push(&l, "shutdown");
            Ok(())
        });
        Ok(())
    });
    let h = harness(vec![], vec![keeper]).await;
    let (api, ctx) = kept.lock().unwrap().clone().unwrap();
    assert!(ctx.session().is_ok());
    assert!(api.get_session_name().is_ok());
    h.session.dispose().await;
    assert_eq!(logged(&log), vec!["shutdown"]);
    let stale = |r: Result<(), ExtensionError>| matches!(r, Err(ExtensionError::Stale));
    assert!(stale(api.append_entry("x", json!(1))));
    assert!(stale(api.send_message(custom("x", "hi"), Delivery::FollowUp, true)));
    assert!(stale(api.set_session_name("n")));
    assert!(matches!(api.get_session_name(), Err(ExtensionError::Stale)));
    assert!(matches!(api.set_model("faux", "m1").await, Err(ExtensionError::Stale)));
    assert!(matches!(ctx.session(), Err(ExtensionError::Stale)));
}

/// Two closers at once (the idle eviction still in its sweep while the shutdown closes every
/// loaded session) close the session once: extensions hear `session_shutdown` once.
#[tokio::test]
async fn disposing_twice_at_once_shuts_the_session_down_once() {
    use volcanic_abstractions::extensions::ExtensionApiExt;
    let log = new_log();
    let l = log.clone();
    let slow = ext("slow-shutdown", move |api| {
        let l = l.clone();
        api.on::<SessionShutdownEvent, _>(move |_, _, _| {
            let l = l.clone();
            Box::pin(async move {
                tokio::task::yield_now().await;
                push(&l, "shutdown");
                Ok(())
            })
        });
        Ok(())
    });
    let h = harness(vec![], vec![slow]).await;
    tokio::join!(h.session.dispose(), h.session.dispose());
    assert_eq!(logged(&log), vec!["shutdown"]);
}

/// What a `Chats::loaded` handle does (`/stop` aborts, `/tz` and `/model fallback` set the zone
/// and the fallback list in memory after the chat's settings were saved) writes nothing to the
/// session file and starts no run, also on a session an eviction closed meanwhile: a fresh
/// session reads those settings when it loads (issue 25, the eviction window).
#[tokio::test]
async fn what_a_loaded_handle_does_on_a_closed_session_writes_nothing_and_starts_nothing() {
    let h = harness(vec![FauxTurn::text("hi")], vec![]).await;
    h.session.prompt(PromptInput::text("hello")).await.unwrap();
    let file = h.session.session_file().unwrap();
    let before = std::fs::read(&file).unwrap();
    h.session.dispose().await;
    h.session.abort();
    h.session.set_time_zone(Some(chrono_tz::Europe::Berlin));
    h.session.set_fallback_models(Some(vec!["faux/m1".into()])).unwrap();
    assert!(h.session.is_idle());
    assert_eq!(h.faux.calls(), 1);
    assert_eq!(std::fs::read(&file).unwrap(), before);
}

#[tokio::test]
async fn session_before_switch_cancel_keeps_the_file_otherwise_a_new_session_starts() {
    let log = new_log();
    let veto = Arc::new(AtomicBool::new(true));
    let (l, v) = (log.clone(), veto.clone());
    let gate = ext("gate", move |api| {
        let (l1, l2, l3, v) = (l.clone(), l.clone(), l.clone(), v.clone());
        on_sync::<SessionBeforeSwitchEvent>(&*api, move |e, _| {
            push(&l1, format!("before_switch {:?}", e.target));
            if v.load(Ordering::SeqCst) {
                e.cancel();
            }
            Ok(())
        });
        on_sync::<SessionShutdownEvent>(&*api, move |_, _| note(&l2, "shutdown"));
        on_sync::<SessionStartEvent>(&*api, move |e, _| note(&l3, format!("start {:?}", e.reason)));
        Ok(())
    });
    let h = harness(vec![], vec![gate]).await;
    let file = h.session.session_file().unwrap();
    let before = std::fs::read(&file).unwrap();
    assert!(matches!(h.session.new_session().await, Err(SessionError::Cancelled)));
    assert_eq!(h.session.session_file().unwrap(), file);
    assert_eq!(std::fs::read(&file).unwrap(), before);

    veto.store(false, Ordering::SeqCst);
    h.session.new_session().await.unwrap();
    let new_file = h.session.session_file().unwrap();
    assert_ne!(new_file, file);
    assert!(new_file.is_file());
    assert_eq!(std::fs::read(&file).unwrap(), before);
    assert_eq!(
        logged(&log),
        vec![
            "start Startup",
            "before_switch None",
            "before_switch None",
            "shutdown",
            "start New"
        ]
    );
}

#[tokio::test]
async fn session_info_changed_fires_with_the_name_set_from_session_start() {
    let log = new_log();
    let l = log.clone();
    let namer = ext("namer", move |api| {
        let api2 = api.clone();
        on_sync::<SessionStartEvent>(&*api, move |_, _| Ok(api2.set_session_name("x")?));
        let l = l.clone();
        on_sync::<SessionInfoChangedEvent>(&*api, move |e, _| note(&l, format!("{:?}", e.name)));
        Ok(())
    });
    let _h = harness(vec![], vec![namer]).await;
    eventually(|| !logged(&log).is_empty()).await;
    assert_eq!(logged(&log), vec!["Some(\"x\")"]);
}

#[tokio::test]
async fn input_rewrite_reaches_the_provider_and_mark_handled_consumes_it() {
    let rewriter = ext("rewriter", |api| {
        on_sync::<InputEvent>(&*api, |e, _| {
            if e.text.starts_with("secret") {
                e.mark_handled();
            } else {
                e.text = e.text.to_uppercase();
            }
            Ok(())
        });
        Ok(())
    });
    let h = harness(vec![FauxTurn::text("ok")], vec![rewriter]).await;
    h.session.prompt(PromptInput::text("hello")).await.unwrap();
    assert_eq!(
        transcript(&h.faux.context(0).messages),
        vec![("user", "HELLO".to_owned())]
    );
    h.session.prompt(PromptInput::text("secret plans")).await.unwrap();
    assert_eq!(h.faux.calls(), 1);
    let stored = vec![("user", "HELLO".to_owned()), ("assistant", "ok".to_owned())];
    assert_eq!(transcript(&h.session.messages()), stored);
    assert_eq!(transcript(&reopen(&h).await.messages()), stored);
}

#[tokio::test]
async fn before_agent_start_override_is_the_system_prompt() {
    let overrider = ext("overrider", |api| {
        on_sync::<BeforeAgentStartEvent>(&*api, |e, _| {
            e.system_prompt_override = Some(format!("You only answer `{}`.", e.prompt));
            Ok(())
        });
        Ok(())
    });
    let h = harness(vec![FauxTurn::text("ok")], vec![overrider]).await;
    h.session.prompt(PromptInput::text("ping")).await.unwrap();
    assert_eq!(h.faux.context(0).system_prompt, "You only answer `ping`.");
}

#[tokio::test]
async fn before_agent_start_guidelines_and_injected_messages_reach_the_provider() {
    let shaper = ext("shaper", |api| {
        on_sync::<BeforeAgentStartEvent>(&*api, |e, _| {
            e.system_prompt_options
                .guidelines
                .push("Always answer in haiku.".into());
            e.injected_messages.push(custom("note", "injected note"));
            Ok(())
        });
        Ok(())
    });
    let h = harness(vec![FauxTurn::text("ok")], vec![shaper]).await;
    h.session.prompt(PromptInput::text("hi")).await.unwrap();
    let ctx = h.faux.context(0);
    assert!(
        ctx.system_prompt.contains("Always answer in haiku."),
        "{}",
        ctx.system_prompt
    );
    assert_eq!(
        transcript(&ctx.messages),
        vec![("user", "hi".to_owned()), ("custom", "injected note".to_owned())]
    );
}

/// Records run and turn boundaries into `log`; `continue_once` requests one extra model call.
fn lifecycle_ext(log: Log, continue_once: bool) -> volcanic_abstractions::extensions::ExtensionFactory {
    ext("lifecycle", move |api| {
        let l = log.clone();
        on_sync::<AgentStartEvent>(&*api, move |_, _| note(&l, "agent_start"));
        let l = log.clone();
        on_sync::<TurnStartEvent>(&*api, move |e, _| note(&l, format!("turn_start {}", e.turn_index)));
        let (l, asked) = (log.clone(), AtomicBool::new(!continue_once));
        on_sync::<TurnEndEvent>(&*api, move |e, _| {
            push(
                &l,
                format!("turn_end {} results={}", e.turn_index, e.tool_results.len()),
            );
            if !asked.swap(true, Ordering::SeqCst) && e.tool_results.is_empty() {
                e.continue_requested = true;
            }
            Ok(())
        });
        let l = log.clone();
        on_sync::<AgentEndEvent>(&*api, move |e, _| {
            let roles: Vec<&str> = e.messages.iter().map(Message::role).collect();
            note(&l, format!("agent_end {}", roles.join(",")))
        });
        let l = log.clone();
        on_sync::<AgentSettledEvent>(&*api, move |_, _| note(&l, "agent_settled"));
        Ok(())
    })
}

#[tokio::test]
async fn run_and_turn_events_fire_in_order_for_a_run_with_one_tool_call() {
    let log = new_log();
    let turns = vec![
        FauxTurn::calls(vec![("c1", "bash", json!({"command": "echo hi"}))]),
        FauxTurn::text("done"),
    ];
    let h = harness(turns, vec![lifecycle_ext(log.clone(), false)]).await;
    h.session.prompt(PromptInput::text("go")).await.unwrap();
    assert_eq!(
        logged(&log),
        vec![
            "agent_start",
            "turn_start 0",
            "turn_end 0 results=1",
            "turn_start 1",
            "turn_end 1 results=0",
            "agent_end user,assistant,toolResult,assistant",
            "agent_settled",
        ]
    );
}

#[tokio::test]
async fn turn_end_continue_requested_forces_one_more_model_call() {
    let log = new_log();
    let h = harness(
        vec![FauxTurn::text("first"), FauxTurn::text("second")],
        vec![lifecycle_ext(log.clone(), true)],
    )
    .await;
    h.session.prompt(PromptInput::text("go")).await.unwrap();
    assert_eq!(h.faux.calls(), 2);
    assert_eq!(
        logged(&log),
        vec![
            "agent_start",
            "turn_start 0",
            "turn_end 0 results=0",
            "turn_start 1",
            "turn_end 1 results=0",
            "agent_end user,assistant,assistant",
            "agent_settled",
        ]
    );
}

#[tokio::test]
async fn context_edits_change_what_the_provider_gets_but_not_the_session() {
    let editor = ext("editor", |api| {
        on_sync::<ContextEvent>(&*api, |e, _| {
            e.messages
                .retain(|m| !matches!(m, Message::User(u) if u.content.text() == "first"));
            e.messages.push(Message::Custom(custom("ctx", "added")));
            Ok(())
        });
        Ok(())
    });
    let h = harness(vec![FauxTurn::text("ok1"), FauxTurn::text("ok2")], vec![editor]).await;
    h.session.prompt(PromptInput::text("first")).await.unwrap();
    h.session.prompt(PromptInput::text("second")).await.unwrap();
    assert_eq!(
        transcript(&h.faux.context(1).messages),
        vec![
            ("assistant", "ok1".into()),
            ("user", "second".into()),
            ("custom", "added".into())
        ]
    );
    let stored = vec![
        ("user", "first".into()),
        ("assistant", "ok1".into()),
        ("user", "second".into()),
        ("assistant", "ok2".into()),
    ];
    assert_eq!(transcript(&h.session.messages()), stored);
    assert_eq!(transcript(&reopen(&h).await.messages()), stored);
}

#[tokio::test]
async fn before_provider_request_payload_replacement_is_what_gets_sent() {
    let patcher = ext("patcher", |api| {
        on_sync::<BeforeProviderRequestEvent>(&*api, |e, _| {
            e.payload["messages"] = json!(42);
            e.payload["extra"] = json!("from extension");
            Ok(())
        });
        Ok(())
    });
    let h = harness(vec![FauxTurn::text("ok")], vec![patcher]).await;
    h.session.prompt(PromptInput::text("hi")).await.unwrap();
    let system = h.faux.context(0).system_prompt;
    let payloads = h.faux.payloads.lock().unwrap().clone();
    assert_eq!(
        payloads,
        vec![json!({"system": system, "messages": 42, "extra": "from extension"})]
    );
}

#[tokio::test]
async fn message_events_fire_in_order_and_a_same_role_replacement_is_persisted() {
    let log = new_log();
    let l = log.clone();
    let rewriter = ext("rewriter", move |api| {
        let l1 = l.clone();
        on_sync::<MessageStartEvent>(&*api, move |e, _| note(&l1, format!("start {}", e.message.role())));
        let l2 = l.clone();
        on_sync::<MessageUpdateEvent>(&*api, move |e, _| note(&l2, format!("update {}", e.message.text())));
        let l3 = l.clone();
        on_sync::<MessageEndEvent>(&*api, move |e, _| {
            push(&l3, format!("end {}", e.message.role()));
            match &mut e.message {
                Message::Assistant(a) => {
                    a.content = vec![AssistantContent::Text(TextContent {
                        text: "rewritten".into(),
                        text_signature: None,
                    })];
                }
                // A different role: ignored by the runtime.
                Message::User(_) => e.message = Message::Custom(custom("swap", "not a user message")),
                _ => {}
            }
            Ok(())
        });
        Ok(())
    });
    let h = harness(vec![FauxTurn::text("original")], vec![rewriter]).await;
    h.session.prompt(PromptInput::text("hi")).await.unwrap();
    assert_eq!(
        logged(&log),
        vec![
            "start user",
            "end user",
            "start assistant",
            "update ",
            "update original",
            "update original",
            "end assistant"
        ]
    );
    let expected = vec![("user", "hi".to_owned()), ("assistant", "rewritten".to_owned())];
    assert_eq!(transcript(&h.session.messages()), expected);
    let reopened = reopen(&h).await;
    assert_eq!(transcript(&reopened.messages()), expected);
    assert_eq!(reopened.messages(), h.session.messages());
}

#[tokio::test]
async fn tool_call_block_patch_and_failing_handler() {
    let guard = ext("guard", |api| {
        on_sync::<ToolCallEvent>(&*api, |e, _| {
            let cmd = e.input["command"].as_str().unwrap_or_default().to_owned();
            if cmd.contains("blocked") {
                e.block("no markers today");
            } else if cmd.contains("wrong") {
                e.input = json!({"command": "touch patched"});
            } else if cmd.contains("fail") {
                return Err("nope".into());
            }
            Ok(())
        });
        Ok(())
    });
    let turns = vec![
        FauxTurn::calls(vec![
            ("c1", "bash", json!({"command": "touch blocked-marker"})),
            ("c2", "bash", json!({"command": "touch wrong"})),
            ("c3", "bash", json!({"command": "touch fail-marker"})),
        ]),
        FauxTurn::text("ok"),
    ];
    let h = harness(turns, vec![guard]).await;
    h.session.prompt(PromptInput::text("go")).await.unwrap();
    let ws = h.workspace();
    assert!(!ws.join("blocked-marker").exists());
    assert!(!ws.join("wrong").exists());
    assert!(ws.join("patched").exists());
    assert!(!ws.join("fail-marker").exists());
    let results = tool_results_of(&h.faux.context(1).messages);
    assert_eq!(
        results,
        vec![
            ("c1".to_owned(), true, "no markers today".to_owned()),
            ("c2".to_owned(), false, "(no output)".to_owned()),
            (
                "c3".to_owned(),
                true,
                "Tool call blocked: extension `guard` failed: nope".to_owned()
            ),
        ]
    );
}

#[tokio::test]
async fn tool_result_edits_are_what_the_model_sees() {
    let editor = ext("editor", |api| {
        on_sync::<ToolResultEvent>(&*api, |e, _| {
            e.content = vec![UserContent::Text(TextContent {
                text: "edited by extension".into(),
                text_signature: None,
            })];
            e.is_error = true;
            e.details = Some(json!({"edited": true}));
            Ok(())
        });
        Ok(())
    });
    let turns = vec![
        FauxTurn::calls(vec![("c1", "bash", json!({"command": "echo original"}))]),
        FauxTurn::text("ok"),
    ];
    let h = harness(turns, vec![editor]).await;
    h.session.prompt(PromptInput::text("go")).await.unwrap();
    assert_eq!(
        tool_results_of(&h.faux.context(1).messages),
        vec![("c1".to_owned(), true, "edited by extension".to_owned())]
    );
    let details: Vec<_> = h
        .session
        .messages()
        .into_iter()
        .filter_map(|m| match m {
            Message::ToolResult(r) => r.details,
            _ => None,
        })
        .collect();
    assert_eq!(details, vec![json!({"edited": true})]);
}

#[tokio::test]
async fn tool_execution_events_carry_the_call_id_and_updates_fire_for_slow_output() {
    let log = new_log();
    let l = log.clone();
    let watcher = ext("watcher", move |api| {
        let l1 = l.clone();
        on_sync::<ToolExecutionStartEvent>(&*api, move |e, _| {
            note(&l1, format!("start {} {}", e.tool_call_id, e.args["command"]))
        });
        let l2 = l.clone();
        on_sync::<ToolExecutionUpdateEvent>(&*api, move |e, _| note(&l2, format!("update {}", e.tool_call_id)));
        let l3 = l.clone();
        on_sync::<ToolExecutionEndEvent>(&*api, move |e, _| {
            note(
                &l3,
                format!(
                    "end {} error={} {:?}",
                    e.tool_call_id,
                    e.is_error,
                    e.result.text_content()
                ),
            )
        });
        Ok(())
    });
    let cmd = "for i in 1 2 3; do echo $i; sleep 0.15; done";
    let h = harness(
        vec![
            FauxTurn::calls(vec![("c1", "bash", json!({"command": cmd}))]),
            FauxTurn::text("ok"),
        ],
        vec![watcher],
    )
    .await;
    h.session.prompt(PromptInput::text("go")).await.unwrap();
    // Update handlers are dispatched in the background.
    eventually(|| logged(&log).iter().any(|s| s == "update c1")).await;
    let entries = logged(&log);
    assert_eq!(entries.first().unwrap(), &format!("start c1 {}", json!(cmd)));
    let ends: Vec<&String> = entries.iter().filter(|s| s.starts_with("end")).collect();
    assert_eq!(ends, vec!["end c1 error=false \"1\\n2\\n3\""]);
    assert!(
        entries
            .iter()
            .all(|s| s.starts_with("start c1") || s == "update c1" || s.starts_with("end c1")),
        "{entries:?}"
    );
}

#[tokio::test]
async fn process_spawn_env_change_reaches_bash() {
    let env = ext("env", |api| {
        on_sync::<ProcessSpawnEvent>(&*api, |e, _| {
            e.context.env.insert("FOO".into(), "bar".into());
            Ok(())
        });
        Ok(())
    });
    let turns = vec![
        FauxTurn::calls(vec![("c1", "bash", json!({"command": "echo FOO=$FOO"}))]),
        FauxTurn::text("ok"),
    ];
    let h = harness(turns, vec![env]).await;
    h.session.prompt(PromptInput::text("go")).await.unwrap();
    assert_eq!(
        tool_results_of(&h.session.messages()),
        vec![("c1".to_owned(), false, "FOO=bar".to_owned())]
    );
}

#[tokio::test]
async fn process_spawn_failing_handler_fails_the_spawn() {
    let env = ext("env", |api| {
        on_sync::<ProcessSpawnEvent>(&*api, |_, _| Err("vault is locked".into()));
        Ok(())
    });
    let turns = vec![
        FauxTurn::calls(vec![("c1", "bash", json!({"command": "touch spawned"}))]),
        FauxTurn::text("ok"),
    ];
    let h = harness(turns, vec![env]).await;
    h.session.prompt(PromptInput::text("go")).await.unwrap();
    assert!(!h.workspace().join("spawned").exists());
    let r = tool_results_of(&h.session.messages());
    assert_eq!(r.len(), 1);
    assert!(r[0].1, "{r:?}");
    assert!(
        r[0].2.contains("process environment hook failed") && r[0].2.contains("vault is locked"),
        "{}",
        r[0].2
    );
}

#[tokio::test]
async fn model_and_thinking_level_select_fire_on_changes() {
    let log = new_log();
    let l = log.clone();
    let watcher = ext("watcher", move |api| {
        let l1 = l.clone();
        on_sync::<ModelSelectEvent>(&*api, move |e, _| {
            note(
                &l1,
                format!(
                    "model {} previous {:?}",
                    e.model.key(),
                    e.previous.as_ref().map(|m| m.key())
                ),
            )
        });
        let l2 = l.clone();
        on_sync::<ThinkingLevelSelectEvent>(&*api, move |e, _| {
            note(&l2, format!("thinking {:?} previous {:?}", e.level, e.previous))
        });
        Ok(())
    });
    let h = harness(vec![], vec![watcher]).await;
    h.session.set_model("faux/m1").await.unwrap();
    h.session.set_thinking_level(ThinkingLevel::High).await.unwrap();
    assert_eq!(
        logged(&log),
        vec!["model faux/m1 previous Some(\"faux/m1\")", "thinking High previous Off"]
    );
}

//! The `a2a` tool against the peer in each mode: send and answer, polling, status, cancel,
//! input-required answered with `task_id`, files, hops.

use super::*;
use pretty_assertions::assert_eq;
use volcanic_a2a::Action;

#[tokio::test]
async fn send_answers_in_the_dialect_the_card_offers_streaming_or_not() {
    for mode in MODES {
        for streaming in [true, false] {
            let s = setup_with(
                PeerConfig {
                    streaming,
                    ..PeerConfig::new(mode)
                },
                quick(),
            )
            .await;
            let out = s.run(send("hello there")).await.unwrap();
            assert!(out.contains("answer: hello there"), "{mode:?}: {out}");
            assert!(out.contains("state: completed"), "{out}");
            assert!(out.contains("not instructions"), "framed as untrusted: {out}");
            let expected = match (dialect(mode), streaming) {
                (Dialect::V1, true) => "SendStreamingMessage",
                (Dialect::V1, false) => "SendMessage",
                (Dialect::V03, true) => "message/stream",
                (Dialect::V03, false) => "message/send",
            };
            assert_eq!(s.peer.rpc_methods(), vec![expected.to_owned()], "{mode:?}");
            // 1.0 calls carry the version header; the agent list shows the dialect.
            let call = s.peer.requests().into_iter().find(|r| r.rpc.is_some()).unwrap();
            assert_eq!(call.header("a2a-version").is_some(), dialect(mode) == Dialect::V1);
            let agents = s.run(args(Action::Agents)).await.unwrap();
            assert!(
                agents.contains(dialect(mode).label()) && agents.contains("skill echo"),
                "{agents}"
            );
        }
    }
}

#[tokio::test]
async fn a_task_still_running_is_polled_until_it_completes() {
    for mode in MODES {
        let s = setup_with(
            PeerConfig {
                streaming: false,
                ..PeerConfig::new(mode)
            },
            quick(),
        )
        .await;
        let out = s.run(send("run 1 the numbers")).await.unwrap();
        assert!(out.contains("done: run 1 the numbers"), "{mode:?}: {out}");
        let methods = s.peer.rpc_methods();
        assert!(
            methods.len() >= 2 && methods[1..].iter().all(|m| m == "GetTask" || m == "tasks/get"),
            "{methods:?}"
        );
    }
}

#[tokio::test]
async fn a_stream_that_ends_before_a_final_state_falls_back_to_polling() {
    for mode in MODES {
        let s = setup_with(
            PeerConfig {
                cut_streams: true,
                ..PeerConfig::new(mode)
            },
            quick(),
        )
        .await;
        let out = s.run(send("run 1 the report")).await.unwrap();
        assert!(out.contains("done: run 1 the report"), "{mode:?}: {out}");
        let methods = s.peer.rpc_methods();
        assert!(methods[0].contains("tream") && methods.len() >= 2, "{methods:?}");
    }
}

#[tokio::test]
async fn a_streamed_task_that_outlives_the_wait_is_reported_then_status_and_cancel_work() {
    for mode in MODES {
        for streaming in [true, false] {
            let settings = A2aSettings {
                send_wait: Duration::from_millis(600),
                ..A2aSettings::default()
            };
            let s = setup_with(
                PeerConfig {
                    streaming,
                    ..PeerConfig::new(mode)
                },
                settings,
            )
            .await;
            let out = s.run(send("run 30 slowly")).await.unwrap();
            let id = field(&out, "task_id");
            assert!(out.contains("still working") && out.contains("action status"), "{out}");
            let status = s
                .run(A2aArgs {
                    task_id: Some(id.clone()),
                    ..args(Action::Status)
                })
                .await
                .unwrap();
            assert_eq!(field(&status, "state"), "working", "{status}");
            assert!(status.contains("run 30 slowly"), "history tail: {status}");
            let canceled = s
                .run(A2aArgs {
                    task_id: Some(id.clone()),
                    ..args(Action::Cancel)
                })
                .await
                .unwrap();
            assert_eq!(field(&canceled, "state"), "canceled", "{canceled}");
            let again = s
                .run(A2aArgs {
                    task_id: Some(id.clone()),
                    ..args(Action::Cancel)
                })
                .await
                .unwrap_err();
            assert!(
                again.contains("-32002") && again.contains("TaskNotCancelable"),
                "{again}"
            );
            let unknown = s
                .run(A2aArgs {
                    task_id: Some("nope".into()),
                    ..args(Action::Status)
                })
                .await
                .unwrap_err();
            assert!(unknown.contains("-32001 (TaskNotFound)"), "{unknown}");
        }
    }
}

#[tokio::test]
async fn input_required_is_answered_with_the_task_id() {
    for mode in MODES {
        for streaming in [true, false] {
            let s = setup_with(
                PeerConfig {
                    streaming,
                    ..PeerConfig::new(mode)
                },
                quick(),
            )
            .await;
            let out = s.run(send("ask for a city")).await.unwrap();
            assert_eq!(field(&out, "state"), "input-required", "{mode:?}: {out}");
            assert!(out.contains("which one?") && out.contains("task_id"), "{out}");
            let id = field(&out, "task_id");
            let ctx = field(&out, "context_id");
            let answer = A2aArgs {
                task_id: Some(id.clone()),
                context_id: Some(ctx),
                ..send("Paris")
            };
            let out = s.run(answer).await.unwrap();
            assert!(
                out.contains("thanks: Paris") && out.contains("state: completed"),
                "{out}"
            );
            assert_eq!(field(&out, "task_id"), id);
        }
    }
}

#[tokio::test]
async fn files_go_as_parts_and_come_back_into_the_inbox_data_as_json_hops_counted() {
    for mode in MODES {
        let s = setup(mode).await;
        std::fs::write(s.ws().join("notes.txt"), "twelve bytes").unwrap();
        s.hop.store(1, std::sync::atomic::Ordering::Relaxed);
        let out = s
            .run(A2aArgs {
                files: Some(vec!["notes.txt".into()]),
                ..send("echo this")
            })
            .await
            .unwrap();
        assert!(out.contains("got file notes.txt (12 bytes)"), "{mode:?}: {out}");
        assert!(
            out.contains(r#"[data] {"hop":2}"#),
            "the hop goes out as inbound + 1: {out}"
        );
        let saved = out
            .lines()
            .find_map(|l| l.strip_prefix("[file saved: "))
            .and_then(|l| l.split(' ').next())
            .unwrap_or_else(|| panic!("no saved file in {out}"));
        assert!(
            saved.starts_with("a2a/inbox/") && saved.ends_with("echo.txt"),
            "{saved}"
        );
        assert_eq!(std::fs::read_to_string(s.ws().join(saved)).unwrap(), "echo this");
        // Outside the workspace: refused before anything is sent.
        let e = s
            .run(A2aArgs {
                files: Some(vec!["../../etc/hostname".into()]),
                ..send("echo")
            })
            .await
            .unwrap_err();
        assert!(e.contains("outside the workspace") || e.contains("No such file"), "{e}");
        let (fail, direct) = (
            s.run(send("fail now")).await.unwrap(),
            s.run(send("message hi")).await.unwrap(),
        );
        assert!(
            fail.contains("state: failed") && fail.contains("failed on purpose"),
            "{fail}"
        );
        assert!(direct.contains("direct: hi"), "{direct}");
    }
}

#[tokio::test]
async fn beyond_max_hops_a_send_is_refused_and_nothing_is_sent() {
    let s = setup(PeerMode::V1Only).await;
    s.hop.store(3, std::sync::atomic::Ordering::Relaxed);
    let e = s.run(send("hello")).await.unwrap_err();
    assert!(e.contains("hop 4") && e.contains("max_hops = 3"), "{e}");
    assert!(s.peer.rpc_methods().is_empty());
}

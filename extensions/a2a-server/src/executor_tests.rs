//! The executor seam through the router: a cancel reaching a task that waits for input,
//! follow-ups, per-task limits, questions that die with the process, one task per context.

use super::*;

/// Asks a question, then waits for the task's cancel token past the turn's end; takes
/// follow-ups and records them.
#[derive(Default)]
struct Asker {
    seen_cancel: Arc<tokio::sync::Notify>,
    follow_ups: Arc<std::sync::Mutex<Vec<String>>>,
}

#[async_trait]
impl Executor for Asker {
    async fn execute(&self, req: ExecRequest, ev: TaskEvents) {
        if req.message.text() == Some("work") {
            ev.status(TaskState::Working, None).await;
            req.cancel.cancelled().await;
            return;
        }
        ev.status(TaskState::InputRequired, Some("Which one?")).await;
        let seen = self.seen_cancel.clone();
        tokio::spawn(async move {
            req.cancel.cancelled().await;
            seen.notify_one();
        });
    }

    fn takes_follow_ups(&self) -> bool {
        true
    }

    async fn follow_up(&self, req: ExecRequest, _ev: TaskEvents) {
        let text = req.message.text().unwrap_or_default().to_owned();
        self.follow_ups.lock().unwrap_or_else(|e| e.into_inner()).push(text);
    }
}

fn send_to(task: &str, text: &str) -> Value {
    with_message(send_later(text), json!({"taskId": task}))
}

#[tokio::test]
async fn cancelling_a_task_that_waits_for_input_reaches_its_executor() {
    let asker = Arc::new(Asker::default());
    let server = A2aServer::new(config(None), asker.clone()).unwrap_or_else(|e| panic!("{e}"));
    let b = rpc_as(&server, ALICE, send("ask me")).await;
    assert_eq!(
        b["result"]["task"]["status"]["state"], "TASK_STATE_INPUT_REQUIRED",
        "{b}"
    );
    let id = b["result"]["task"]["id"].as_str().unwrap_or_default().to_owned();
    let seen = asker.seen_cancel.notified();
    let b = rpc_as(&server, ALICE, rpc("CancelTask", json!({"id": id}))).await;
    assert_eq!(b["result"]["status"]["state"], "TASK_STATE_CANCELED", "{b}");
    tokio::time::timeout(std::time::Duration::from_secs(5), seen)
        .await
        .unwrap_or_else(|_| panic!("the executor's token was not cancelled"));
}

#[tokio::test]
async fn a_message_to_a_working_task_is_a_follow_up_when_the_executor_takes_them() {
    let asker = Arc::new(Asker::default());
    let server = A2aServer::new(config(None), asker.clone()).unwrap_or_else(|e| panic!("{e}"));
    let b = rpc_as(&server, ALICE, send_later("work")).await;
    let id = b["result"]["task"]["id"].as_str().unwrap_or_default().to_owned();
    assert!(!id.is_empty(), "{b}");
    let b = rpc_as(&server, ALICE, send_to(&id, "and also this")).await;
    assert_eq!(b["result"]["task"]["id"], id.as_str(), "{b}");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
    while asker.follow_ups.lock().unwrap_or_else(|e| e.into_inner()).is_empty() {
        assert!(
            std::time::Instant::now() < deadline,
            "no follow-up reached the executor"
        );
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    assert_eq!(
        *asker.follow_ups.lock().unwrap_or_else(|e| e.into_inner()),
        vec!["and also this"]
    );
    // The Echo executor takes none: the same message is refused.
    let echo = A2aServer::new(config(None), Arc::new(Echo)).unwrap_or_else(|e| panic!("{e}"));
    let b = rpc_as(&echo, ALICE, send_later("slow")).await;
    let id = b["result"]["task"]["id"].as_str().unwrap_or_default().to_owned();
    let b = rpc_as(&echo, ALICE, send_to(&id, "more")).await;
    assert_eq!(b["error"]["code"], -32004, "{b}");
}

#[tokio::test]
async fn push_configs_and_follow_ups_per_task_are_bounded() {
    let mut cfg = config(None);
    cfg.allow_loopback_push = true;
    cfg.limits.max_push_configs = 1;
    cfg.limits.max_follow_ups = 1;
    let asker = Arc::new(Asker::default());
    let server = A2aServer::new(cfg, asker.clone()).unwrap_or_else(|e| panic!("{e}"));
    let b = rpc_as(&server, ALICE, send_later("work")).await;
    let id = b["result"]["task"]["id"].as_str().unwrap_or_default().to_owned();
    let push = |n: &str| {
        rpc(
            "CreateTaskPushNotificationConfig",
            json!({"taskId": id, "id": n, "url": "http://127.0.0.1:9/hook"}),
        )
    };
    let b = rpc_as(&server, ALICE, push("p1")).await;
    assert_eq!(b["result"]["id"], "p1", "{b}");
    // Replacing the same id is fine; a second one is over the limit.
    let b = rpc_as(&server, ALICE, push("p1")).await;
    assert_eq!(b["result"]["id"], "p1", "{b}");
    let b = rpc_as(&server, ALICE, push("p2")).await;
    assert!(
        b["error"]["message"]
            .as_str()
            .unwrap_or_default()
            .contains("push configs (limit 1)"),
        "{b}"
    );
    let b = rpc_as(&server, ALICE, send_to(&id, "one")).await;
    assert_eq!(b["result"]["task"]["id"], id.as_str(), "{b}");
    let b = rpc_as(&server, ALICE, send_to(&id, "two")).await;
    assert!(
        b["error"]["message"]
            .as_str()
            .unwrap_or_default()
            .contains("queued behind its work (limit 1)"),
        "{b}"
    );
}

/// [`Asker`] with the executor's switches set: questions that die with the process, one
/// unfinished task per context.
#[derive(Default)]
struct Switched {
    asker: Asker,
    questions_die: bool,
    single: bool,
}

#[async_trait]
impl Executor for Switched {
    async fn execute(&self, req: ExecRequest, ev: TaskEvents) {
        self.asker.execute(req, ev).await;
    }

    fn questions_survive_restart(&self) -> bool {
        !self.questions_die
    }

    fn one_task_per_context(&self) -> bool {
        self.single
    }
}

#[tokio::test]
async fn a_question_that_dies_with_the_process_fails_its_task_after_a_restart() {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let start = |survive: bool| {
        let executor = Arc::new(Switched {
            questions_die: !survive,
            ..Switched::default()
        });
        A2aServer::new(config(Some(dir.path().into())), executor).unwrap_or_else(|e| panic!("{e}"))
    };
    let server = start(true);
    let b = rpc_as(&server, ALICE, send("ask me")).await;
    let id = b["result"]["task"]["id"].as_str().unwrap_or_default().to_owned();
    drop(server);
    let get = rpc("GetTask", json!({"id": id}));
    // An executor whose questions survive keeps the task waiting...
    let (_, b, _) = call(&start(true), Some(ALICE), "application/json", get.clone()).await;
    assert_eq!(b["result"]["status"]["state"], "TASK_STATE_INPUT_REQUIRED", "{b}");
    // ...one whose questions die with it fails it, saying so.
    let (_, b, _) = call(&start(false), Some(ALICE), "application/json", get).await;
    assert_eq!(b["result"]["status"]["state"], "TASK_STATE_FAILED", "{b}");
    assert_eq!(b["result"]["status"]["message"]["parts"][0]["text"], QUESTION_LOST);
}

#[tokio::test]
async fn one_unfinished_task_per_context_when_the_executor_says_so() {
    let single = Arc::new(Switched {
        single: true,
        ..Switched::default()
    });
    let server = A2aServer::new(config(None), single).unwrap_or_else(|e| panic!("{e}"));
    let in_context = |text: &str, ctx: &str| with_message(send_later(text), json!({"contextId": ctx}));
    let b = rpc_as(&server, ALICE, in_context("work", "c1")).await;
    let id = b["result"]["task"]["id"].as_str().unwrap_or_default().to_owned();
    let b = rpc_as(&server, ALICE, in_context("more", "c1")).await;
    assert_eq!(b["error"]["code"], -32004, "{b}");
    assert!(
        b["error"]["message"]
            .as_str()
            .unwrap_or_default()
            .contains(&format!("busy with task {id}")),
        "{b}"
    );
    // Another context, or another caller's context of the same name, is free.
    let b = rpc_as(&server, ALICE, in_context("work", "c2")).await;
    assert!(b["result"]["task"]["id"].is_string(), "{b}");
    let b = rpc_as(&server, BOB, in_context("work", "c1")).await;
    assert!(b["result"]["task"]["id"].is_string(), "{b}");
    // A task waiting for input keeps its context busy too.
    let ask = rpc(
        "SendMessage",
        json!({"message": {"role": "ROLE_USER", "messageId": "m-ask", "contextId": "c3", "parts": [{"text": "ask"}]}}),
    );
    let b = rpc_as(&server, ALICE, ask).await;
    assert_eq!(
        b["result"]["task"]["status"]["state"], "TASK_STATE_INPUT_REQUIRED",
        "{b}"
    );
    let b = rpc_as(&server, ALICE, in_context("again", "c3")).await;
    assert_eq!(b["error"]["code"], -32004, "{b}");
}

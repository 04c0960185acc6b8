//! The A2A server through the real binary (`[a2a.server]`): the pinned Python a2a-sdk client
//! drives it in 1.0 and 0.3 (`tests/peers/a2a_bot_client.py`); a caller without `bash` in its
//! tools cannot run it, nor read outside its workspace; and one bot's chat agent asks another
//! bot process's agent, which knows it serves an agent (its own onward message would pass
//! `max_hops`) and, without the test switch, refuses a push target on loopback.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support::*;
use serde_json::json;
use std::time::Duration;
use volcanic_testkit::bot_api::{BotApiServer, updates};
use volcanic_testkit::model_server::{ModelServer, Said, Transcript, Turn};
use volcanic_testkit::testdeps;

const ALICE: &str = "alice-token-0123456789abcdef";
const BOB: &str = "bob-token-0123456789abcdefgh";
const CAROL: &str = "carol-token-0123456789abcdef";

/// `[http]` on `port` and `[a2a.server]` with the callers alice (every tool) and bob (the
/// default tools), push to loopback allowed (the test's receiver listens there).
fn server_config(tg: &BotApiServer, port: u16) -> String {
    format!(
        "{}{}[a2a.server]\nname = \"Test assistant\"\nallow_loopback_push = true\nidle_minutes = 0.01\n\
         [[a2a.server.skills]]\nid = \"echo\"\nname = \"Echo\"\ndescription = \"Says it back\"\n\
         [[a2a.server.callers]]\nname = \"alice\"\ntoken_env = \"E2E_ALICE\"\ntools = [\"*\"]\n\
         [[a2a.server.callers]]\nname = \"bob\"\ntoken_env = \"E2E_BOB\"\n\
         [[a2a.server.callers]]\nname = \"carol\"\ntoken_env = \"E2E_CAROL\"\nchat = {OWNER}\n",
        telegram_config(tg, ""),
        http_section(port)
    )
}

/// The last line of the caller's message (after the bot's "A2A message from" header).
fn said(text: &str) -> &str {
    text.lines().last().unwrap_or(text).trim()
}

/// The text of the last tool result in a request.
fn last_result(t: &Transcript) -> String {
    t.entries()
        .iter()
        .rev()
        .find_map(|s| match s {
            Said::ToolResult { text, .. } => Some(text.clone()),
            _ => None,
        })
        .unwrap_or_default()
}

fn echo_model(model: &ModelServer) {
    model.set_responder(|api, body| {
        let t = Transcript::of(api, body);
        let asked = said(t.last_user_text()?).to_owned();
        if t.ends_with_tool_result() {
            return Some(Turn::reply(if asked == "clean up" {
                "Cleaned up.".to_owned()
            } else {
                format!(
                    "echo: used a tool ({})",
                    last_result(&t).chars().take(200).collect::<String>()
                )
            }));
        }
        Some(match asked.as_str() {
            "slow" => Turn::reply("too late").delay(Duration::from_secs(60)),
            "hold on" => Turn::reply("first part").delay(Duration::from_secs(3)),
            "clean up" => Turn::call("call_rm", "bash", json!({"command": "rm -rf ./scratch-a2a"})),
            "run a command" => Turn::call("call_sh", "bash", json!({"command": "echo ran"})),
            "read outside" => Turn::call("call_ro", "read", json!({"path": "../../volcanic.toml"})),
            a if a.starts_with("use a tool") => Turn::call("call_rd", "read", json!({"path": "notes.txt"})),
            a => Turn::reply(format!("echo: {a}")),
        })
    });
}

/// A bot serving A2A with [`server_config`], its model answering as [`echo_model`], started
/// and its card served.
struct ServerBot {
    model: ModelServer,
    tg: BotApiServer,
    env: Env,
    bot: BotProcess,
    /// Its base URL.
    base: String,
}

impl ServerBot {
    async fn start() -> ServerBot {
        let model = ModelServer::start().await.unwrap();
        echo_model(&model);
        let tg = BotApiServer::start(TOKEN).await.unwrap();
        let port = free_port();
        let env = Env::new(&model.url(), &server_config(&tg, port));
        let bot = start_server_bot(&env);
        let base = format!("http://127.0.0.1:{port}");
        wait_card(&base, &bot).await;
        ServerBot {
            model,
            tg,
            env,
            bot,
            base,
        }
    }
}

fn start_server_bot(env: &Env) -> BotProcess {
    BotProcess::start_with(
        env,
        TOKEN,
        Some("info"),
        &[("E2E_ALICE", ALICE), ("E2E_BOB", BOB), ("E2E_CAROL", CAROL)],
    )
}

/// Waits until `url` answers the card.
pub(crate) async fn wait_card(url: &str, bot: &BotProcess) {
    let client = http_client();
    let deadline = std::time::Instant::now() + T;
    loop {
        if let Ok(r) = client.get(format!("{url}/.well-known/agent-card.json")).send().await
            && r.status().is_success()
        {
            return;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "no card at {url}\nbot log:\n{}",
            bot.log()
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_python_a2a_sdk_client_drives_the_bot_in_both_dialects() {
    let python = testdeps::python().unwrap_or_else(|e| panic!("{e}"));
    let ServerBot {
        model: _model,
        tg: _tg,
        env,
        bot,
        base,
    } = ServerBot::start().await;
    // Bob's task runs all along while alice's client works.
    let bobs = rpc(&base, BOB, "SendMessage", send("slow", json!({}), true)).await["result"]["task"]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let script = testdeps::repo_root().join("tests/peers/a2a_bot_client.py");
    for dialect in ["1.0", "0.3"] {
        let (python, script, base) = (python.clone(), script.clone(), base.clone());
        let out = tokio::task::spawn_blocking(move || {
            std::process::Command::new(python)
                .arg(&script)
                .args([base.as_str(), ALICE, BOB, dialect])
                .output()
        })
        .await
        .unwrap()
        .unwrap_or_else(|e| panic!("cannot run the a2a-sdk client: {e}"));
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "a2a-sdk client ({dialect}) failed:\n{stdout}\n{}\nbot log:\n{}",
            String::from_utf8_lossy(&out.stderr),
            bot.log()
        );
        let mut steps = vec![
            "blocking send",
            "streaming send",
            "get",
            "busy context",
            "resubscribe",
            "cancel",
            "input-required",
            "push",
            "isolation",
            "wrong token",
        ];
        if dialect == "1.0" {
            steps.push("list");
        }
        for step in steps {
            assert!(
                stdout.contains(&format!("ok {step}\n")),
                "{dialect}: no `ok {step}`:\n{stdout}"
            );
        }
    }
    // Alice cannot see, cancel or subscribe to bob's running task; bob can.
    for method in ["GetTask", "CancelTask", "SubscribeToTask"] {
        let r = rpc(&base, ALICE, method, json!({"id": bobs})).await;
        assert_eq!(r["error"]["code"], -32001, "{method}: {r}");
    }
    assert_eq!(
        rpc(&base, BOB, "GetTask", json!({"id": bobs})).await["result"]["status"]["state"],
        "TASK_STATE_WORKING"
    );
    assert_eq!(
        rpc(&base, BOB, "CancelTask", json!({"id": bobs})).await["result"]["status"]["state"],
        "TASK_STATE_CANCELED"
    );
    // The caller's files stay in its own workspace and state; its token never reached the log.
    assert!(env.dir.path().join("workspaces/a2a-alice").is_dir());
    let tasks = std::fs::read_dir(env.dir.path().join("data/a2a/alice/tasks"))
        .unwrap()
        .count();
    assert!(tasks >= 8, "alice's task store holds {tasks} tasks");
    let bob_tasks = std::fs::read_dir(env.dir.path().join("data/a2a/bob/tasks"))
        .unwrap()
        .count();
    assert_eq!(bob_tasks, 1, "bob's store holds his one task");
    assert!(!bot.log().contains(ALICE));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_caller_without_bash_cannot_run_it_and_the_model_is_not_offered_it() {
    let ServerBot {
        model,
        tg: _tg,
        env,
        bot,
        base,
    } = ServerBot::start().await;
    let r = rpc(&base, BOB, "SendMessage", send("run a command", json!({}), false)).await;
    assert_eq!(
        r["result"]["task"]["status"]["state"],
        "TASK_STATE_COMPLETED",
        "{r}\n{}",
        bot.log()
    );
    let answer = r["result"]["task"]["artifacts"][0]["parts"][0]["text"]
        .as_str()
        .unwrap_or_default();
    // Not active for bob's session, so the runtime refuses the call before any handler runs.
    assert!(answer.contains("Tool `bash` not found"), "{answer}");
    let requests = model.requests();
    let tools = requests[0].body["tools"].to_string();
    for denied in ["\"bash\"", "\"write\"", "\"edit\""] {
        assert!(!tools.contains(denied), "{denied} offered to bob: {tools}");
    }
    assert!(tools.contains("\"read\""), "{tools}");
    let system = requests[0].body["system"].to_string();
    assert!(
        system.contains("answering another agent") && !system.contains("- bash"),
        "{system}"
    );
    assert!(conversation(&requests[0]).contains("A2A message from the agent `bob`"));
    // `read` reaches only the caller's own workspace (here: the bot's config, two folders up).
    let r = rpc(&base, BOB, "SendMessage", send("read outside", json!({}), false)).await;
    let answer = r["result"]["task"]["artifacts"][0]["parts"][0]["text"]
        .as_str()
        .unwrap_or_default();
    assert!(answer.contains("outside this caller's workspace"), "{r}");
    assert!(!answer.contains("telegram"), "{answer}");

    // Durable: a task settled before a kill answers after the restart; one working at the
    // kill is failed, saying so.
    let done = r["result"]["task"]["id"].as_str().unwrap().to_owned();
    let r = rpc(&base, BOB, "SendMessage", send("slow", json!({}), true)).await;
    let working = r["result"]["task"]["id"].as_str().unwrap().to_owned();
    model.wait_for_request_count(5, T).await.unwrap();
    bot.kill9();
    let bot = start_server_bot(&env);
    wait_card(&base, &bot).await;
    let r = rpc(&base, BOB, "GetTask", json!({"id": done})).await;
    assert_eq!(r["result"]["status"]["state"], "TASK_STATE_COMPLETED", "{r}");
    let r = rpc(&base, BOB, "GetTask", json!({"id": working})).await;
    assert_eq!(r["result"]["status"]["state"], "TASK_STATE_FAILED", "{r}");
    assert!(r.to_string().contains("did not finish"), "{r}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_caller_acting_for_a_chat_keeps_its_context_and_queues_a_follow_up() {
    let ServerBot {
        model,
        tg,
        env: _env,
        bot,
        base,
    } = ServerBot::start().await;
    tg.push_update(updates::text_message(OWNER, OWNER, "/tz Asia/Tokyo"));
    wait_text(&tg, OWNER, "Time zone: Asia/Tokyo", &bot).await;
    let ask = |text: &str, extra: serde_json::Value| {
        let params = send(text, extra, text == "hold on");
        let base = base.clone();
        async move { rpc(&base, CAROL, "SendMessage", params).await }
    };
    let r = ask("hello one", json!({"contextId": "ctx-1"})).await;
    assert_eq!(r["result"]["task"]["status"]["state"], "TASK_STATE_COMPLETED", "{r}");
    // The chat's zone and its scheduler come with the chat it acts for.
    let first = model.requests().pop().unwrap();
    assert!(first.body.to_string().contains("Asia/Tokyo"), "{}", first.body);
    assert!(first.body["tools"].to_string().contains("\"schedule\""));
    let r = ask("hello two", json!({"contextId": "ctx-1"})).await;
    assert_eq!(
        r["result"]["task"]["artifacts"][0]["parts"][0]["text"], "echo: hello two",
        "{r}"
    );
    let second = model.requests().pop().unwrap();
    assert!(conversation(&second).contains("hello one"), "one session per context");
    // Evicted after idling (0.6 s here), the context's session is resumed from its file.
    eventually("the idle context's session evicted", &bot, || {
        bot.log().contains("A2A context session evicted")
    })
    .await;
    let r = ask("hello three", json!({"contextId": "ctx-1"})).await;
    assert_eq!(r["result"]["task"]["status"]["state"], "TASK_STATE_COMPLETED", "{r}");
    let third = model.requests().pop().unwrap();
    assert!(
        conversation(&third).contains("hello two"),
        "resumed from the session file"
    );

    // A message carrying a working task's id is queued behind its run; the answer has both.
    let r = ask("hold on", json!({})).await;
    let task = r["result"]["task"]["id"].as_str().unwrap().to_owned();
    let r = ask("and this", json!({"taskId": task})).await;
    assert_eq!(r["result"]["task"]["id"], task.as_str(), "{r}");
    let deadline = std::time::Instant::now() + T;
    let done = loop {
        let r = rpc(&base, CAROL, "GetTask", json!({"id": task})).await;
        if r["result"]["status"]["state"] == "TASK_STATE_COMPLETED" {
            break r;
        }
        assert!(std::time::Instant::now() < deadline, "{r}\n{}", bot.log());
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    let answer = done["result"]["artifacts"][0]["parts"][0]["text"]
        .as_str()
        .unwrap_or_default();
    assert!(
        answer.contains("first part") && answer.contains("echo: and this"),
        "{done}"
    );
}

/// One JSON-RPC call of `method` with `params` in A2A 1.0, as the caller with `token`.
pub(crate) async fn rpc(base: &str, token: &str, method: &str, params: serde_json::Value) -> serde_json::Value {
    http_client()
        .post(format!("{base}/a2a"))
        .header("A2A-Version", "1.0")
        .bearer_auth(token)
        .json(&json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap()
}

/// `SendMessage` params: a user message of `text` with the fields of `extra` (e.g.
/// `contextId`), answered at once when `immediately`.
fn send(text: &str, extra: serde_json::Value, immediately: bool) -> serde_json::Value {
    let mut message = json!({"role": "ROLE_USER", "messageId": format!("m-{text}"), "parts": [{"text": text}]});
    if let (Some(m), Some(e)) = (message.as_object_mut(), extra.as_object()) {
        m.extend(e.clone());
    }
    json!({"message": message, "configuration": {"returnImmediately": immediately}})
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_bots_agent_asks_another_bot_process_over_a2a() {
    let model = ModelServer::start().await.unwrap();
    model.set_responder(|api, body| {
        let t = Transcript::of(api, body);
        let asked = t.last_user_text()?.to_owned();
        let done = t.ends_with_tool_result();
        Some(if asked.contains("ask the other assistant") {
            if done {
                Turn::reply(format!("The other assistant answered: {}", last_result(&t)))
            } else {
                Turn::call(
                    "call_ask",
                    "a2a",
                    json!({"action": "send", "agent": "other", "text": "what is on the calendar?"}),
                )
            }
        } else if asked.contains("what is on the calendar?") {
            if done {
                Turn::reply(format!("Calendar: dentist at 10. Onward: {}", last_result(&t)))
            } else {
                Turn::call(
                    "call_on",
                    "a2a",
                    json!({"action": "send", "agent": "back", "text": "loop"}),
                )
            }
        } else {
            Turn::reply("?")
        })
    });
    // Bot B serves A2A; its agents may go one hop at most, and it lists an agent to go on to.
    let tg_b = BotApiServer::start(TOKEN).await.unwrap();
    let port_b = free_port();
    let url_b = format!("http://127.0.0.1:{port_b}");
    let config_b = format!(
        "{}[http]\nlisten = \"127.0.0.1:{port_b}\"\npublic_url = \"{url_b}\"\n[a2a]\nmax_hops = 1\n\
         [a2a.server]\n[[a2a.server.callers]]\nname = \"bot-a\"\ntoken_env = \"E2E_ALICE\"\n",
        telegram_config(&tg_b, "")
    );
    let env_b = Env::new(&model.url(), &config_b);
    let ws_b = env_b.dir.path().join("workspaces/a2a-bot-a/.volcanic/a2a");
    std::fs::create_dir_all(&ws_b).unwrap();
    std::fs::write(
        ws_b.join("agents.json"),
        json!({"agents": [{"name": "back", "url": "http://127.0.0.1:9"}]}).to_string(),
    )
    .unwrap();
    let bot_b = BotProcess::start_with(&env_b, TOKEN, Some("info"), &[("E2E_ALICE", ALICE)]);
    wait_card(&url_b, &bot_b).await;
    // Bot A: a chat whose agent lists B, with B's token for B's origin.
    let tg_a = BotApiServer::start(TOKEN).await.unwrap();
    let config_a = format!(
        "{}[a2a]\nsend_wait_seconds = 30\n[a2a.credentials.\"{url_b}\"]\ntoken_env = \"E2E_B_TOKEN\"\n",
        telegram_config(&tg_a, "")
    );
    let env_a = Env::new(&model.url(), &config_a);
    let ws_a = env_a
        .dir
        .path()
        .join("workspaces")
        .join(OWNER.to_string())
        .join(".volcanic/a2a");
    std::fs::create_dir_all(&ws_a).unwrap();
    std::fs::write(
        ws_a.join("agents.json"),
        json!({"agents": [{"name": "other", "url": url_b}]}).to_string(),
    )
    .unwrap();
    let bot_a = BotProcess::start_with(&env_a, TOKEN, Some("info"), &[("E2E_B_TOKEN", ALICE)]);

    tg_a.push_update(updates::text_message(
        OWNER,
        OWNER,
        "ask the other assistant about my day",
    ));
    wait_text(&tg_a, OWNER, "The other assistant answered:", &bot_a).await;
    let shown = texts(&tg_a, OWNER).join("\n");
    assert!(
        shown.contains("Calendar: dentist at 10."),
        "{shown}\nB log:\n{}",
        bot_b.log()
    );
    // B's session knew it served an agent at hop 1: its own onward message was refused.
    assert!(shown.contains("beyond max_hops"), "{shown}\nB log:\n{}", bot_b.log());
    // B ran the task in the caller's workspace and kept it in the caller's store.
    assert!(env_b.dir.path().join("workspaces/a2a-bot-a").is_dir());
    // B has no loopback switch: a push target on 127.0.0.1 is refused.
    let params = json!({"taskId": "any", "url": "http://127.0.0.1:9/hook"});
    let r = rpc(&url_b, ALICE, "CreateTaskPushNotificationConfig", params).await;
    assert_eq!(r["error"]["code"], -32602, "{r}");
    assert!(
        r["error"]["message"].as_str().unwrap_or_default().contains("loopback"),
        "{r}"
    );
}

//! Prometheus metrics through the real binary: after a conversation with a tool call, a 429 from
//! the Bot API and a scheduled job, `GET /metrics` is parsed with the Prometheus project's Python
//! parser (`prometheus_client`, pinned in `.testdeps/requirements.txt`) and its counts checked;
//! no chat id or message text is in it; an MCP tool call and an A2A task are counted; a listener
//! on a non-loopback address wants its token.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support::*;
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::time::Duration;
use volcanic_testkit::bot_api::{BotApiServer, updates};
use volcanic_testkit::model_server::{ModelServer, Turn};

/// One sample: its name and labels, as `name{k="v",...}` with labels sorted.
type Samples = BTreeMap<String, f64>;

/// Parses `text` with `prometheus_client.parser` (the Prometheus project's Python client) and
/// returns every sample keyed as [`Samples`], with the label values seen.
fn parse(text: &str) -> (Samples, Vec<String>) {
    let python = volcanic_testkit::testdeps::python().unwrap_or_else(|e| panic!("{e}"));
    let script = r#"
import json, sys
from prometheus_client.parser import text_string_to_metric_families
out, labels = {}, []
for family in text_string_to_metric_families(sys.stdin.read()):
    for s in family.samples:
        key = s.name + "{" + ",".join(f'{k}="{v}"' for k, v in sorted(s.labels.items())) + "}"
        out[key] = s.value
        labels.extend(s.labels.values())
print(json.dumps({"samples": out, "labels": labels}))
"#;
    let mut child = std::process::Command::new(python)
        .args(["-c", script])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    std::io::Write::write_all(&mut child.stdin.take().unwrap(), text.as_bytes()).unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "the Prometheus parser refused the scrape: {}\n{text}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let samples = serde_json::from_value(v["samples"].clone()).unwrap();
    let labels = serde_json::from_value(v["labels"].clone()).unwrap();
    (samples, labels)
}

/// `GET http://127.0.0.1:<port>/metrics` with an optional bearer token: status and body.
async fn scrape(port: u16, token: Option<&str>) -> (u16, String) {
    let mut req = http_client().get(format!("http://127.0.0.1:{port}/metrics"));
    if let Some(t) = token {
        req = req.bearer_auth(t);
    }
    let resp = req.send().await.unwrap();
    (resp.status().as_u16(), resp.text().await.unwrap())
}

fn get(samples: &Samples, key: &str) -> f64 {
    samples
        .get(key)
        .copied()
        .unwrap_or_else(|| panic!("no sample {key} in:\n{samples:#?}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_scrape_counts_a_conversation_with_a_tool_a_429_and_a_scheduled_job() {
    let model = ModelServer::start().await.unwrap();
    model.push(
        Turn::call(
            "call_1",
            "schedule",
            json!({"action": "add", "in": "2s", "text": "Remind the user to drink water."}),
        )
        .usage(100, 20, 0, 0),
    );
    model.push(Turn::reply("Reminder set for two seconds from now.").usage(150, 10, 0, 0));
    model.push(Turn::reply("Drink some water now.").usage(80, 5, 0, 0));
    let tg = BotApiServer::start(TOKEN).await.unwrap();
    let port = free_port();
    let metrics = format!("[metrics]\nlisten = \"127.0.0.1:{port}\"\n");
    let env = Env::new(&model.url(), &format!("{}{metrics}", telegram_config(&tg, "")));
    let bot = BotProcess::start(&env, TOKEN);
    tg.fail_next_in("sendMessage", OWNER, 429, "Too Many Requests: retry after 1", Some(1));
    tg.push_update(updates::text_message(
        OWNER,
        OWNER,
        "remind me to drink water in 2 seconds",
    ));
    nth_text(&tg, OWNER, "Reminder set", 1, &bot).await;
    nth_text(&tg, OWNER, "Drink some water now.", 1, &bot).await;
    // The job's run is counted once its delivery returned: wait for it on the scrape itself.
    let mut body = String::new();
    let deadline = std::time::Instant::now() + T;
    while !body.contains("volcanic_scheduler_runs_total{outcome=\"ok\"} 1") {
        assert!(
            std::time::Instant::now() < deadline,
            "no scheduler run counted:\n{body}\n{}",
            bot.log()
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
        body = scrape(port, None).await.1;
    }
    let (samples, labels) = parse(&body);
    let m = |k: &str| get(&samples, k);
    let model_key = |outcome: &str| {
        format!(
            "volcanic_model_requests_total{{model=\"claude-sonnet-4-5\",outcome=\"{outcome}\",provider=\"anthropic\"}}"
        )
    };
    let tokens = |kind: &str| {
        format!("volcanic_model_tokens_total{{kind=\"{kind}\",model=\"claude-sonnet-4-5\",provider=\"anthropic\"}}")
    };
    assert_eq!(m("volcanic_updates_total{kind=\"message\"}"), 1.0);
    assert_eq!(m("volcanic_messages_answered_total{}"), 1.0);
    assert_eq!(m(&model_key("tool_use")), 1.0);
    assert_eq!(m(&model_key("stop")), 2.0);
    assert_eq!(m(&tokens("input")), 330.0);
    assert_eq!(m(&tokens("output")), 35.0);
    // The model table's price of claude-sonnet-4-5: $3 and $15 per million input / output tokens.
    let cost = m("volcanic_model_cost_usd_total{model=\"claude-sonnet-4-5\",provider=\"anthropic\"}");
    assert!((cost - (330.0 * 3.0 + 35.0 * 15.0) / 1e6).abs() < 1e-9, "{cost}");
    assert_eq!(m("volcanic_tool_runs_total{outcome=\"ok\",tool=\"schedule\"}"), 1.0);
    assert_eq!(
        m("volcanic_telegram_api_errors_total{code=\"429\",method=\"sendMessage\"}"),
        1.0
    );
    assert_eq!(m("volcanic_answer_seconds_count{}"), 1.0);
    assert_eq!(m("volcanic_answer_first_text_seconds_count{}"), 1.0);
    // The answer waited out the 429's second.
    assert!(m("volcanic_answer_seconds_sum{}") >= 1.0, "{body}");
    assert!(m("volcanic_journal_sync_seconds_count{}") >= 1.0);
    assert_eq!(m("volcanic_scheduler_runs_total{outcome=\"ok\"}"), 1.0);
    assert_eq!(m("volcanic_scheduler_lateness_seconds_count{}"), 1.0);
    assert!(m("volcanic_sessions_loaded{}") >= 1.0);
    assert_eq!(m("volcanic_chats_known{}"), 1.0);
    assert!(m("process_resident_memory_bytes{}") > 1e6);
    assert!(m("process_open_fds{}") >= 3.0);
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs_f64();
    let started = m("process_start_time_seconds{}");
    assert!((now - 120.0..=now + 1.0).contains(&started), "{started} vs now {now}");
    // No chat id, user id or text anywhere in a label, nor text in the scrape.
    for value in &labels {
        assert!(
            !value.contains(&OWNER.to_string()),
            "a label holds the chat id: {value}"
        );
    }
    for text in ["water", "remind", "Reminder"] {
        assert!(!body.contains(text), "the scrape holds message text `{text}`:\n{body}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_listener_on_all_addresses_wants_its_bearer_token() {
    const SECRET: &str = "metrics-token-0123456789abcdef";
    let model = ModelServer::start().await.unwrap();
    let tg = BotApiServer::start(TOKEN).await.unwrap();
    let port = free_port();
    let metrics = format!("[metrics]\nlisten = \"0.0.0.0:{port}\"\ntoken_env = \"E2E_METRICS_TOKEN\"\n");
    let env = Env::new(&model.url(), &format!("{}{metrics}", telegram_config(&tg, "")));
    // Without the variable the configuration is refused, naming the key and the variable.
    let out = env.console(&["-p", "hi"]);
    assert!(!out.status.success());
    let err = stderr(&out);
    assert!(
        err.contains("metrics.token_env") && err.contains("E2E_METRICS_TOKEN"),
        "{err}"
    );
    let bot = BotProcess::start_with(&env, TOKEN, Some("info"), &[("E2E_METRICS_TOKEN", SECRET)]);
    tg.wait_for(|s| !s.get_updates_calls().is_empty(), T)
        .await
        .unwrap_or_else(|e| panic!("{e}\n{}", bot.log()));
    let (status, _) = scrape(port, None).await;
    assert_eq!(status, 401);
    let (status, _) = scrape(port, Some("wrong-token-0123456789abcdef")).await;
    assert_eq!(status, 401);
    let (status, body) = scrape(port, Some(SECRET)).await;
    assert_eq!(status, 200, "{body}");
    let (samples, _) = parse(&body);
    assert!(get(&samples, "process_open_fds{}") >= 3.0);
    assert!(!bot.log().contains(SECRET), "the token reached the log");
}

#[test]
fn a_public_listener_without_a_token_is_refused_at_load() {
    let env = Env::new("http://127.0.0.1:9", "[metrics]\nlisten = \"0.0.0.0:9464\"\n");
    let out = env.console(&["-p", "hi"]);
    assert!(!out.status.success());
    let err = stderr(&out);
    assert!(err.contains("metrics.token_env") && err.contains("required"), "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_scrape_counts_mcp_calls_and_a2a_tasks() {
    const CALLER: &str = "metrics-caller-token-0123456789";
    let everything = volcanic_testkit::testdeps::server_everything();
    let model = ModelServer::start().await.unwrap();
    model.push(Turn::call("toolu_01", "everything__get-sum", json!({"a": 2, "b": 40})));
    model.push(Turn::reply("The sum is 42."));
    model.push(Turn::reply("echo: hello agent"));
    let tg = BotApiServer::start(TOKEN).await.unwrap();
    let (port, http) = (free_port(), free_port());
    let config = format!(
        "{}{}[metrics]\nlisten = \"127.0.0.1:{port}\"\n\
         [mcp]\nstart_wait_secs = 10\n\
         [mcp.servers.everything]\ncommand = \"node\"\nargs = [\"{}\", \"stdio\"]\n\
         [a2a.server]\nname = \"Metrics test\"\n\
         [[a2a.server.callers]]\nname = \"alice\"\ntoken_env = \"E2E_METRICS_CALLER\"\n",
        telegram_config(&tg, ""),
        http_section(http),
        everything.display()
    );
    let env = Env::new(&model.url(), &config);
    let bot = BotProcess::start_with(&env, TOKEN, Some("info"), &[("E2E_METRICS_CALLER", CALLER)]);
    tg.push_update(updates::text_message(OWNER, OWNER, "what is 2 + 40?"));
    nth_text(&tg, OWNER, "The sum is 42.", 1, &bot).await;
    let base = format!("http://127.0.0.1:{http}");
    crate::a2a_server::wait_card(&base, &bot).await;
    let r = crate::a2a_server::rpc(
        &base,
        CALLER,
        "SendMessage",
        crate::a2a_server::send("hello agent", json!({}), false),
    )
    .await;
    assert_eq!(
        r["result"]["task"]["status"]["state"],
        "TASK_STATE_COMPLETED",
        "{r}\n{}",
        bot.log()
    );
    // The task is counted once its final status went out: wait for it on the scrape itself.
    let mut body = String::new();
    let deadline = std::time::Instant::now() + T;
    while !body.contains("volcanic_a2a_tasks_total{outcome=\"completed\"} 1") {
        assert!(
            std::time::Instant::now() < deadline,
            "no A2A task counted:\n{body}\n{}",
            bot.log()
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
        body = scrape(port, None).await.1;
    }
    let (samples, _) = parse(&body);
    let m = |k: &str| get(&samples, k);
    assert_eq!(m("volcanic_mcp_calls_total{outcome=\"ok\"}"), 1.0);
    assert_eq!(
        m("volcanic_tool_runs_total{outcome=\"ok\",tool=\"everything__get-sum\"}"),
        1.0
    );
    assert_eq!(m("volcanic_a2a_tasks_total{outcome=\"completed\"}"), 1.0);
    // The chat's session and the A2A caller's context.
    assert!(m("volcanic_sessions_loaded{}") >= 2.0, "{body}");
    for text in ["hello agent", "The sum", CALLER] {
        assert!(!body.contains(text), "the scrape holds `{text}`:\n{body}");
    }
}

//! Traces through the real binary: with `[otel]` pointing at the test kit's OTLP/HTTP receiver,
//! one update with a tool call gives one trace shaped update → run → model requests and a tool,
//! update → delivery, with outcomes and no message text or chat id; with the endpoint on a
//! closed port the bot answers as usual.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support::*;
use serde_json::json;
use volcanic_testkit::bot_api::{BotApiServer, updates};
use volcanic_testkit::model_server::{ModelServer, Turn};
use volcanic_testkit::otlp::{OtlpServer, ReceivedSpan};

fn one<'a>(spans: &'a [ReceivedSpan], name: &str) -> &'a ReceivedSpan {
    let found: Vec<&ReceivedSpan> = spans.iter().filter(|s| s.name == name).collect();
    assert_eq!(found.len(), 1, "one `{name}` span expected in {spans:#?}");
    found[0]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_update_is_one_trace_of_run_model_requests_tool_and_delivery() {
    let model = ModelServer::start().await.unwrap();
    model.push(Turn::call("call_1", "bash", json!({"command": "echo hi"})).usage(100, 20, 0, 0));
    model.push(Turn::reply("The command printed hi.").usage(120, 10, 0, 0));
    let tg = BotApiServer::start(TOKEN).await.unwrap();
    let otlp = OtlpServer::start().await.unwrap();
    let otel = format!("[otel]\nendpoint = \"{}\"\n", otlp.endpoint());
    let env = Env::new(&model.url(), &format!("{}{otel}", telegram_config(&tg, "")));
    let bot = BotProcess::start(&env, TOKEN);
    tg.push_update(updates::text_message(OWNER, OWNER, "please run echo hi"));
    nth_text(&tg, OWNER, "The command printed hi.", 1, &bot).await;
    let spans = otlp
        .wait_for(|s| s.iter().any(|s| s.name == "update"), T)
        .await
        .unwrap_or_else(|e| panic!("{e}\n{}", bot.log()));
    let update = one(&spans, "update");
    let run = one(&spans, "run");
    let tool = one(&spans, "tool");
    let delivery = one(&spans, "delivery");
    let requests: Vec<&ReceivedSpan> = spans.iter().filter(|s| s.name == "model_request").collect();
    assert_eq!(requests.len(), 2, "{spans:#?}");
    // The shape: one trace, update at its root.
    assert_eq!(update.parent_span_id, None);
    assert_eq!(update.service.as_deref(), Some("volcanic-bot"));
    assert_eq!(update.attributes.get("kind").map(String::as_str), Some("message"));
    assert_eq!(update.attributes.get("outcome").map(String::as_str), Some("answered"));
    for s in &spans {
        assert_eq!(s.trace_id, update.trace_id, "{} is in another trace", s.name);
        assert!(s.end_ns >= s.start_ns, "{s:?}");
    }
    assert_eq!(run.parent_span_id.as_ref(), Some(&update.span_id));
    assert_eq!(delivery.parent_span_id.as_ref(), Some(&update.span_id));
    assert_eq!(tool.parent_span_id.as_ref(), Some(&run.span_id));
    assert_eq!(tool.attributes.get("tool").map(String::as_str), Some("bash"));
    assert_eq!(tool.attributes.get("outcome").map(String::as_str), Some("ok"));
    let outcomes: Vec<&str> = requests
        .iter()
        .map(|r| {
            assert_eq!(r.parent_span_id.as_ref(), Some(&run.span_id));
            assert_eq!(r.attributes.get("model").map(String::as_str), Some("claude-sonnet-4-5"));
            r.attributes.get("outcome").map(String::as_str).unwrap_or_default()
        })
        .collect();
    assert_eq!(outcomes, ["tool_use", "stop"]);
    // The update's span covers its run and delivery.
    assert!(update.start_ns <= run.start_ns && run.end_ns <= update.end_ns);
    // No text, no chat id.
    let all = format!("{spans:?}");
    for secret in ["echo hi", "printed", "please", &OWNER.to_string()] {
        assert!(!all.contains(secret), "`{secret}` reached a span: {all}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_closed_collector_port_does_not_stop_the_bot() {
    let model = ModelServer::start().await.unwrap();
    model.push(Turn::reply("still answering"));
    model.push(Turn::reply("and again"));
    let tg = BotApiServer::start(TOKEN).await.unwrap();
    let closed = free_port();
    let otel = format!("[otel]\nendpoint = \"http://127.0.0.1:{closed}\"\n");
    let env = Env::new(&model.url(), &format!("{}{otel}", telegram_config(&tg, "")));
    let bot = BotProcess::start(&env, TOKEN);
    tg.push_update(updates::text_message(OWNER, OWNER, "hello"));
    nth_text(&tg, OWNER, "still answering", 1, &bot).await;
    // A second answer after the exporter has failed at least once (it sends every 0.5 s).
    tokio::time::sleep(std::time::Duration::from_secs(1)).await;
    tg.push_update(updates::text_message(OWNER, OWNER, "again"));
    nth_text(&tg, OWNER, "and again", 1, &bot).await;
    // It still stops promptly and cleanly.
    let code = bot.terminate(std::time::Duration::from_secs(10));
    assert_eq!(code, Some(0));
}

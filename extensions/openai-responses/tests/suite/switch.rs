//! One conversation switching Anthropic → Responses → Chat Completions → Anthropic, with a tool
//! call in each step, through the model registry (which normalises the transcript for each
//! target, as a session does): every request is accepted by the strict scripted model server.

use pretty_assertions::assert_eq;
use serde_json::json;
use std::sync::Arc;
use volcanic_abstractions::provider::ProviderRegistration;
use volcanic_abstractions::{Api, InputKind, Message, Model, ModelCost, ProviderContext, StopReason, StreamOptions};
use volcanic_core::models::ModelRegistry;
use volcanic_testkit::model_server::{ModelServer, Turn};

use super::support::{ask, collect, done, fast_config, result_for, server};

fn model(provider: &str, api: Api, id: &str, base_url: &str) -> Model {
    Model {
        id: id.into(),
        name: id.into(),
        provider: provider.into(),
        api,
        base_url: base_url.into(),
        reasoning: true,
        input: vec![InputKind::Text],
        cost: ModelCost::default(),
        context_window: 200_000,
        max_tokens: 8_192,
    }
}

fn registry(server: &ModelServer) -> ModelRegistry {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let mut registry = ModelRegistry::new().with_env(|_| None);
    registry.register_provider(ProviderRegistration {
        name: "anthropic".into(),
        provider: Arc::new(volcanic_anthropic::AnthropicProvider::with_config(fast_config()).unwrap()),
        models: vec![model(
            "anthropic",
            Api::AnthropicMessages,
            "claude-test",
            &server.anthropic_base_url(),
        )],
        api_key: Some("sk-ant".into()),
        api_key_env: None,
    });
    // One `openai` provider serving both APIs, as the built-in one does.
    registry.register_api(Arc::new(
        volcanic_openai_responses::OpenAiResponsesProvider::with_config(fast_config()).unwrap(),
    ));
    registry.register_provider(ProviderRegistration {
        name: "openai".into(),
        provider: Arc::new(volcanic_openai::OpenAiCompletionsProvider::with_config(fast_config()).unwrap()),
        models: vec![
            model("openai", Api::OpenAiResponses, "gpt-5", &server.openai_base_url()),
            model("openai", Api::OpenAiCompletions, "gpt-4.1", &server.openai_base_url()),
        ],
        api_key: Some("sk-openai".into()),
        api_key_env: None,
    });
    registry
}

#[tokio::test]
async fn a_conversation_switches_across_the_three_apis_with_tool_calls() {
    let server = server().await;
    let registry = registry(&server);
    let steps = [
        ("anthropic/claude-test", "toolu_01AbC"),
        ("openai/gpt-5", "call_resp1"),
        ("openai/gpt-4.1", "call_chat1"),
        ("anthropic/claude-test", "toolu_02XyZ"),
    ];
    let mut context: ProviderContext = ask("step 0");
    for (step, (key, id)) in steps.iter().enumerate() {
        let model = registry.require(key).unwrap();
        server.push(
            Turn::new()
                .thinking(format!("thinking at step {step}"), Some(&format!("sig-{step}")))
                .tool_call(*id, "bash", json!({"command": format!("echo {step}")})),
        );
        server.push(Turn::reply(format!("answer {step}")));
        let first = done(&collect(registry.stream(&model, context.clone(), StreamOptions::default())).await);
        assert_eq!(first.stop_reason, StopReason::ToolUse, "step {step}");
        let call = first.tool_calls().next().cloned().unwrap();
        context.messages.push(Message::Assistant(first));
        context.messages.push(result_for(&call, &format!("out {step}")));
        let second = done(&collect(registry.stream(&model, context.clone(), StreamOptions::default())).await);
        assert_eq!(second.text(), format!("answer {step}"));
        context.messages.push(Message::Assistant(second));
        context
            .messages
            .push(Message::user_text(format!("step {}", step + 1), 2));
    }
    let requests = server.requests();
    assert_eq!(requests.len(), 8);
    for request in &requests {
        assert!(
            !request.is_rejected(),
            "{} rejected: {:?}",
            request.path,
            request.rejection
        );
    }
    let paths: Vec<&str> = requests.iter().map(|r| r.path.as_str()).collect();
    assert_eq!(
        paths,
        [
            "/v1/messages",
            "/v1/messages",
            "/v1/responses",
            "/v1/responses",
            "/v1/chat/completions",
            "/v1/chat/completions",
            "/v1/messages",
            "/v1/messages"
        ]
    );
    // Back on Anthropic, every earlier call is answered, ids mapped alike for call and result.
    let last = requests[7].transcript();
    let calls: Vec<String> = last
        .entries()
        .iter()
        .flat_map(|said| match said {
            volcanic_testkit::model_server::Said::Assistant { calls, .. } => {
                calls.iter().map(|c| c.id.clone()).collect()
            }
            _ => Vec::new(),
        })
        .collect();
    let outputs: Vec<String> = requests[7].tool_outputs().into_iter().map(|(id, _)| id).collect();
    assert_eq!(calls, outputs);
    assert_eq!(calls.len(), 4);
}

/// One scripted step of a random conversation: which model answers, whether it reasons and
/// says something, and how many tools it calls at once.
#[derive(Debug, Clone)]
struct Step {
    target: usize,
    thinking: bool,
    text: bool,
    calls: usize,
}

fn step() -> impl proptest::strategy::Strategy<Value = Step> {
    use proptest::prelude::*;
    (0..3usize, any::<bool>(), any::<bool>(), 1..4usize).prop_map(|(target, thinking, text, calls)| Step {
        target,
        thinking,
        text,
        calls,
    })
}

/// Runs `steps` through the registry against one server; every request must be accepted.
async fn run_conversation(steps: &[Step]) -> Result<(), String> {
    let server = server().await;
    let registry = registry(&server);
    let keys = ["anthropic/claude-test", "openai/gpt-5", "openai/gpt-4.1"];
    let id_styles = ["toolu_01", "call_", "call_chat_"];
    let mut context: ProviderContext = ask("start");
    for (n, step) in steps.iter().enumerate() {
        let model = registry.require(keys[step.target]).map_err(|e| e.to_string())?;
        let mut turn = Turn::new();
        if step.thinking {
            turn = turn.thinking(format!("reasoning {n}"), Some(&format!("sig-{n}")));
        }
        if step.text {
            turn = turn.text(format!("working on {n}"));
        }
        for c in 0..step.calls {
            turn = turn.tool_call(
                format!("{}{n}x{c}", id_styles[step.target]),
                "bash",
                json!({"command": format!("echo {n} {c}")}),
            );
        }
        server.push(turn);
        server.push(Turn::reply(format!("answer {n}")));
        let first = done(&collect(registry.stream(&model, context.clone(), StreamOptions::default())).await);
        let calls: Vec<_> = first.tool_calls().cloned().collect();
        context.messages.push(Message::Assistant(first));
        for call in &calls {
            context.messages.push(result_for(call, "ok"));
        }
        let second = done(&collect(registry.stream(&model, context.clone(), StreamOptions::default())).await);
        context.messages.push(Message::Assistant(second));
        context.messages.push(Message::user_text(format!("next {n}"), 2));
    }
    match server.requests().into_iter().find(|r| r.is_rejected()) {
        Some(rejected) => Err(format!("{} rejected: {:?}", rejected.path, rejected.rejection)),
        None => Ok(()),
    }
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig { cases: 24, ..Default::default() })]

    /// Any order of models, with reasoning, text and parallel calls in each answer, gives
    /// requests every API accepts (the normaliser and the three providers together).
    #[test]
    fn any_switching_order_stays_valid(steps in proptest::collection::vec(step(), 1..6)) {
        let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build().unwrap();
        let outcome = runtime.block_on(run_conversation(&steps));
        proptest::prop_assert!(outcome.is_ok(), "{:?}", outcome);
    }
}

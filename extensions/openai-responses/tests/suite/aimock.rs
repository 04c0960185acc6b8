//! `OpenAiResponsesProvider` against `@copilotkit/aimock` (`llmock`), a third-party mock serving
//! `/v1/responses`: reasoning with encrypted content and usage from a fixture added through its
//! control API (the conversations shared with the other providers are the contract's).

use serde_json::json;
use volcanic_abstractions::{
    AssistantContent, Message, Provider, ProviderContext, StopReason, StreamOptions, ThinkingLevel,
};
use volcanic_provider_support::testing::Llmock;

use super::support::{collect, done, model, options, provider};

#[tokio::test]
async fn aimock_reasoning_with_encrypted_content_and_usage() {
    let mock = Llmock::start().await;
    let fixture = json!({"fixtures": [{
        "match": {"userMessage": "Why is the sky blue?"},
        "response": {
            "reasoning": "Rayleigh scattering favours short wavelengths.",
            "content": "Because air scatters blue light most.",
            "usage": {"input_tokens": 12, "output_tokens": 5},
        },
    }]});
    let added = reqwest::Client::new()
        .post(format!("{}/__aimock/fixtures", mock.url))
        .json(&fixture)
        .send()
        .await
        .unwrap();
    assert!(added.status().is_success(), "{:?}", added.text().await);
    let model = model(&format!("{}/v1", mock.url));
    let context = ProviderContext {
        system_prompt: "Be brief.".into(),
        messages: vec![Message::user_text("Why is the sky blue?", 1)],
        tools: vec![],
    };
    let opts = StreamOptions {
        thinking_level: ThinkingLevel::High,
        ..options()
    };
    let message = done(&collect(provider().stream(&model, context, opts)).await);
    assert_eq!(message.stop_reason, StopReason::Stop);
    assert_eq!(message.text(), "Because air scatters blue light most.");
    let AssistantContent::Thinking(thinking) = &message.content[0] else {
        panic!("reasoning first: {message:?}");
    };
    assert_eq!(thinking.thinking, "Rayleigh scattering favours short wavelengths.");
    let item: serde_json::Value = serde_json::from_str(thinking.thinking_signature.as_deref().unwrap()).unwrap();
    assert!(
        item["encrypted_content"].as_str().is_some_and(|e| !e.is_empty()),
        "{item}"
    );
    assert_eq!((message.usage.input, message.usage.output), (12, 5));
    assert!(message.usage.cost.total > 0.0);
}

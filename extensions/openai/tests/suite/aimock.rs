//! `OpenAiCompletionsProvider` against `@copilotkit/aimock` (`llmock`), a third-party mock of the
//! Chat Completions API; the conversations and their fixture are shared with the other providers
//! (`volcanic_provider_support::testing`).

use volcanic_provider_support::testing;

use super::support::{model, options, provider};

#[tokio::test]
async fn aimock_text_answer() {
    testing::aimock_text_answer(&provider(), |url| model(&format!("{url}/v1")), options()).await;
}

#[tokio::test]
async fn aimock_two_step_tool_call() {
    testing::aimock_two_step_tool_call(&provider(), |url| model(&format!("{url}/v1")), options()).await;
}

//! The provider contract every wire API keeps (`volcanic_provider_support::testing::contract`:
//! retries, errors, idle timeout, cancellation, `@copilotkit/aimock`), run against this one.

volcanic_provider_support::provider_contract_tests!(volcanic_openai_responses::Responses, super::support::DIALECT);

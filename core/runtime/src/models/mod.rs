//! The models slice: which providers and models a session has, how their keys are found, and the
//! one guarded call every model request goes through ([`ModelRegistry::stream`]): transcript
//! normalisation for the target model, key resolution, and exactly one terminal event.
//!
//! Keys: a provider's literal `api_key`, else its `api_key_env` read at call time; a provider with
//! neither needs no key (local servers). A missing key is an `error` event naming the variable.

mod normalize;
mod registry;

pub use normalize::{MISSING_RESULT, normalize_transcript};
pub use registry::{CustomModelConfig, CustomProviderConfig, ModelError, ModelRegistry, error_stream, now_ms};

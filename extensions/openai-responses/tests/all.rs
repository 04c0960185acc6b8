//! Integration tests of `volcanic-openai-responses`, one binary: the provider contract shared by
//! every wire API (`suite/contract.rs`), this API's own replies and failures against the
//! testkit's scripted model server (`suite/replies.rs`, `suite/failures.rs`), across providers
//! through the model registry (`suite/switch.rs`) and against `@copilotkit/aimock`
//! (`suite/aimock.rs`).

mod suite;

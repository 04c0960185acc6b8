//! Integration tests of `volcanic-anthropic`, one binary: against the testkit's scripted model
//! server (`suite/model_server.rs`) and against `@copilotkit/aimock` (`suite/aimock.rs`).

mod suite;

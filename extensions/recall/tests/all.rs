//! volcanic-recall's integration tests: one binary (`suite/`).

#[path = "support/transcript.rs"]
mod transcript;

mod suite;

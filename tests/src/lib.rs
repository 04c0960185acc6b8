//! Test doubles that speak the real wire formats on `127.0.0.1`, so no test needs the internet.
//!
//! - [`model_server`]: a scripted model server for the Anthropic Messages and OpenAI Chat
//!   Completions streaming APIs, recording and checking every request.

pub mod model_server;

pub use model_server::{ModelServer, RecordedRequest, StopReason, Turn};

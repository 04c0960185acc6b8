//! Test doubles that speak the real wire formats on `127.0.0.1`, so no test needs the internet.
//!
//! - [`model_server`]: a scripted model server for the Anthropic Messages and OpenAI Chat
//!   Completions streaming APIs, recording and checking every request.
//! - [`bot_api`]: a Telegram Bot API double, strict like Telegram, that teloxide works
//!   against; tests push updates and observe every call the bot makes.
//! - [`google`]: Google's OAuth 2.0 endpoints and the Calendar API v3, strict like Google.
//! - [`a2a_peer`]: a scripted A2A agent speaking JSON-RPC + SSE in A2A 1.0, 0.3, or both.
//! - [`fake_claude`]: a fake `claude -p` printing recorded `stream-json` lines (the
//!   `fake-claude` bin), checking its flags and environment.
//! - [`mcp_oauth`]: a remote MCP server requiring OAuth, with its authorization server.
//! - [`audio`]: OpenAI's audio API (transcriptions, speech), strict, checking uploads are the
//!   OGG/Opus notes they claim to be; real spoken notes made with espeak-ng and opusenc.
//! - [`testdeps`]: where the pinned npm and Python test peers are (`.testdeps/`).

pub mod a2a_peer;
pub mod a2a_server;
pub mod audio;
pub mod bot_api;
pub mod fake_claude;
pub mod google;
pub mod mcp_oauth;
pub mod model_server;
pub mod otlp;
pub mod pi_session;
mod serve;
pub mod testdeps;

pub use bot_api::{ApiCall, ApiError, BotApiServer, ChatMessage};
pub use google::GoogleServer;
pub use model_server::{ModelServer, RecordedRequest, StopReason, Turn};

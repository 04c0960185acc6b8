//! The agent slice: [`AgentSession`] (the conversation facade and its loop) and
//! [`AgentSessionFactory`] (the five creation steps).
//!
//! A host builds one factory with its host-wide settings ([`FactoryConfig`]), creates a session
//! per conversation ([`AgentSessionOptions`]), subscribes to its events and calls
//! [`AgentSession::submit`] (the prompt gets its place; the run goes on in its own task, awaited
//! through [`RunHandle`]) or [`AgentSession::prompt`] (both in one). Everything else (tools,
//! extensions, models, the session file) is reached through the session. Failures are
//! [`SessionError`]s with typed causes.
//!
//! Inside: `inner` (the shared state and its lock rules), `prompt` (input to a run or a queue),
//! `run_loop` (the run and the turn, as the spec draws them) with its steps `stream` (the model
//! call; `failover` goes on with a fallback model), `tool_exec` (tool batches, redaction),
//! `persist` (messages into the file and the context), `compact` and `skills`; `actions` and
//! `context` are what extensions reach.

mod accumulate;
mod actions;
mod compact;
mod context;
mod error;
mod factory;
mod failover;
mod inner;
mod persist;
mod prompt;
mod run_loop;
mod session;
mod skills;
mod spend;
mod stream;
mod tool_exec;

pub use error::SessionError;
pub use factory::{AgentSessionFactory, AgentSessionOptions, FactoryConfig, SessionSelect};
pub use prompt::{PromptInput, QueueMode, RunHandle, Submitted};
pub use session::{AgentSession, ListenerId, SessionStats};
pub use tool_exec::LENGTH_STOP_ERROR;

//! The agent slice: [`AgentSession`] (the conversation facade and its loop) and
//! [`AgentSessionFactory`] (the five creation steps).
//!
//! A host builds one factory with its host-wide settings ([`FactoryConfig`]), creates a session
//! per conversation ([`AgentSessionOptions`]), subscribes to its events and calls
//! [`AgentSession::prompt`]. Everything else (tools, extensions, models, the session file) is
//! reached through the session.

mod accumulate;
mod actions;
mod compact;
mod context;
mod error;
mod factory;
mod prompt;
mod run_loop;
mod session;
mod skills;
mod tool_exec;

pub use error::SessionError;
pub use factory::{AgentSessionFactory, AgentSessionOptions, FactoryConfig, SessionSelect};
pub use prompt::{PromptInput, QueueMode, RunHandle, Submitted};
pub use session::{AgentSession, ListenerId, SessionStats};
pub use tool_exec::LENGTH_STOP_ERROR;

//! The extensions slice: activating a session's extensions and dispatching events to them
//! (spec: extensions.md).
//!
//! - Activation is two-phase: each extension registers into a staging area; tools, commands,
//!   providers and handlers commit only if its `activate` returns `Ok` (a panic counts as a
//!   failure). Failures are recorded and the other extensions still load.
//! - Action members of the API fail with `ExtensionError::NotBound` until the session binds the
//!   runner (creation step 4), and with `ExtensionError::Stale` after [`ExtensionRunner::invalidate`]
//!   (session replaced or reloaded).
//! - Dispatch: load order, then registration order; a failing handler is reported (the session
//!   emits `extension_error`) and dispatch goes on; `cancel`/`block`/`mark_handled` stop later
//!   handlers; a failing `tool_call` handler blocks the tool, a failing `process_spawn` handler
//!   fails the spawn.

mod api;
mod bus;
mod handlers;
mod runner;

pub use api::{Binding, SessionActions};
pub use bus::Bus;
pub use runner::{ActivationFailure, ExtensionRunner, HandlerFailure, Registries};

//! Test modules: `contract` runs the provider contract shared by every wire API (retries,
//! errors, idle timeout, cancel, `@copilotkit/aimock`); `replies` drives the provider against
//! `volcanic-testkit`'s scripted model server (text, thinking, tools, usage, hooks); `support`
//! holds the shared helpers and the API's dialect.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod contract;
mod replies;
mod support;

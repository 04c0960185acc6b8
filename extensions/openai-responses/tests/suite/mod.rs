//! Test modules: `contract` runs the provider contract shared by every wire API (retries,
//! errors, idle timeout, cancel, `@copilotkit/aimock`); `replies` and `failures` drive the
//! provider against `volcanic-testkit`'s scripted model server (what only Responses has:
//! reasoning replay, failed and incomplete responses); `switch` runs one conversation across
//! Anthropic, Chat Completions and Responses; `aimock` the reasoning fixture of a real
//! third-party mock; `support` holds the shared helpers and the API's dialect.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod aimock;
mod contract;
mod failures;
mod replies;
mod support;
mod switch;

//! Test modules: `replies` and `failures` drive the provider against `volcanic-testkit`'s
//! scripted model server; `switch` runs one conversation across Anthropic, Chat Completions and
//! Responses; `aimock` against a real third-party mock; `support` holds the shared helpers.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod aimock;
mod failures;
mod replies;
mod support;
mod switch;

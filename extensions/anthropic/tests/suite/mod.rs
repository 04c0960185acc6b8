//! Test modules: `model_server` drives the provider against `volcanic-testkit`'s scripted
//! server (every behaviour: text, thinking, tools, usage, retries, failures, cancel, hooks);
//! `aimock` against a real third-party mock; `support` holds the shared helpers.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod aimock;
mod model_server;
mod support;

//! Operations: what the bot shows about itself to the outside (docs/operations.md).
//!
//! - [`metrics`]: the Prometheus registry and its metric families, with one small typed function
//!   per thing counted, which the call sites use (one line each). Nothing is counted while
//!   `[metrics]` is absent (each function is then a load of an empty cell).
//! - [`listener`]: `GET /metrics` on a listener of its own (`[metrics] listen`), with the bearer
//!   token a non-loopback address needs.
//! - [`observer`]: an extension every agent session gets, which counts from the session's events
//!   (model requests, tokens, cost, tool runs, sessions loaded) without touching the loop.
//! - [`answers`]: answer timings from an update's arrival (first text, whole answer).
//! - [`process`]: the `process_*` metrics, read from `/proc` at scrape time.
//! - [`scheduler`]: scheduler runs and lateness, from a wrapper around the chats' job delivery.
//! - [`traces`]: spans exported over OTLP/HTTP (`[otel]`), one trace per update.
//!
//! Labels never carry a chat id, a user id, message text or a secret: only names from bounded
//! sets (update kinds, provider and model names, tool names, Bot API method names, outcomes).

pub mod answers;
pub mod listener;
pub mod metrics;
pub mod observer;
pub mod process;
pub mod scheduler;
pub mod traces;

/// Whether metrics or traces are on: the session events are observed only then.
pub fn observing() -> bool {
    metrics::enabled() || traces::enabled()
}

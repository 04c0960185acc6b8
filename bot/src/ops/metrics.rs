//! The metric families (made with `prometheus-client`, the Prometheus project's Rust client) and
//! the typed functions the call sites use. [`install`] creates them once, when `[metrics]` is
//! configured; before that (and without the section) every function returns at once.
//!
//! Names follow the Prometheus naming rules (<https://prometheus.io/docs/practices/naming/>):
//! the `volcanic_` prefix, base units (seconds, bytes, USD), `_total` on counters (added by the
//! encoder). docs/operations.md lists each with its meaning.

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::Registry;
use std::path::PathBuf;
use std::sync::OnceLock;
use std::sync::atomic::AtomicU64;
use std::time::Duration;
use volcanic_abstractions::messages::{AssistantMessage, StopReason};

/// The one registry of the process (a scrape reads it; the call sites write it).
static METRICS: OnceLock<Metrics> = OnceLock::new();

/// Longest label value kept (bytes); longer names are cut, so one odd name cannot bloat a scrape.
const MAX_LABEL: usize = 64;

/// Answer timings (seconds): a quick reply to a long agent run.
const ANSWER_BUCKETS: [f64; 12] = [0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 15.0, 30.0, 60.0, 120.0, 300.0, 900.0];
/// Scheduler lateness (seconds): on time to a day late (the bot was down).
const LATENESS_BUCKETS: [f64; 9] = [1.0, 5.0, 15.0, 60.0, 300.0, 900.0, 3600.0, 21600.0, 86400.0];

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct KindLabel {
    kind: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct OutcomeLabel {
    outcome: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ModelLabels {
    provider: String,
    model: String,
}

/// [`ModelLabels`] and an outcome (`provider`, `model`, `outcome` in the scrape).
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ModelOutcome {
    #[prometheus(flatten)]
    model: ModelLabels,
    outcome: &'static str,
}

/// [`ModelLabels`] and a token kind (`provider`, `model`, `kind` in the scrape).
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ModelTokens {
    #[prometheus(flatten)]
    model: ModelLabels,
    kind: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ToolOutcome {
    tool: String,
    outcome: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ApiError {
    method: &'static str,
    code: &'static str,
}

/// Every family, registered in [`Metrics::registry`].
#[derive(Debug)]
pub struct Metrics {
    registry: Registry,
    updates: Family<KindLabel, Counter>,
    answered: Counter,
    model_requests: Family<ModelOutcome, Counter>,
    model_tokens: Family<ModelTokens, Counter>,
    model_cost: Family<ModelLabels, Counter<f64, AtomicU64>>,
    tool_runs: Family<ToolOutcome, Counter>,
    telegram_errors: Family<ApiError, Counter>,
    answer_first_text: Histogram,
    answer: Histogram,
    journal_sync: Histogram,
    scheduler_runs: Family<OutcomeLabel, Counter>,
    scheduler_lateness: Histogram,
    a2a_tasks: Family<OutcomeLabel, Counter>,
    mcp_calls: Family<OutcomeLabel, Counter>,
    sessions_loaded: Gauge,
}

impl Metrics {
    fn new(workspaces: PathBuf) -> Metrics {
        let mut m = Metrics {
            updates: Family::default(),
            answered: Counter::default(),
            model_requests: Family::default(),
            model_tokens: Family::default(),
            model_cost: Family::default(),
            tool_runs: Family::default(),
            telegram_errors: Family::default(),
            answer_first_text: Histogram::new(ANSWER_BUCKETS),
            answer: Histogram::new(ANSWER_BUCKETS),
            // 0.25 ms to about 2 s: an SSD's fsync to a disk in trouble.
            journal_sync: Histogram::new(prometheus_client::metrics::histogram::exponential_buckets(
                0.000_25, 2.0, 14,
            )),
            scheduler_runs: Family::default(),
            scheduler_lateness: Histogram::new(LATENESS_BUCKETS),
            a2a_tasks: Family::default(),
            mcp_calls: Family::default(),
            sessions_loaded: Gauge::default(),
            registry: Registry::default(),
        };
        let r = &mut m.registry;
        r.register("volcanic_updates", "Telegram updates taken, by kind", m.updates.clone());
        r.register(
            "volcanic_messages_answered",
            "Messages whose answer was delivered",
            m.answered.clone(),
        );
        r.register(
            "volcanic_model_requests",
            "Model requests that ended, by provider, model and outcome (stop, tool_use, length, error, aborted)",
            m.model_requests.clone(),
        );
        r.register(
            "volcanic_model_tokens",
            "Model tokens, by provider, model and kind (input, output, cache_read, cache_write)",
            m.model_tokens.clone(),
        );
        r.register(
            "volcanic_model_cost_usd",
            "Model cost in US dollars, by provider and model (the model table's prices)",
            m.model_cost.clone(),
        );
        r.register(
            "volcanic_tool_runs",
            "Tool runs, by tool and outcome (ok, error)",
            m.tool_runs.clone(),
        );
        r.register(
            "volcanic_telegram_api_errors",
            "Bot API requests that failed, by method and HTTP code (429: flood control)",
            m.telegram_errors.clone(),
        );
        r.register(
            "volcanic_answer_first_text_seconds",
            "From an update's arrival to the first text of its answer in the chat",
            m.answer_first_text.clone(),
        );
        r.register(
            "volcanic_answer_seconds",
            "From an update's arrival to its whole answer delivered",
            m.answer.clone(),
        );
        r.register(
            "volcanic_journal_sync_seconds",
            "Duration of one fsync of the inbound journal",
            m.journal_sync.clone(),
        );
        r.register(
            "volcanic_scheduler_runs",
            "Scheduled prompt runs, by outcome (ok, quiet, failed, cut_off, stopped, skipped)",
            m.scheduler_runs.clone(),
        );
        r.register(
            "volcanic_scheduler_lateness_seconds",
            "How long after its slot a scheduled prompt run started",
            m.scheduler_lateness.clone(),
        );
        r.register(
            "volcanic_a2a_tasks",
            "A2A server tasks that ended, by outcome (completed, failed, canceled, rejected, input_required)",
            m.a2a_tasks.clone(),
        );
        r.register(
            "volcanic_mcp_calls",
            "MCP tool calls, by outcome (ok, error)",
            m.mcp_calls.clone(),
        );
        r.register(
            "volcanic_sessions_loaded",
            "Agent sessions in memory (chats, scheduled runs, A2A callers)",
            m.sessions_loaded.clone(),
        );
        r.register_collector(Box::new(super::process::ProcessCollector::new(workspaces)));
        m
    }
}

/// Turns metrics on (once; later calls return the same registry). `workspaces` is the root of
/// the chats' workspaces, counted at scrape time for `volcanic_chats_known`.
pub fn install(workspaces: PathBuf) -> &'static Metrics {
    METRICS.get_or_init(|| Metrics::new(workspaces))
}

/// Whether metrics are on (`[metrics]` configured and [`install`]ed).
pub fn enabled() -> bool {
    METRICS.get().is_some()
}

/// The registry in the Prometheus text format (version 0.0.4); empty when metrics are off.
pub fn encode() -> String {
    let Some(m) = METRICS.get() else { return String::new() };
    let mut out = String::with_capacity(16 * 1024);
    // Writing to a String cannot fail; a collector's error leaves the text as far as it got.
    if let Err(e) = prometheus_client::encoding::prometheus_text::encode(&mut out, &m.registry) {
        tracing::warn!("metrics: encoding failed: {e}");
    }
    out
}

/// `s` cut to [`MAX_LABEL`] bytes at a character boundary.
fn label(s: &str) -> String {
    let mut end = s.len().min(MAX_LABEL);
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    s[..end].to_owned()
}

/// The kind of an update (its JSON): the first of the kinds the bot asks for that it has, else
/// `other`.
pub fn update_kind(update: &serde_json::Value) -> &'static str {
    [
        "message",
        "callback_query",
        "stopped_message_generation",
        "edited_message",
    ]
    .into_iter()
    .find(|k| update.get(*k).is_some())
    .unwrap_or("other")
}

/// An update of `kind` ([`update_kind`]) taken from Telegram (`volcanic_updates_total`).
pub fn update(kind: &'static str) {
    let Some(m) = METRICS.get() else { return };
    m.updates.get_or_create(&KindLabel { kind }).inc();
}

/// An answer's timings from its update's arrival: `first_text` when some text of it had reached
/// the chat, `whole` when the rest was delivered (`volcanic_answer_first_text_seconds`,
/// `volcanic_answer_seconds`, `volcanic_messages_answered_total`).
pub fn answer_timing(first_text: Option<Duration>, whole: Option<Duration>) {
    let Some(m) = METRICS.get() else { return };
    if let Some(d) = first_text {
        m.answer_first_text.observe(d.as_secs_f64());
    }
    if let Some(d) = whole {
        m.answer.observe(d.as_secs_f64());
        m.answered.inc();
    }
}

/// The `outcome` label (and span field) of a model request that stopped for `reason`.
pub fn stop_reason(reason: StopReason) -> &'static str {
    match reason {
        StopReason::Stop => "stop",
        StopReason::ToolUse => "tool_use",
        StopReason::Length => "length",
        StopReason::Error => "error",
        StopReason::Aborted => "aborted",
    }
}

/// A model request that ended with `message` (its provider, model, stop reason, usage, cost).
pub fn model_message(message: &AssistantMessage) {
    let Some(m) = METRICS.get() else { return };
    let model = ModelLabels {
        provider: label(&message.provider),
        model: label(&message.model),
    };
    let u = &message.usage;
    for (kind, n) in [
        ("input", u.input),
        ("output", u.output),
        ("cache_read", u.cache_read),
        ("cache_write", u.cache_write),
    ] {
        if n > 0 {
            let labels = ModelTokens {
                model: model.clone(),
                kind,
            };
            m.model_tokens.get_or_create(&labels).inc_by(n);
        }
    }
    if u.cost.total > 0.0 && u.cost.total.is_finite() {
        m.model_cost.get_or_create(&model).inc_by(u.cost.total);
    }
    let outcome = stop_reason(message.stop_reason);
    m.model_requests.get_or_create(&ModelOutcome { model, outcome }).inc();
}

/// A tool run that ended (`volcanic_tool_runs_total`); an MCP server's tool (named
/// `<server>__<tool>` by `volcanic_mcp::names`) counts in `volcanic_mcp_calls_total` too.
pub fn tool_run(tool: &str, is_error: bool) {
    let Some(m) = METRICS.get() else { return };
    let outcome = if is_error { "error" } else { "ok" };
    if tool.contains("__") {
        m.mcp_calls.get_or_create(&OutcomeLabel { outcome }).inc();
    }
    let labels = ToolOutcome {
        tool: label(tool),
        outcome,
    };
    m.tool_runs.get_or_create(&labels).inc();
}

/// A Bot API request `method` (e.g. `sendMessage`) that failed with `e`
/// (`volcanic_telegram_api_errors_total`).
pub fn telegram_error(method: &'static str, e: &teloxide::RequestError) {
    let Some(m) = METRICS.get() else { return };
    let code = api_error_code(e);
    m.telegram_errors.get_or_create(&ApiError { method, code }).inc();
}

/// [`telegram_error`] for a raw Bot API call that answered HTTP `status` (not 2xx).
pub fn telegram_status(method: &'static str, status: u16) {
    let Some(m) = METRICS.get() else { return };
    let code = status_code(status);
    m.telegram_errors.get_or_create(&ApiError { method, code }).inc();
}

/// The `code` label of a failed Bot API request: the HTTP status Telegram answered with (teloxide
/// keeps the description, whose first words name the status: "Forbidden: bot was blocked…"),
/// or what went wrong when there was no answer (`network`, `invalid_json`, `io`).
fn api_error_code(e: &teloxide::RequestError) -> &'static str {
    use teloxide::RequestError as E;
    match e {
        E::RetryAfter(_) => "429",
        E::MigrateToChatId(_) => "400",
        E::Api(api) => {
            let text = api.to_string();
            let status = [
                ("Forbidden", 403),
                ("Unauthorized", 401),
                ("Not Found", 404),
                ("Conflict", 409),
                ("Too Many Requests", 429),
            ]
            .into_iter()
            .find(|(prefix, _)| text.starts_with(prefix))
            .map_or(400, |(_, status)| status);
            status_code(status)
        }
        E::Network(_) => "network",
        E::InvalidJson { .. } => "invalid_json",
        E::Io(_) => "io",
    }
}

/// An HTTP status as a label value: the Bot API's usual ones by number, anything else by class.
fn status_code(status: u16) -> &'static str {
    match status {
        400 => "400",
        401 => "401",
        403 => "403",
        404 => "404",
        409 => "409",
        413 => "413",
        429 => "429",
        500..=599 => "5xx",
        _ => "other",
    }
}

/// Runs `sync` (one fsync of the inbound journal) and records how long it took
/// (`volcanic_journal_sync_seconds`).
pub fn time_journal_sync<T>(sync: impl FnOnce() -> T) -> T {
    let started = std::time::Instant::now();
    let out = sync();
    if let Some(m) = METRICS.get() {
        m.journal_sync.observe(started.elapsed().as_secs_f64());
    }
    out
}

/// A scheduled prompt run that ended with `outcome`, started `late` after its slot.
pub fn scheduler_run(outcome: &'static str, late: Duration) {
    let Some(m) = METRICS.get() else { return };
    m.scheduler_runs.get_or_create(&OutcomeLabel { outcome }).inc();
    m.scheduler_lateness.observe(late.as_secs_f64());
}

/// An A2A server task that ended (or paused for input) with `outcome` (`volcanic_a2a_tasks_total`).
pub fn a2a_task(outcome: &'static str) {
    let Some(m) = METRICS.get() else { return };
    m.a2a_tasks.get_or_create(&OutcomeLabel { outcome }).inc();
}

/// An agent session was loaded (`true`) or let go (`false`) (`volcanic_sessions_loaded`).
pub fn session_loaded(loaded: bool) {
    let Some(m) = METRICS.get() else { return };
    if loaded {
        m.sessions_loaded.inc();
    } else {
        m.sessions_loaded.dec();
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn labels_are_cut_at_a_character_boundary() {
        assert_eq!(label("bash"), "bash");
        let long = "é".repeat(40);
        let cut = label(&long);
        assert!(cut.len() <= MAX_LABEL && cut.chars().all(|c| c == 'é'), "{cut}");
    }

    #[test]
    fn the_families_encode_in_the_text_format() {
        install(std::env::temp_dir().join("volcanic-metrics-test-none"));
        update(update_kind(
            &serde_json::json!({"update_id": 1, "message": {"text": "secret words"}}),
        ));
        tool_run("srv__lookup", true);
        let text = encode();
        assert!(text.contains("volcanic_updates_total{kind=\"message\"} 1"), "{text}");
        assert!(
            text.contains("volcanic_tool_runs_total{tool=\"srv__lookup\",outcome=\"error\"} 1"),
            "{text}"
        );
        assert!(text.contains("volcanic_mcp_calls_total{outcome=\"error\"} 1"), "{text}");
        assert!(text.contains("# TYPE volcanic_answer_seconds histogram"), "{text}");
        assert!(text.contains("process_open_fds "), "{text}");
        assert!(!text.contains("secret words"));
    }
}

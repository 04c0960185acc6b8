//! Traces over OTLP/HTTP (`[otel]`): the bot's own spans, made with `tracing` under the target
//! [`TARGET`], are bridged by `tracing-opentelemetry` to the OpenTelemetry SDK, whose batch span
//! processor exports them from its own thread with `opentelemetry-otlp` (protobuf over HTTP).
//!
//! One trace per update: `update` (from its arrival in the journal until its answer was finished)
//! → `run` (the agent run it started) → `model_request` (each model call, with provider, model,
//! outcome and tokens) and `tool` (each tool run, with its name and outcome); `delivery` (the
//! answer's chunks going to Telegram) is a child of `update`. Spans carry no message text, chat or
//! user id: only the fields set here. Log spans (e.g. `chat{id}`) are never exported (the exporter
//! takes [`TARGET`] only).
//!
//! An unreachable collector never slows the bot: spans wait in a bounded queue
//! ([`MAX_QUEUE`]; when full, new spans are dropped and counted by the SDK, which logs the count
//! at shutdown), each export gives up after [`EXPORT_TIMEOUT`], and shutdown waits at most
//! [`SHUTDOWN_WAIT`] for the last batch.

use crate::config::OtelConfig;
use opentelemetry::trace::TracerProvider as _;
use opentelemetry_otlp::{WithExportConfig, WithHttpConfig};
use opentelemetry_sdk::trace::{BatchConfigBuilder, BatchSpanProcessor, SdkTracerProvider};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

/// The `tracing` target of the spans exported (and only those).
pub const TARGET: &str = "volcanic_trace";

/// Spans kept while the collector is slow or away; past it new spans are dropped.
const MAX_QUEUE: usize = 2048;
/// How often a batch is sent.
const EXPORT_EVERY: Duration = Duration::from_millis(500);
/// One export's limit (connect, send, answer).
const EXPORT_TIMEOUT: Duration = Duration::from_secs(3);
/// How long shutdown waits for the last batch.
const SHUTDOWN_WAIT: Duration = Duration::from_secs(2);

static ENABLED: AtomicBool = AtomicBool::new(false);

/// Whether spans are exported (`[otel]` configured and started).
pub fn enabled() -> bool {
    ENABLED.load(Ordering::Relaxed)
}

/// The running exporter; [`Traces::shutdown`] sends what is queued.
#[derive(Debug)]
pub struct Traces {
    provider: SdkTracerProvider,
}

/// Errors starting the exporter.
#[derive(Debug, thiserror::Error)]
pub enum TracesError {
    /// The OTLP exporter could not be built (e.g. its HTTP client).
    #[error("config key `otel.endpoint`: cannot start the OTLP exporter: {0}")]
    Exporter(String),
}

impl Traces {
    /// Starts the exporter to `config.endpoint` and returns the `tracing` layer that feeds it
    /// (spans of [`TARGET`] only). Errors: [`TracesError::Exporter`].
    pub fn start<S>(config: &OtelConfig) -> Result<(Traces, impl tracing_subscriber::Layer<S>), TracesError>
    where
        S: tracing::Subscriber + for<'a> tracing_subscriber::registry::LookupSpan<'a>,
    {
        use tracing_subscriber::Layer;
        let exporter = opentelemetry_otlp::SpanExporter::builder()
            .with_http()
            .with_endpoint(config.traces_url())
            .with_timeout(EXPORT_TIMEOUT)
            .with_headers(Default::default())
            .build()
            .map_err(|e| TracesError::Exporter(e.to_string()))?;
        let batch = BatchConfigBuilder::default()
            .with_max_queue_size(MAX_QUEUE)
            .with_scheduled_delay(EXPORT_EVERY)
            .build();
        let processor = BatchSpanProcessor::builder(exporter).with_batch_config(batch).build();
        let resource = opentelemetry_sdk::Resource::builder_empty()
            .with_service_name(config.service_name.clone())
            .build();
        let provider = SdkTracerProvider::builder()
            .with_span_processor(processor)
            .with_resource(resource)
            .build();
        let tracer = provider.tracer("volcanic-bot");
        let layer = tracing_opentelemetry::layer()
            .with_tracer(tracer)
            .with_filter(tracing_subscriber::filter::filter_fn(|m| m.target() == TARGET));
        ENABLED.store(true, Ordering::Relaxed);
        Ok((Traces { provider }, layer))
    }

    /// Sends the spans still queued (waiting at most [`SHUTDOWN_WAIT`]) and stops the exporter.
    pub fn shutdown(self) {
        ENABLED.store(false, Ordering::Relaxed);
        if let Err(e) = self.provider.shutdown_with_timeout(SHUTDOWN_WAIT) {
            tracing::warn!("traces: the last spans were not all exported: {e}");
        }
    }
}

/// The root span of one update (`kind`: `message`, `callback_query`, ...).
pub fn update(kind: &'static str) -> tracing::Span {
    tracing::info_span!(target: TARGET, parent: None, "update", kind, outcome = tracing::field::Empty)
}

/// An agent run: a child of `update` (the update whose prompt started it), else a root
/// (scheduled runs, A2A tasks).
pub fn run(update: Option<&tracing::Span>) -> tracing::Span {
    // No parent id (no update, or its span not recorded): an explicit root.
    tracing::info_span!(target: TARGET, parent: update.and_then(tracing::Span::id), "run")
}

/// One model request of `run`; [`model_done`] records how it ended.
pub fn model_request(run: &tracing::Span) -> tracing::Span {
    tracing::info_span!(
        target: TARGET,
        parent: run,
        "model_request",
        provider = tracing::field::Empty,
        model = tracing::field::Empty,
        outcome = tracing::field::Empty,
        input_tokens = tracing::field::Empty,
        output_tokens = tracing::field::Empty,
    )
}

/// Records the end of a model request on its span.
pub fn model_done(span: &tracing::Span, m: &volcanic_abstractions::messages::AssistantMessage) {
    span.record("provider", m.provider.as_str());
    span.record("model", m.model.as_str());
    span.record("outcome", super::metrics::stop_reason(m.stop_reason));
    span.record("input_tokens", m.usage.input);
    span.record("output_tokens", m.usage.output);
}

/// One tool run of `run`, named `tool` (a tool's name, never its arguments).
pub fn tool(run: &tracing::Span, tool: &str) -> tracing::Span {
    tracing::info_span!(target: TARGET, parent: run, "tool", tool, outcome = tracing::field::Empty)
}

/// The delivery of an update's answer to Telegram, a child of the update.
pub fn delivery(update: &tracing::Span) -> tracing::Span {
    tracing::info_span!(target: TARGET, parent: update, "delivery")
}

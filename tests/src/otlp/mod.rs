//! A small OTLP/HTTP trace receiver on `127.0.0.1`, as a collector's `otlphttp` receiver:
//! `POST /v1/traces` with an `ExportTraceServiceRequest` in protobuf
//! (`Content-Type: application/x-protobuf`, decoded with `opentelemetry-proto`) is answered
//! `200` with an empty `ExportTraceServiceResponse`; any other content type is `415`. Every span
//! received is kept ([`OtlpServer::spans`]) with its ids in hex, its parent, its times and its
//! attributes as text.

use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use opentelemetry_proto::tonic::collector::trace::v1::{ExportTraceServiceRequest, ExportTraceServiceResponse};
use opentelemetry_proto::tonic::common::v1::{AnyValue, any_value};
use prost::Message;
use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::serve::{self, ServeTask};

/// One span as received.
#[derive(Debug, Clone, PartialEq)]
pub struct ReceivedSpan {
    /// `service.name` of its resource.
    pub service: Option<String>,
    /// Trace id, 32 hex digits.
    pub trace_id: String,
    /// Span id, 16 hex digits.
    pub span_id: String,
    /// The parent's span id; `None` for a root.
    pub parent_span_id: Option<String>,
    /// Its name.
    pub name: String,
    /// Start and end, nanoseconds since the epoch.
    pub start_ns: u64,
    /// End, nanoseconds since the epoch.
    pub end_ns: u64,
    /// Attributes, each value as text.
    pub attributes: BTreeMap<String, String>,
}

/// Handle to a running receiver; clones share it.
#[derive(Debug, Clone)]
pub struct OtlpServer {
    addr: SocketAddr,
    spans: Arc<Mutex<Vec<ReceivedSpan>>>,
    _task: Arc<ServeTask>,
}

impl OtlpServer {
    /// Binds `127.0.0.1:0` and serves on the current tokio runtime until the last handle drops.
    pub async fn start() -> std::io::Result<Self> {
        let (listener, addr) = serve::bind_loopback().await?;
        let spans: Arc<Mutex<Vec<ReceivedSpan>>> = Arc::default();
        let app = Router::new()
            .route("/v1/traces", axum::routing::post(receive))
            .with_state(spans.clone());
        Ok(OtlpServer {
            addr,
            spans,
            _task: serve::spawn("OTLP receiver", listener, app),
        })
    }

    /// The base URL an exporter is given (`http://127.0.0.1:<port>`); spans go to `/v1/traces`.
    pub fn endpoint(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Every span received so far, in arrival order.
    pub fn spans(&self) -> Vec<ReceivedSpan> {
        self.spans.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// Waits until `done` holds for the spans received, polling every 50 ms; `Err` names what
    /// was received when `timeout` passed.
    pub async fn wait_for(
        &self,
        done: impl Fn(&[ReceivedSpan]) -> bool,
        timeout: Duration,
    ) -> Result<Vec<ReceivedSpan>, String> {
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            let spans = self.spans();
            if done(&spans) {
                return Ok(spans);
            }
            if tokio::time::Instant::now() >= deadline {
                let names: Vec<&str> = spans.iter().map(|s| s.name.as_str()).collect();
                return Err(format!(
                    "after {timeout:?} the receiver had {} spans: {names:?}",
                    spans.len()
                ));
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
}

async fn receive(State(spans): State<Arc<Mutex<Vec<ReceivedSpan>>>>, headers: HeaderMap, body: Bytes) -> Response {
    let protobuf = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("application/x-protobuf"));
    if !protobuf {
        return (StatusCode::UNSUPPORTED_MEDIA_TYPE, "send application/x-protobuf").into_response();
    }
    let request = match ExportTraceServiceRequest::decode(body) {
        Ok(r) => r,
        Err(e) => {
            return (
                StatusCode::BAD_REQUEST,
                format!("not an ExportTraceServiceRequest: {e}"),
            )
                .into_response();
        }
    };
    let received = flatten(request);
    spans.lock().unwrap_or_else(|e| e.into_inner()).extend(received);
    let answer = ExportTraceServiceResponse::default().encode_to_vec();
    ([(header::CONTENT_TYPE, "application/x-protobuf")], answer).into_response()
}

/// The request's spans, each with its resource's `service.name`.
fn flatten(request: ExportTraceServiceRequest) -> Vec<ReceivedSpan> {
    let mut out = Vec::new();
    for rs in request.resource_spans {
        let service = rs.resource.as_ref().and_then(|r| {
            r.attributes
                .iter()
                .find(|a| a.key == "service.name")
                .and_then(|a| a.value.as_ref().map(text))
        });
        for ss in rs.scope_spans {
            for s in ss.spans {
                out.push(ReceivedSpan {
                    service: service.clone(),
                    trace_id: hex(&s.trace_id),
                    span_id: hex(&s.span_id),
                    parent_span_id: (!s.parent_span_id.is_empty()).then(|| hex(&s.parent_span_id)),
                    name: s.name,
                    start_ns: s.start_time_unix_nano,
                    end_ns: s.end_time_unix_nano,
                    attributes: s
                        .attributes
                        .iter()
                        .map(|a| (a.key.clone(), a.value.as_ref().map(text).unwrap_or_default()))
                        .collect(),
                });
            }
        }
    }
    out
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// An attribute value as text (strings as they are, numbers and booleans printed).
fn text(v: &AnyValue) -> String {
    match &v.value {
        Some(any_value::Value::StringValue(s)) => s.clone(),
        Some(any_value::Value::IntValue(i)) => i.to_string(),
        Some(any_value::Value::DoubleValue(d)) => d.to_string(),
        Some(any_value::Value::BoolValue(b)) => b.to_string(),
        Some(other) => format!("{other:?}"),
        None => String::new(),
    }
}

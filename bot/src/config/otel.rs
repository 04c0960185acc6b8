//! `[otel]`: traces exported over OTLP/HTTP (protobuf) to a collector (docs/operations.md). The
//! section's presence turns them on. Every error names its key.

use super::{ConfigError, invalid};
use serde::Deserialize;

/// Default `service_name`: the `service.name` resource attribute of every span.
pub const DEFAULT_SERVICE_NAME: &str = "volcanic-bot";

#[derive(Debug, Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub(super) struct RawOtel {
    endpoint: Option<String>,
    service_name: Option<String>,
}

/// `[otel]`, resolved.
#[derive(Debug, Clone, PartialEq)]
pub struct OtelConfig {
    /// `endpoint`: the collector's OTLP/HTTP base URL (e.g. `http://127.0.0.1:4318`); spans are
    /// posted to `{endpoint}/v1/traces`, as the OTLP specification's `OTEL_EXPORTER_OTLP_ENDPOINT`.
    pub endpoint: String,
    /// `service_name` (default [`DEFAULT_SERVICE_NAME`]).
    pub service_name: String,
}

impl OtelConfig {
    /// Where spans are posted: `{endpoint}/v1/traces`.
    pub fn traces_url(&self) -> String {
        format!("{}/v1/traces", self.endpoint.trim_end_matches('/'))
    }
}

/// Checks `[otel]` (`None`: no section, traces are off). Errors: `endpoint` missing or not an
/// http(s) URL; an empty `service_name`.
pub(super) fn resolve(raw: Option<RawOtel>) -> Result<Option<OtelConfig>, ConfigError> {
    let Some(raw) = raw else { return Ok(None) };
    let Some(endpoint) = raw.endpoint.map(|e| e.trim().to_owned()) else {
        return Err(invalid(
            "otel.endpoint",
            "missing: the collector's OTLP/HTTP URL, e.g. \"http://127.0.0.1:4318\" (or remove [otel])",
        ));
    };
    if url::Url::parse(&endpoint).map_or(true, |u| !matches!(u.scheme(), "http" | "https")) {
        return Err(invalid(
            "otel.endpoint",
            format!("`{endpoint}` is not an http(s) URL (e.g. \"http://127.0.0.1:4318\")"),
        ));
    }
    let service_name = raw.service_name.unwrap_or_else(|| DEFAULT_SERVICE_NAME.to_owned());
    if service_name.trim().is_empty() {
        return Err(invalid("otel.service_name", "empty: leave it out for \"volcanic-bot\""));
    }
    Ok(Some(OtelConfig { endpoint, service_name }))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn raw(endpoint: Option<&str>) -> Option<RawOtel> {
        Some(RawOtel {
            endpoint: endpoint.map(str::to_owned),
            service_name: None,
        })
    }

    #[test]
    fn the_endpoint_is_required_and_checked() {
        assert_eq!(resolve(None).unwrap(), None);
        let c = resolve(raw(Some("http://127.0.0.1:4318/"))).unwrap().unwrap();
        assert_eq!(c.traces_url(), "http://127.0.0.1:4318/v1/traces");
        assert_eq!(c.service_name, DEFAULT_SERVICE_NAME);
        let e = resolve(raw(None)).unwrap_err().to_string();
        assert!(e.contains("otel.endpoint") && e.contains("missing"), "{e}");
        let e = resolve(raw(Some("127.0.0.1:4318"))).unwrap_err().to_string();
        assert!(e.contains("otel.endpoint"), "{e}");
    }
}

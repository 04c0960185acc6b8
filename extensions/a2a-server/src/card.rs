//! The agent card, an A2A 1.0 card whose `supportedInterfaces` offer the endpoint in 1.0 and in
//! 0.3. 0.3 clients read the same path (`/.well-known/agent-card.json` since 0.3.0; the older
//! `/.well-known/agent.json` is served too) but other fields, so, as the `a2a-sdk` server does,
//! the 0.3 fields are merged in: `url`, `preferredTransport`, `protocolVersion`,
//! `additionalInterfaces`, `security`, `supportsAuthenticatedExtendedCard`, and the 0.3 form of
//! the bearer scheme (`type: http`, `scheme: bearer`) beside its 1.0 form. With
//! [`CardInfo::strict`] `agent-card.json` is the bare 1.0 card (the 1.0 JSON schema, which the A2A
//! TCK checks, allows no other fields). Served with `ETag` (a hash of the body), `Last-Modified`
//! (the server's start) and `Cache-Control: max-age`.

use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use crate::config::CardInfo;

/// How long callers may cache the card, seconds.
pub const CARD_MAX_AGE: u64 = 300;
/// Where the JSON-RPC endpoint is, below the base URL.
pub const RPC_PATH: &str = "/a2a";

/// The card for a server reached at `base` (no trailing slash); `legacy` adds the 0.3 fields
/// (see the module docs).
pub fn card_json(info: &CardInfo, base: &str, extended: bool, legacy: bool) -> Value {
    let url = format!("{base}{RPC_PATH}");
    let skills: Vec<Value> = info
        .skills
        .iter()
        .map(|s| {
            json!({"id": s.id, "name": s.name, "description": s.description, "tags": s.tags,
                   "examples": s.examples})
        })
        .collect();
    let description = match (&info.extended_description, extended) {
        (Some(more), true) => format!("{}\n\n{more}", info.description),
        _ => info.description.clone(),
    };
    let mut card = json!({
        "name": info.name,
        "description": description,
        "version": info.version,
        "supportedInterfaces": [
            {"url": url, "protocolBinding": "JSONRPC", "protocolVersion": "1.0"},
            {"url": url, "protocolBinding": "JSONRPC", "protocolVersion": "0.3"},
        ],
        "capabilities": {
            "streaming": true,
            "pushNotifications": true,
            "extendedAgentCard": info.extended_description.is_some(),
        },
        "defaultInputModes": ["text/plain", "application/json"],
        "defaultOutputModes": ["text/plain", "application/json"],
        "skills": skills,
        "securitySchemes": {"bearer": {"httpAuthSecurityScheme": {"scheme": "Bearer"}}},
        "securityRequirements": [{"schemes": {"bearer": {"list": []}}}],
    });
    if legacy && let Value::Object(m) = &mut card {
        if let Some(Value::Object(bearer)) = m.get_mut("securitySchemes").and_then(|s| s.get_mut("bearer")) {
            bearer.insert("type".into(), json!("http"));
            bearer.insert("scheme".into(), json!("bearer"));
        }
        if info.extended_description.is_some() {
            m.insert("supportsAuthenticatedExtendedCard".into(), json!(true));
        }
        m.insert("url".into(), json!(url));
        m.insert("preferredTransport".into(), json!("JSONRPC"));
        m.insert("protocolVersion".into(), json!("0.3.0"));
        m.insert(
            "additionalInterfaces".into(),
            json!([{"url": url, "transport": "JSONRPC"}]),
        );
        m.insert("security".into(), json!([{"bearer": []}]));
    }
    card
}

/// The base URL of a request: the configured one, else `http://<Host>`.
pub fn base_url(info: &CardInfo, headers: &HeaderMap) -> String {
    if let Some(u) = &info.public_url {
        return u.trim_end_matches('/').to_owned();
    }
    let host = headers
        .get(header::HOST)
        .and_then(|h| h.to_str().ok())
        .filter(|h| h.chars().all(|c| c.is_ascii_alphanumeric() || ".-:[]".contains(c)))
        .unwrap_or("127.0.0.1");
    format!("http://{host}")
}

/// The card response with its caching headers (304 when `If-None-Match` matches, weakly, or,
/// without it, `If-Modified-Since` is not before `last_modified`).
pub fn card_response(card: &Value, headers: &HeaderMap, last_modified: &str) -> Response {
    let body = serde_json::to_vec(card).unwrap_or_default();
    let digest = Sha256::digest(&body);
    let etag = format!(
        "\"{}\"",
        digest.iter().take(12).map(|b| format!("{b:02x}")).collect::<String>()
    );
    // RFC 9110 §13.1.2: If-None-Match compares weakly (`W/"x"` matches `"x"`); without it,
    // If-Modified-Since at or after the last change (§13.1.3).
    let header_text = |name| headers.get(name).and_then(|v: &HeaderValue| v.to_str().ok());
    let not_modified = match header_text(header::IF_NONE_MATCH) {
        Some(v) => v
            .split(',')
            .map(str::trim)
            .any(|t| t == "*" || t.trim_start_matches("W/") == etag),
        None => header_text(header::IF_MODIFIED_SINCE).is_some_and(|since| {
            let parse = |t: &str| chrono::DateTime::parse_from_rfc2822(&t.replace("GMT", "+0000")).ok();
            matches!((parse(since), parse(last_modified)), (Some(s), Some(l)) if s >= l)
        }),
    };
    let mut out = if not_modified {
        StatusCode::NOT_MODIFIED.into_response()
    } else {
        ([(header::CONTENT_TYPE, "application/json")], body).into_response()
    };
    let h = out.headers_mut();
    if let Ok(v) = HeaderValue::from_str(&etag) {
        h.insert(header::ETAG, v);
    }
    if let Ok(v) = HeaderValue::from_str(last_modified) {
        h.insert(header::LAST_MODIFIED, v);
    }
    if let Ok(v) = HeaderValue::from_str(&format!("public, max-age={CARD_MAX_AGE}")) {
        h.insert(header::CACHE_CONTROL, v);
    }
    out
}

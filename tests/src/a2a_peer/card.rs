//! The peer's cards: 1.0 (with a 0.3 interface and top-level fields in [`PeerMode::Both`]) and
//! 0.3, with an ETag, and the configured faults.

use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde_json::json;

use super::{CARD_ETAG, CardFault, PeerMode, Shared, Wire, lock};

/// The card in `wire`'s shape (304 when `If-None-Match` names the current ETag).
pub(super) fn card(shared: &Shared, headers: &HeaderMap, wire: Wire) -> Response {
    if headers.get(header::IF_NONE_MATCH).and_then(|v| v.to_str().ok()) == Some(CARD_ETAG) {
        return (StatusCode::NOT_MODIFIED, [(header::ETAG, CARD_ETAG)]).into_response();
    }
    let (config, addr) = {
        let s = lock(shared);
        (s.config.clone(), s.addr)
    };
    let endpoint = match &config.card {
        CardFault::Endpoint(url) => url.clone(),
        CardFault::None | CardFault::Broken => format!("http://{addr}/"),
    };
    let skills = json!([{"id": "echo", "name": "echo", "description": "Echoes text and files", "tags": ["test"]}]);
    let caps = json!({"streaming": config.streaming, "pushNotifications": config.push});
    let card = match wire {
        Wire::V1 => {
            let mut interfaces = vec![json!({"url": endpoint, "protocolBinding": "JSONRPC", "protocolVersion": "1.0"})];
            let mut card = json!({"name": "scripted peer", "description": "A scripted A2A agent", "version": "1.0.0",
                "capabilities": caps, "defaultInputModes": ["text/plain"], "defaultOutputModes": ["text/plain"],
                "skills": skills});
            if config.mode == PeerMode::Both {
                interfaces.push(json!({"url": endpoint, "protocolBinding": "JSONRPC", "protocolVersion": "0.3"}));
                card["url"] = json!(endpoint);
                card["protocolVersion"] = json!("0.3.0");
                card["preferredTransport"] = json!("JSONRPC");
            }
            card["supportedInterfaces"] = json!(interfaces);
            card
        }
        Wire::V03 => json!({"name": "scripted peer", "description": "A scripted A2A agent (0.3)", "version": "1.0.0",
            "url": endpoint, "protocolVersion": "0.3.0", "preferredTransport": "JSONRPC", "capabilities": caps,
            "defaultInputModes": ["text/plain"], "defaultOutputModes": ["text/plain"], "skills": skills}),
    };
    let body = if config.card == CardFault::Broken {
        "{\"name\": \"broken".to_owned()
    } else {
        card.to_string()
    };
    (
        StatusCode::OK,
        [(header::CONTENT_TYPE, "application/json"), (header::ETAG, CARD_ETAG)],
        body,
    )
        .into_response()
}

//! A remote MCP server that requires OAuth, with its own authorization server, speaking the MCP
//! authorization spec (2025-11-25) on `127.0.0.1`:
//!
//! - `POST /mcp` (streamable HTTP, JSON answers): without a valid bearer token, 401 with
//!   `WWW-Authenticate: Bearer resource_metadata="<base>/.well-known/oauth-protected-resource/mcp"`;
//!   with one, `initialize`, `tools/list` and `tools/call`. Tools: `hello` (any token), `read`
//!   (needs the scope `files:read`) and `write` (needs `files:write`); a token without the scope
//!   a tool needs is answered 403 `insufficient_scope` naming it (MCP 2025-11-25, "Scope
//!   challenge handling"), so a client must sign in again for it.
//! - Protected-resource metadata (RFC 9728) at `/.well-known/oauth-protected-resource[/mcp]`;
//!   authorization-server metadata (RFC 8414) at `/.well-known/oauth-authorization-server`.
//! - `POST /register` (RFC 7591), `GET /authorize` (approves at once: 302 back to the registered
//!   redirect URI with `code`, `state`, `iss`; PKCE S256 required; grants the `scope` asked,
//!   `tools` when none), `POST /token` (`authorization_code` checking the verifier,
//!   `refresh_token` keeping the grant's scopes), `POST /revoke` (RFC 7009).
//!
//! Strict where a client can go wrong: an unregistered client or redirect URI, a missing or
//! wrong PKCE verifier, a reused code, a revoked token are refused.

use axum::extract::{RawQuery, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use base64::Engine;
use serde_json::{Value, json};
use sha2::Digest;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// What the server saw and holds.
#[derive(Debug, Default)]
struct St {
    base: String,
    /// The protected-resource metadata is only at [`CUSTOM_PRM`], named by the challenge.
    custom_prm: bool,
    /// Registered clients and their redirect URIs.
    clients: HashMap<String, Vec<String>>,
    /// Codes not yet exchanged: code → (client, challenge, redirect URI, scopes).
    codes: HashMap<String, (String, String, String, Vec<String>)>,
    /// Valid tokens and the scopes each grants.
    access: HashMap<String, Vec<String>>,
    refresh: HashMap<String, Vec<String>>,
    /// The `scope` parameter of every authorization request, in order.
    asked: Vec<String>,
    grants: Vec<String>,
    revoked: Vec<String>,
    calls: usize,
    next: usize,
}

/// The running server; stops when dropped.
#[derive(Debug)]
pub struct OAuthMcpServer {
    base: String,
    state: Arc<Mutex<St>>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for OAuthMcpServer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

fn lock(s: &Mutex<St>) -> std::sync::MutexGuard<'_, St> {
    s.lock().unwrap_or_else(|e| e.into_inner())
}

/// Where [`OAuthMcpServer::start_custom_prm`] serves its protected-resource metadata.
pub const CUSTOM_PRM: &str = "/custom/resource-metadata.json";

impl OAuthMcpServer {
    /// Starts it on a free port of 127.0.0.1.
    pub async fn start() -> Result<OAuthMcpServer, String> {
        Self::start_with(false).await
    }

    /// Starts one whose protected-resource metadata is not at a well-known path but only at
    /// [`CUSTOM_PRM`], which its 401 challenge names (RFC 9728 §5.1): a client must read it.
    pub async fn start_custom_prm() -> Result<OAuthMcpServer, String> {
        Self::start_with(true).await
    }

    async fn start_with(custom_prm: bool) -> Result<OAuthMcpServer, String> {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .map_err(|e| e.to_string())?;
        let port = listener.local_addr().map_err(|e| e.to_string())?.port();
        let base = format!("http://127.0.0.1:{port}");
        let state = Arc::new(Mutex::new(St {
            base: base.clone(),
            custom_prm,
            ..St::default()
        }));
        let app = axum::Router::new().route("/mcp", post(mcp).get(|| async { StatusCode::METHOD_NOT_ALLOWED }));
        let app = if custom_prm {
            app.route(CUSTOM_PRM, get(prm))
        } else {
            app.route("/.well-known/oauth-protected-resource/mcp", get(prm))
                .route("/.well-known/oauth-protected-resource", get(prm))
        };
        let app = app
            .route("/.well-known/oauth-authorization-server", get(as_metadata))
            .route("/register", post(register))
            .route("/authorize", get(authorize))
            .route("/token", post(token))
            .route("/revoke", post(revoke))
            .with_state(state.clone());
        let task = tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        Ok(OAuthMcpServer { base, state, task })
    }

    /// The MCP endpoint, `http://127.0.0.1:PORT/mcp`.
    pub fn url(&self) -> String {
        format!("{}/mcp", self.base)
    }

    /// Clients registered so far.
    pub fn registrations(&self) -> usize {
        lock(&self.state).clients.len()
    }

    /// The `grant_type` of every successful token request, in order.
    pub fn grants(&self) -> Vec<String> {
        lock(&self.state).grants.clone()
    }

    /// The `token_type_hint` of every revocation, in order.
    pub fn revocations(&self) -> Vec<String> {
        lock(&self.state).revoked.clone()
    }

    /// The `scope` parameter of every authorization request (`GET /authorize`), in order
    /// (empty when a request named none).
    pub fn authorization_scopes(&self) -> Vec<String> {
        lock(&self.state).asked.clone()
    }

    /// Successful `tools/call`s.
    pub fn calls(&self) -> usize {
        lock(&self.state).calls
    }

    /// Makes every access token issued so far invalid (as if expired): the next request is
    /// answered 401 and a client must refresh.
    pub fn expire_access_tokens(&self) {
        lock(&self.state).access.clear();
    }
}

fn form(body: &str) -> HashMap<String, String> {
    url::form_urlencoded::parse(body.as_bytes()).into_owned().collect()
}

fn oauth_error(status: StatusCode, error: &str, description: &str) -> Response {
    (
        status,
        axum::Json(json!({"error": error, "error_description": description})),
    )
        .into_response()
}

async fn prm(State(s): State<Arc<Mutex<St>>>) -> axum::Json<Value> {
    let base = lock(&s).base.clone();
    axum::Json(json!({
        "resource": format!("{base}/mcp"),
        "authorization_servers": [base],
        "scopes_supported": ["tools"],
        "bearer_methods_supported": ["header"],
    }))
}

async fn as_metadata(State(s): State<Arc<Mutex<St>>>) -> axum::Json<Value> {
    let base = lock(&s).base.clone();
    axum::Json(json!({
        "issuer": base,
        "authorization_endpoint": format!("{base}/authorize"),
        "token_endpoint": format!("{base}/token"),
        "registration_endpoint": format!("{base}/register"),
        "revocation_endpoint": format!("{base}/revoke"),
        "response_types_supported": ["code"],
        "grant_types_supported": ["authorization_code", "refresh_token"],
        "code_challenge_methods_supported": ["S256"],
        "token_endpoint_auth_methods_supported": ["none"],
        "scopes_supported": ["tools", "files:read", "files:write"],
        "authorization_response_iss_parameter_supported": true,
    }))
}

async fn register(State(s): State<Arc<Mutex<St>>>, body: String) -> Response {
    let Ok(req) = serde_json::from_str::<Value>(&body) else {
        return oauth_error(StatusCode::BAD_REQUEST, "invalid_client_metadata", "not JSON");
    };
    let uris: Vec<String> = req["redirect_uris"]
        .as_array()
        .map(|a| a.iter().filter_map(|u| u.as_str().map(str::to_owned)).collect())
        .unwrap_or_default();
    if uris.is_empty() {
        return oauth_error(StatusCode::BAD_REQUEST, "invalid_redirect_uri", "redirect_uris missing");
    }
    let mut st = lock(&s);
    st.next += 1;
    let id = format!("client-{}", st.next);
    st.clients.insert(id.clone(), uris.clone());
    (
        StatusCode::CREATED,
        axum::Json(json!({"client_id": id, "redirect_uris": uris, "token_endpoint_auth_method": "none"})),
    )
        .into_response()
}

async fn authorize(State(s): State<Arc<Mutex<St>>>, RawQuery(q): RawQuery) -> Response {
    let p = form(&q.unwrap_or_default());
    let get = |k: &str| p.get(k).cloned().unwrap_or_default();
    let mut st = lock(&s);
    let Some(uris) = st.clients.get(&get("client_id")) else {
        return oauth_error(StatusCode::BAD_REQUEST, "invalid_client", "unknown client_id");
    };
    let redirect = get("redirect_uri");
    if !uris.contains(&redirect) {
        return oauth_error(
            StatusCode::BAD_REQUEST,
            "invalid_request",
            "redirect_uri not registered",
        );
    }
    if get("code_challenge").is_empty() || get("code_challenge_method") != "S256" {
        return oauth_error(StatusCode::BAD_REQUEST, "invalid_request", "PKCE with S256 is required");
    }
    if get("response_type") != "code" {
        return oauth_error(StatusCode::BAD_REQUEST, "unsupported_response_type", "code only");
    }
    let asked = get("scope");
    let mut scopes: Vec<String> = asked.split_whitespace().map(str::to_owned).collect();
    if scopes.is_empty() {
        scopes.push("tools".into());
    }
    st.asked.push(asked);
    st.next += 1;
    let code = format!("code-{}", st.next);
    st.codes.insert(
        code.clone(),
        (get("client_id"), get("code_challenge"), redirect.clone(), scopes),
    );
    let mut back = match url::Url::parse(&redirect) {
        Ok(u) => u,
        Err(_) => return oauth_error(StatusCode::BAD_REQUEST, "invalid_request", "bad redirect_uri"),
    };
    back.query_pairs_mut()
        .append_pair("code", &code)
        .append_pair("state", &get("state"))
        .append_pair("iss", &st.base);
    (StatusCode::FOUND, [(header::LOCATION, back.to_string())]).into_response()
}

async fn token(State(s): State<Arc<Mutex<St>>>, body: String) -> Response {
    let p = form(&body);
    let get = |k: &str| p.get(k).cloned().unwrap_or_default();
    let mut st = lock(&s);
    let grant = get("grant_type");
    let scopes = match grant.as_str() {
        "authorization_code" => {
            let Some((client, challenge, redirect, scopes)) = st.codes.remove(&get("code")) else {
                return oauth_error(StatusCode::BAD_REQUEST, "invalid_grant", "unknown or used code");
            };
            let computed = base64::engine::general_purpose::URL_SAFE_NO_PAD
                .encode(sha2::Sha256::digest(get("code_verifier").as_bytes()));
            if computed != challenge {
                return oauth_error(StatusCode::BAD_REQUEST, "invalid_grant", "code_verifier does not match");
            }
            if get("client_id") != client || get("redirect_uri") != redirect {
                return oauth_error(
                    StatusCode::BAD_REQUEST,
                    "invalid_grant",
                    "client or redirect_uri differs",
                );
            }
            scopes
        }
        "refresh_token" => {
            let Some(scopes) = st.refresh.get(&get("refresh_token")).cloned() else {
                return oauth_error(
                    StatusCode::BAD_REQUEST,
                    "invalid_grant",
                    "unknown or revoked refresh token",
                );
            };
            scopes
        }
        _ => return oauth_error(StatusCode::BAD_REQUEST, "unsupported_grant_type", &grant),
    };
    st.next += 1;
    let (access, refresh) = (
        format!("access-token-{}", st.next),
        if grant == "refresh_token" {
            get("refresh_token")
        } else {
            format!("refresh-token-{}", st.next)
        },
    );
    let scope = scopes.join(" ");
    st.access.insert(access.clone(), scopes.clone());
    st.refresh.insert(refresh.clone(), scopes);
    st.grants.push(grant);
    axum::Json(json!({
        "access_token": access,
        "token_type": "Bearer",
        "expires_in": 3600,
        "refresh_token": refresh,
        "scope": scope,
    }))
    .into_response()
}

async fn revoke(State(s): State<Arc<Mutex<St>>>, body: String) -> StatusCode {
    let p = form(&body);
    let token = p.get("token").cloned().unwrap_or_default();
    let mut st = lock(&s);
    st.access.remove(&token);
    st.refresh.remove(&token);
    let hint = p.get("token_type_hint").cloned().unwrap_or_default();
    st.revoked.push(hint);
    StatusCode::OK
}

async fn mcp(State(s): State<Arc<Mutex<St>>>, headers: HeaderMap, body: String) -> Response {
    let bearer = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .map(str::to_owned);
    let mut st = lock(&s);
    let path = if st.custom_prm {
        CUSTOM_PRM
    } else {
        "/.well-known/oauth-protected-resource/mcp"
    };
    let metadata = format!("resource_metadata=\"{}{path}\"", st.base);
    let Some(granted) = bearer.and_then(|t| st.access.get(&t).cloned()) else {
        return challenged(StatusCode::UNAUTHORIZED, format!("Bearer {metadata}"), "sign in first");
    };
    let Ok(req) = serde_json::from_str::<Value>(&body) else {
        return (StatusCode::BAD_REQUEST, "not JSON").into_response();
    };
    let Some(id) = req.get("id").cloned() else {
        // A notification.
        return StatusCode::ACCEPTED.into_response();
    };
    let result = match req["method"].as_str().unwrap_or_default() {
        "initialize" => json!({
            "protocolVersion": req["params"]["protocolVersion"].as_str().unwrap_or("2025-11-25"),
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "oauth-double", "version": "1.0.0"},
        }),
        "ping" => json!({}),
        "tools/list" => json!({"tools": TOOLS.iter().map(|(name, scope, _)| json!({
            "name": name,
            "description": if scope.is_empty() {
                "Says hello to whoever signed in".to_owned()
            } else {
                format!("Answers whoever signed in with the scope `{scope}`")
            },
            "inputSchema": {"type": "object", "properties": {}},
        })).collect::<Vec<_>>()}),
        "tools/call" => {
            let name = req["params"]["name"].as_str().unwrap_or_default();
            let Some((_, scope, text)) = TOOLS.iter().find(|t| t.0 == name) else {
                return rpc_error(&id, &format!("no tool {name}"));
            };
            if !scope.is_empty() && !granted.iter().any(|g| g == scope) {
                let challenge = format!("Bearer error=\"insufficient_scope\", scope=\"{scope}\", {metadata}");
                return challenged(StatusCode::FORBIDDEN, challenge, "insufficient scope");
            }
            st.calls += 1;
            json!({"content": [{"type": "text", "text": text}]})
        }
        other => return rpc_error(&id, &format!("no method {other}")),
    };
    axum::Json(json!({"jsonrpc": "2.0", "id": id, "result": result})).into_response()
}

/// The tools: name, the scope a call needs (empty: none beyond a valid token), the answer.
const TOOLS: [(&str, &str, &str); 3] = [
    ("hello", "", "hello from the protected server"),
    ("read", "files:read", "read with files:read"),
    ("write", "files:write", "written with files:write"),
];

/// A refusal with its `WWW-Authenticate` challenge.
fn challenged(status: StatusCode, challenge: String, body: &'static str) -> Response {
    (status, [(header::WWW_AUTHENTICATE, challenge)], body).into_response()
}

fn rpc_error(id: &Value, message: &str) -> Response {
    axum::Json(json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32601, "message": message}})).into_response()
}

//! Google's OAuth 2.0 endpoints, strict: the authorization endpoint (consent is simulated: it
//! redirects at once), the token endpoint (authorization code with PKCE, refresh) and revocation.
//!
//! Rules followed (Google Identity, "OAuth 2.0 for Mobile & Desktop Apps" and "for Web Server
//! Applications"): `redirect_uri` must be registered exactly, except loopback addresses on any
//! port for Desktop clients; `code_challenge_method=S256` with a 43-128 character verifier;
//! codes are single use; errors are `{"error": "...", "error_description": "..."}`.

use std::collections::HashMap;

use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use serde_json::json;
use sha2::{Digest, Sha256};

use super::state::{Code, Grant, KNOWN_SCOPES, State, now_unix, random_token};

/// `GET /o/oauth2/v2/auth`: checks the request as Google does and "consents" at once: a 302 to
/// `redirect_uri` with `code`, `state` and the granted `scope` (requested minus the declined).
pub(crate) fn authorize(state: &mut State, q: &HashMap<String, String>) -> Response {
    let param = |k: &str| q.get(k).map(String::as_str).unwrap_or_default();
    if param("client_id") != state.client_id {
        return page(StatusCode::UNAUTHORIZED, "Error 401: invalid_client");
    }
    let redirect_uri = param("redirect_uri");
    if !redirect_allowed(state, redirect_uri) {
        return page(StatusCode::BAD_REQUEST, "Error 400: redirect_uri_mismatch");
    }
    if param("response_type") != "code" {
        return page(StatusCode::BAD_REQUEST, "Error 400: unsupported_response_type");
    }
    if q.contains_key("code_challenge") && param("code_challenge_method") != "S256" {
        return page(
            StatusCode::BAD_REQUEST,
            "Error 400: invalid_request (code_challenge_method must be S256)",
        );
    }
    let challenge = param("code_challenge");
    if challenge.len() != 43 {
        return page(
            StatusCode::BAD_REQUEST,
            "Error 400: invalid_request (code_challenge missing or malformed)",
        );
    }
    let requested: Vec<String> = param("scope").split_whitespace().map(str::to_owned).collect();
    if requested.is_empty() || requested.iter().any(|s| !KNOWN_SCOPES.contains(&s.as_str())) {
        return page(StatusCode::BAD_REQUEST, "Error 400: invalid_scope");
    }
    let granted: Vec<String> = requested.into_iter().filter(|s| !state.declined.contains(s)).collect();
    let code = format!("4/0{}", random_token(40));
    state.codes.insert(
        code.clone(),
        Code {
            client_id: state.client_id.clone(),
            redirect_uri: redirect_uri.to_owned(),
            challenge: challenge.to_owned(),
            scopes: granted.clone(),
            offline: param("access_type") == "offline",
        },
    );
    let Ok(mut target) = url::Url::parse(redirect_uri) else {
        return page(StatusCode::BAD_REQUEST, "Error 400: redirect_uri_mismatch");
    };
    target
        .query_pairs_mut()
        .append_pair("state", param("state"))
        .append_pair("code", &code)
        .append_pair("scope", &granted.join(" "));
    (StatusCode::FOUND, [(header::LOCATION, target.to_string())]).into_response()
}

fn redirect_allowed(state: &State, uri: &str) -> bool {
    if state.redirect_uris.contains(uri) {
        return true;
    }
    match url::Url::parse(uri) {
        Ok(u) => u.scheme() == "http" && matches!(u.host_str(), Some("127.0.0.1" | "localhost" | "[::1]")),
        Err(_) => false,
    }
}

fn page(status: StatusCode, text: &str) -> Response {
    (status, text.to_owned()).into_response()
}

/// An OAuth error answer.
pub(crate) fn oauth_error(status: StatusCode, error: &str, description: &str) -> Response {
    (
        status,
        axum::Json(json!({"error": error, "error_description": description})),
    )
        .into_response()
}

/// `POST /token`.
pub(crate) fn token(state: &mut State, form: &HashMap<String, String>) -> Response {
    let param = |k: &str| form.get(k).map(String::as_str).unwrap_or_default();
    if param("client_id") != state.client_id || param("client_secret") != state.client_secret {
        return oauth_error(StatusCode::UNAUTHORIZED, "invalid_client", "Unauthorized");
    }
    match param("grant_type") {
        "authorization_code" => exchange(state, form),
        "refresh_token" => refresh(state, param("refresh_token")),
        _ => oauth_error(StatusCode::BAD_REQUEST, "unsupported_grant_type", "Invalid grant_type"),
    }
}

fn exchange(state: &mut State, form: &HashMap<String, String>) -> Response {
    let param = |k: &str| form.get(k).map(String::as_str).unwrap_or_default();
    let code_text = param("code");
    if state.used_codes.contains(code_text) {
        return oauth_error(StatusCode::BAD_REQUEST, "invalid_grant", "Bad Request");
    }
    let Some(code) = state.codes.remove(code_text) else {
        return oauth_error(StatusCode::BAD_REQUEST, "invalid_grant", "Malformed auth code.");
    };
    state.used_codes.insert(code_text.to_owned());
    if code.client_id != param("client_id") || code.redirect_uri != param("redirect_uri") {
        return oauth_error(StatusCode::BAD_REQUEST, "redirect_uri_mismatch", "Bad Request");
    }
    let verifier = param("code_verifier");
    if verifier.is_empty() {
        return oauth_error(StatusCode::BAD_REQUEST, "invalid_grant", "Missing code verifier.");
    }
    let digest = URL_SAFE_NO_PAD.encode(Sha256::digest(verifier.as_bytes()));
    if !(43..=128).contains(&verifier.len()) || digest != code.challenge {
        return oauth_error(StatusCode::BAD_REQUEST, "invalid_grant", "Invalid code verifier.");
    }
    let grant = state.next_grant;
    state.next_grant += 1;
    state.grants.insert(
        grant,
        Grant {
            scopes: code.scopes.clone(),
        },
    );
    let access = state.issue_access(grant, now_unix());
    let mut body = json!({
        "access_token": access,
        "expires_in": state.token_lifetime,
        "scope": code.scopes.join(" "),
        "token_type": "Bearer",
    });
    if code.offline {
        let refresh = format!("1//0{}", random_token(60));
        state.refresh_tokens.insert(refresh.clone(), grant);
        body["refresh_token"] = json!(refresh);
    }
    if code.scopes.iter().any(|s| s == "openid") {
        body["id_token"] = json!(id_token(state, &code.scopes));
    }
    axum::Json(body).into_response()
}

fn refresh(state: &mut State, refresh_token: &str) -> Response {
    let Some(&grant) = state.refresh_tokens.get(refresh_token) else {
        return oauth_error(
            StatusCode::BAD_REQUEST,
            "invalid_grant",
            "Token has been expired or revoked.",
        );
    };
    let Some(scopes) = state.grants.get(&grant).map(|g| g.scopes.clone()) else {
        return oauth_error(
            StatusCode::BAD_REQUEST,
            "invalid_grant",
            "Token has been expired or revoked.",
        );
    };
    let access = state.issue_access(grant, now_unix());
    let mut body = json!({
        "access_token": access,
        "expires_in": state.token_lifetime,
        "scope": scopes.join(" "),
        "token_type": "Bearer",
    });
    if state.rotate_refresh {
        state.refresh_tokens.remove(refresh_token);
        let new = format!("1//0{}", random_token(60));
        state.refresh_tokens.insert(new.clone(), grant);
        body["refresh_token"] = json!(new);
    }
    axum::Json(body).into_response()
}

/// An unsigned-looking ID token (header.payload.signature, base64url) carrying the email.
fn id_token(state: &State, scopes: &[String]) -> String {
    let header = URL_SAFE_NO_PAD.encode(br#"{"alg":"RS256","typ":"JWT"}"#);
    let mut claims = json!({
        "iss": "https://accounts.google.com",
        "aud": state.client_id,
        "sub": "104242424242424242424",
        "iat": now_unix(),
        "exp": now_unix() + 3600,
    });
    if scopes.iter().any(|s| s == "email" || s.ends_with("userinfo.email")) {
        claims["email"] = json!(state.email);
        claims["email_verified"] = json!(true);
    }
    let payload = URL_SAFE_NO_PAD.encode(claims.to_string());
    format!("{header}.{payload}.{}", random_token(43))
}

/// `POST /revoke` (`token` in the form or the query): revokes the whole grant of an access or
/// refresh token; an unknown token is `invalid_token`.
pub(crate) fn revoke(state: &mut State, token: &str) -> Response {
    let grant = state
        .refresh_tokens
        .get(token)
        .copied()
        .or_else(|| state.access_tokens.get(token).map(|a| a.grant));
    let Some(grant) = grant else {
        return oauth_error(StatusCode::BAD_REQUEST, "invalid_token", "Token expired or revoked");
    };
    state.revocations.push(token.to_owned());
    state.revoke_grant(grant);
    axum::Json(json!({})).into_response()
}

//! Agent cards: fetched from `/.well-known/agent-card.json` (0.3 agents may serve only
//! `/.well-known/agent.json`), read as JSON first to pick the dialect (1.0 `supportedInterfaces`,
//! 0.3 `protocolVersion` + `url`; 1.0 preferred when both are offered), cached with their ETag and
//! fetched again when older than an hour or on request. A card that does not parse, or whose
//! endpoint is on another origin than the one that served it, is reported, not used.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Instant;

use reqwest::header::{ACCEPT, ETAG, HeaderMap, HeaderValue, IF_NONE_MATCH};
use reqwest::{Method, StatusCode};
use serde::Deserialize;
use serde_json::Value;
use url::Url;
use volcanic_a2a_dialect::{CARD_PATH, Dialect, LEGACY_CARD_PATH};

use crate::config::{CARD_MAX_AGE, origin_of};
use crate::error::{A2aError, Result};
use crate::http::{Http, MAX_CARD, Request};

/// What the client uses of a card.
#[derive(Debug, Clone, PartialEq)]
pub struct AgentCardInfo {
    /// The card's `name`.
    pub name: String,
    /// The card's `description`.
    pub description: String,
    /// Its skills: name and description.
    pub skills: Vec<(String, String)>,
    /// The dialect chosen.
    pub dialect: Dialect,
    /// The JSON-RPC endpoint of that dialect.
    pub endpoint: Url,
    /// `capabilities.streaming`.
    pub streaming: bool,
    /// `capabilities.pushNotifications`.
    pub push: bool,
}

/// The 0.3 card fields we read (A2A 0.3 `AgentCard`).
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Card03 {
    name: String,
    #[serde(default)]
    description: String,
    url: String,
    #[serde(default)]
    preferred_transport: Option<String>,
    #[serde(default)]
    additional_interfaces: Vec<Interface03>,
    #[serde(default)]
    capabilities: Caps03,
    #[serde(default)]
    skills: Vec<Skill03>,
}

#[derive(Deserialize)]
struct Interface03 {
    url: String,
    transport: String,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct Caps03 {
    #[serde(default)]
    streaming: Option<bool>,
    #[serde(default)]
    push_notifications: Option<bool>,
}

#[derive(Deserialize)]
struct Skill03 {
    name: String,
    #[serde(default)]
    description: String,
}

fn is_jsonrpc(binding: &str) -> bool {
    binding.eq_ignore_ascii_case("JSONRPC")
}

/// Reads a card served from `served_from`. Errors say why it is not used.
pub fn parse_card(served_from: &Url, body: &[u8]) -> std::result::Result<AgentCardInfo, String> {
    let v: Value = serde_json::from_slice(body).map_err(|e| format!("not JSON: {e}"))?;
    let interfaces = v.get("supportedInterfaces").and_then(Value::as_array);
    let v1 = interfaces.and_then(|list| {
        list.iter().find(|i| {
            i["protocolBinding"].as_str().is_some_and(is_jsonrpc)
                && i["protocolVersion"]
                    .as_str()
                    .is_some_and(|p| p == "1" || p.starts_with("1."))
        })
    });
    let info = if let Some(interface) = v1 {
        let card: a2a::AgentCard =
            serde_json::from_value(v.clone()).map_err(|e| format!("not an A2A 1.0 card: {e}"))?;
        AgentCardInfo {
            name: card.name,
            description: card.description,
            skills: card.skills.into_iter().map(|s| (s.name, s.description)).collect(),
            dialect: Dialect::V1,
            endpoint: endpoint(interface["url"].as_str().unwrap_or_default())?,
            streaming: card.capabilities.streaming.unwrap_or(false),
            push: card.capabilities.push_notifications.unwrap_or(false),
        }
    } else {
        card_03(&v, interfaces)?
    };
    let (served, declared) = (origin_of(served_from), origin_of(&info.endpoint));
    if served != declared {
        return Err(format!(
            "served from {} but its endpoint is {} (another origin): not used",
            served.unwrap_or_default(),
            info.endpoint
        ));
    }
    Ok(info)
}

/// A 0.3 card, or a card offering 0.3 through `supportedInterfaces` only.
fn card_03(v: &Value, interfaces: Option<&Vec<Value>>) -> std::result::Result<AgentCardInfo, String> {
    let from_list = interfaces.and_then(|list| {
        list.iter().find(|i| {
            i["protocolBinding"].as_str().is_some_and(is_jsonrpc)
                && i["protocolVersion"].as_str().is_some_and(|p| p.starts_with("0.3"))
        })
    });
    let version = v.get("protocolVersion").and_then(Value::as_str);
    if from_list.is_none() && version.is_some_and(|p| !p.starts_with("0.3")) {
        return Err(format!(
            "protocol version {} is not one this client speaks (1.0, 0.3)",
            version.unwrap_or_default()
        ));
    }
    let card: Card03 = serde_json::from_value(v.clone()).map_err(|e| {
        if interfaces.is_some() {
            format!("no JSON-RPC interface of A2A 1.0 or 0.3 ({e})")
        } else {
            format!("not an A2A 1.0 or 0.3 card: {e}")
        }
    })?;
    let url = if let Some(i) = from_list {
        i["url"].as_str().unwrap_or_default().to_owned()
    } else if card.preferred_transport.as_deref().is_none_or(is_jsonrpc) {
        card.url.clone()
    } else {
        card.additional_interfaces
            .iter()
            .find(|i| is_jsonrpc(&i.transport))
            .map(|i| i.url.clone())
            .ok_or("no JSON-RPC interface (only JSON-RPC is supported)")?
    };
    Ok(AgentCardInfo {
        name: card.name,
        description: card.description,
        skills: card.skills.into_iter().map(|s| (s.name, s.description)).collect(),
        dialect: Dialect::V03,
        endpoint: endpoint(&url)?,
        streaming: card.capabilities.streaming.unwrap_or(false),
        push: card.capabilities.push_notifications.unwrap_or(false),
    })
}

fn endpoint(url: &str) -> std::result::Result<Url, String> {
    let u = Url::parse(url).map_err(|e| format!("its endpoint `{url}` is not a URL: {e}"))?;
    match u.scheme() {
        "http" | "https" => Ok(u),
        other => Err(format!("its endpoint `{url}` has scheme {other}, not http(s)")),
    }
}

struct Cached {
    info: AgentCardInfo,
    etag: Option<HeaderValue>,
    fetched: Instant,
    /// The path that served it.
    path: &'static str,
}

/// Cards by base URL, shared by every session of the process.
#[derive(Default)]
pub(crate) struct CardCache {
    cards: Mutex<HashMap<String, Cached>>,
}

impl std::fmt::Debug for CardCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("CardCache")
    }
}

impl CardCache {
    /// The card of the agent at `base`: the cached one while fresh (unless `refresh`), else
    /// fetched (conditionally, with the cached ETag).
    pub(crate) async fn card(&self, http: &Http, base: &Url, refresh: bool) -> Result<AgentCardInfo> {
        let key = base.as_str().to_owned();
        let (etag, path) = {
            let cards = self.cards.lock().unwrap_or_else(|e| e.into_inner());
            match cards.get(&key) {
                Some(c) if !refresh && c.fetched.elapsed() < CARD_MAX_AGE => return Ok(c.info.clone()),
                Some(c) => (c.etag.clone(), Some(c.path)),
                None => (None, None),
            }
        };
        let paths: &[&'static str] = match path {
            Some(p) => &[p][..],
            None => &[CARD_PATH, LEGACY_CARD_PATH],
        };
        let mut last = None;
        for p in paths {
            let url = card_url(base, p)?;
            let mut headers = HeaderMap::new();
            headers.insert(ACCEPT, HeaderValue::from_static("application/json"));
            if let Some(tag) = &etag {
                headers.insert(IF_NONE_MATCH, tag.clone());
            }
            let req = Request {
                method: Method::GET,
                url: url.clone(),
                headers,
                body: None,
            };
            let (served, status, headers, body) = http.fetch(req, MAX_CARD).await?;
            let fail = |reason: String| A2aError::Card {
                url: url.to_string(),
                reason,
            };
            if status == StatusCode::NOT_MODIFIED {
                let mut cards = self.cards.lock().unwrap_or_else(|e| e.into_inner());
                if let Some(c) = cards.get_mut(&key) {
                    c.fetched = Instant::now();
                    return Ok(c.info.clone());
                }
                return Err(fail("HTTP 304 without a cached card".into()));
            }
            if status == StatusCode::NOT_FOUND && path.is_none() {
                last = Some(fail("HTTP 404".into()));
                continue;
            }
            if !status.is_success() {
                return Err(fail(format!("HTTP {}", status.as_u16())));
            }
            let info = parse_card(&served, &body).map_err(fail)?;
            self.cards.lock().unwrap_or_else(|e| e.into_inner()).insert(
                key,
                Cached {
                    info: info.clone(),
                    etag: headers.get(ETAG).cloned(),
                    fetched: Instant::now(),
                    path: p,
                },
            );
            return Ok(info);
        }
        Err(last.unwrap_or_else(|| A2aError::Card {
            url: base.to_string(),
            reason: "not found".into(),
        }))
    }
}

fn card_url(base: &Url, path: &str) -> Result<Url> {
    let root = base.as_str().trim_end_matches('/');
    Url::parse(&format!("{root}{path}")).map_err(|e| A2aError::Invalid(format!("{base}: {e}")))
}

#[cfg(test)]
#[path = "card_tests.rs"]
mod tests;

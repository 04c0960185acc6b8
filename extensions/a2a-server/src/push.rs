//! Push notifications: each task's events go to its webhooks in order, one at a time, with the
//! config's token (`X-A2A-Notification-Token`) and authentication (`Authorization`), retried with
//! backoff. Targets on loopback, private, link-local or metadata addresses are refused, checked
//! when the config is made (IP literals, `localhost`) and at connect time (every resolved
//! address); redirects are not followed and no proxy is used (a proxy would resolve the name
//! itself), so no hop escapes the check.

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

use reqwest::dns::{Addrs, Name, Resolve, Resolving};
use serde_json::Value;
use tokio::sync::mpsc;

use crate::store::PushTarget;

/// Delivery attempts per event and target.
pub const PUSH_ATTEMPTS: u32 = 4;
/// First retry delay; doubled each time.
pub const PUSH_BACKOFF: Duration = Duration::from_millis(250);
/// Timeout of one delivery.
pub const PUSH_TIMEOUT: Duration = Duration::from_secs(10);

/// Whether `ip` may receive pushes: the one public-address check, shared with the sandbox's
/// proxy (`volcanic_abstractions::net`).
pub use volcanic_abstractions::net::allowed_ip;

/// Checks a push URL when the config is made: `http`/`https`, a host, and no refused literal
/// address or `localhost`. Names are checked again at connect time.
pub fn check_url(raw: &str, allow_loopback: bool) -> Result<(), String> {
    let url = url::Url::parse(raw).map_err(|e| format!("push url {raw:?} is not a URL: {e}"))?;
    if !matches!(url.scheme(), "http" | "https") {
        return Err(format!("push url {raw:?}: only http and https are allowed"));
    }
    let refused = || {
        format!(
            "push url {raw:?} points at a loopback, private, link-local or metadata address; \
             this server does not send there (give a public address)"
        )
    };
    match url.host() {
        None => Err(format!("push url {raw:?} has no host")),
        Some(url::Host::Ipv4(ip)) if !allowed_ip(IpAddr::V4(ip), allow_loopback) => Err(refused()),
        Some(url::Host::Ipv6(ip)) if !allowed_ip(IpAddr::V6(ip), allow_loopback) => Err(refused()),
        Some(url::Host::Domain(d)) => {
            let d = d.trim_end_matches('.').to_ascii_lowercase();
            let local = d == "localhost" || d.ends_with(".localhost");
            if local && !allow_loopback {
                Err(refused())
            } else {
                Ok(())
            }
        }
        Some(_) => Ok(()),
    }
}

/// A resolver that drops refused addresses, so a name cannot lead a push inside.
struct GuardedResolver {
    allow_loopback: bool,
}

impl Resolve for GuardedResolver {
    fn resolve(&self, name: Name) -> Resolving {
        let allow = self.allow_loopback;
        Box::pin(async move {
            let host = name.as_str().to_owned();
            let addrs: Vec<SocketAddr> = tokio::net::lookup_host((host.as_str(), 0))
                .await?
                .filter(|a| allowed_ip(a.ip(), allow))
                .collect();
            if addrs.is_empty() {
                return Err(format!("push host {host} resolves only to refused addresses").into());
            }
            Ok(Box::new(addrs.into_iter()) as Addrs)
        })
    }
}

/// Sends pushes.
pub(crate) struct Pusher {
    client: Option<reqwest::Client>,
    pub allow_loopback: bool,
}

/// One queued delivery: the targets at the time of the event, the 1.0 payload (a
/// `StreamResponse`) and the 0.3 payload (the task).
pub(crate) struct Delivery {
    pub targets: Vec<PushTarget>,
    pub v1: Value,
    pub v03: Value,
}

impl Pusher {
    pub fn new(allow_loopback: bool) -> Pusher {
        let _ = rustls::crypto::ring::default_provider().install_default();
        let client = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            // A proxy (`HTTP(S)_PROXY`, `ALL_PROXY`) would be handed the name and resolve it
            // itself: the guarded resolver below would never run.
            .no_proxy()
            .timeout(PUSH_TIMEOUT)
            .dns_resolver(Arc::new(GuardedResolver { allow_loopback }))
            .build()
            .map_err(|e| tracing::warn!("A2A push client unavailable: {e}"))
            .ok();
        Pusher { client, allow_loopback }
    }

    /// A queue whose deliveries go out in order, one at a time.
    pub fn queue(self: &Arc<Self>) -> mpsc::UnboundedSender<Delivery> {
        let (tx, mut rx) = mpsc::unbounded_channel::<Delivery>();
        let me = self.clone();
        tokio::spawn(async move {
            while let Some(d) = rx.recv().await {
                for target in &d.targets {
                    let body = if target.v03 { &d.v03 } else { &d.v1 };
                    me.deliver(target, body).await;
                }
            }
        });
        tx
    }

    async fn deliver(&self, target: &PushTarget, body: &Value) {
        let Some(client) = &self.client else { return };
        let cfg = &target.config;
        if let Err(e) = check_url(&cfg.url, self.allow_loopback) {
            tracing::warn!("A2A push refused: {e}");
            return;
        }
        let mut delay = PUSH_BACKOFF;
        let mut last = String::new();
        for attempt in 1..=PUSH_ATTEMPTS {
            let mut req = client.post(&cfg.url).json(body);
            if let Some(token) = cfg.token.as_deref().filter(|t| !t.is_empty()) {
                req = req.header("X-A2A-Notification-Token", token);
            }
            if let Some(auth) = &cfg.authentication
                && let Some(cred) = auth.credentials.as_deref().filter(|c| !c.is_empty())
            {
                let scheme = if auth.scheme.is_empty() {
                    "Bearer"
                } else {
                    auth.scheme.as_str()
                };
                req = req.header(http::header::AUTHORIZATION, format!("{scheme} {cred}"));
            }
            match req.send().await {
                Ok(r) if r.status().is_success() => return,
                Ok(r) => last = format!("answered {}", r.status()),
                // The connector's refusal of a private address is in the error's sources.
                Err(e) => last = volcanic_abstractions::errors::error_chain(&e),
            }
            tracing::debug!(attempt, "A2A push failed: {last}");
            if attempt < PUSH_ATTEMPTS {
                tokio::time::sleep(delay).await;
                delay *= 2;
            }
        }
        tracing::warn!(task = %cfg.task_id, "A2A push not delivered after {PUSH_ATTEMPTS} attempts: {last}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Addresses that reach inside, in the forms an attacker writes them (never connected to).
    const REFUSED: &[&str] = &[
        "::127.0.0.1",        // IPv4-compatible loopback
        "::169.254.169.254",  // IPv4-compatible metadata
        "::10.0.0.1",         // IPv4-compatible private
        "::ffff:127.0.0.1",   // IPv4-mapped loopback
        "2002:7f00:1::",      // 6to4 of 127.0.0.1
        "2002:a9fe:a9fe::1",  // 6to4 of 169.254.169.254
        "2002:c0a8:101::",    // 6to4 of 192.168.1.1
        "64:ff9b::7f00:1",    // NAT64 of 127.0.0.1
        "64:ff9b::a9fe:a9fe", // NAT64 of 169.254.169.254
        "64:ff9b::a00:1",     // NAT64 of 10.0.0.1
        "64:ff9b:1::808:808", // local-use NAT64
        "198.18.0.1",         // benchmarking
        "198.19.255.254",     // benchmarking
        "192.0.0.8",          // IETF protocol assignments
        "240.0.0.1",          // reserved
        "2001:db8::1",        // documentation
        "100::1",             // discard-only
        "fd00:ec2::254",      // AWS metadata
    ];

    #[test]
    fn wrapped_and_special_purpose_addresses_are_refused() {
        for raw in REFUSED {
            let ip: IpAddr = raw.parse().unwrap_or_else(|e| panic!("{raw}: {e}"));
            assert!(!allowed_ip(ip, false), "{raw} was allowed");
            let url = match ip {
                IpAddr::V4(_) => format!("http://{raw}/hook"),
                IpAddr::V6(_) => format!("http://[{raw}]/hook"),
            };
            assert!(check_url(&url, false).is_err(), "{url} was accepted");
        }
    }

    #[test]
    fn wrapped_loopback_follows_the_loopback_switch_and_wrapped_private_never_passes() {
        for raw in ["::127.0.0.1", "2002:7f00:1::", "64:ff9b::7f00:1", "::1"] {
            let ip: IpAddr = raw.parse().unwrap_or_else(|e| panic!("{raw}: {e}"));
            assert!(allowed_ip(ip, true), "{raw} with the loopback switch");
        }
        for raw in ["::10.0.0.1", "2002:a9fe:a9fe::1", "64:ff9b::a00:1", "::"] {
            let ip: IpAddr = raw.parse().unwrap_or_else(|e| panic!("{raw}: {e}"));
            assert!(!allowed_ip(ip, true), "{raw} with the loopback switch");
        }
    }

    #[test]
    fn public_addresses_pass_also_when_wrapped() {
        for raw in [
            "8.8.8.8",
            "198.20.0.1",
            "2606:4700:4700::1111",
            "2002:808:808::1",  // 6to4 of 8.8.8.8
            "64:ff9b::808:808", // NAT64 of 8.8.8.8
        ] {
            let ip: IpAddr = raw.parse().unwrap_or_else(|e| panic!("{raw}: {e}"));
            assert!(allowed_ip(ip, false), "{raw} was refused");
        }
    }
}

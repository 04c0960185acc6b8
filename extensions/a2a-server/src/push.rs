//! Push notifications: each task's events go to its webhooks in order, one at a time, with the
//! config's token (`X-A2A-Notification-Token`) and authentication (`Authorization`), retried with
//! backoff. Targets on loopback, private, link-local or metadata addresses are refused, checked
//! when the config is made (IP literals, `localhost`) and at connect time (every resolved
//! address); redirects are not followed, so no hop escapes the check.

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

/// Whether `ip` may receive pushes (`allow_loopback`: loopback too, for tests).
pub fn allowed_ip(ip: IpAddr, allow_loopback: bool) -> bool {
    let ip = match ip {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map(IpAddr::V4).unwrap_or(IpAddr::V6(v6)),
        v4 => v4,
    };
    if ip.is_loopback() {
        return allow_loopback;
    }
    match ip {
        IpAddr::V4(v4) => {
            let o = v4.octets();
            !(v4.is_private()
                || v4.is_link_local() // 169.254/16, cloud metadata included
                || v4.is_unspecified()
                || v4.is_broadcast()
                || v4.is_multicast()
                || v4.is_documentation()
                || o[0] == 0
                || (o[0] == 100 && (64..128).contains(&o[1]))) // carrier-grade NAT
        }
        IpAddr::V6(v6) => {
            let s = v6.segments();
            !(v6.is_unspecified()
                || v6.is_multicast()
                || (s[0] & 0xfe00) == 0xfc00 // unique local
                || (s[0] & 0xffc0) == 0xfe80 // link local
                || s[0] == 0xfd00 && s[1] == 0x0ec2) // AWS metadata (fd00:ec2::254)
        }
    }
}

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

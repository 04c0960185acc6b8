//! Who may hold a connection: at most [`Gate::total`] open connections in all, and at most
//! `per_peer` from one address (an IPv6 peer by its /64, which one host usually holds whole).

use std::collections::HashMap;
use std::net::{IpAddr, Ipv6Addr};
use std::sync::{Arc, Mutex};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// `max_connections` when not configured: this, or half the soft `RLIMIT_NOFILE` if less.
pub const DEFAULT_MAX_CONNECTIONS: usize = 512;

/// The open connections, counted.
#[derive(Debug)]
pub struct Gate {
    /// One permit per open connection: the accept loop takes one before it accepts.
    pub total: Arc<Semaphore>,
    per_peer: Mutex<HashMap<IpAddr, usize>>,
    max_per_peer: usize,
}

/// One admitted connection's place: given back when dropped (the connection closed).
#[derive(Debug)]
pub struct Admitted {
    gate: Arc<Gate>,
    peer: IpAddr,
    _total: OwnedSemaphorePermit,
}

impl Gate {
    /// A gate for `total` connections, `per_peer` from one address.
    pub fn new(total: usize, per_peer: usize) -> Arc<Gate> {
        Arc::new(Gate {
            total: Arc::new(Semaphore::new(total)),
            per_peer: Mutex::new(HashMap::new()),
            max_per_peer: per_peer,
        })
    }

    /// Admits a connection from `peer` holding `permit` (one of [`total`](Self::total)), or
    /// `None` when `peer` holds `per_peer` connections already (the permit goes back).
    pub fn admit(self: &Arc<Self>, peer: IpAddr, permit: OwnedSemaphorePermit) -> Option<Admitted> {
        let peer = peer_key(peer);
        let mut counts = self.per_peer.lock().unwrap_or_else(|e| e.into_inner());
        let n = counts.entry(peer).or_default();
        if *n >= self.max_per_peer {
            return None;
        }
        *n += 1;
        Some(Admitted {
            gate: self.clone(),
            peer,
            _total: permit,
        })
    }
}

impl Drop for Admitted {
    fn drop(&mut self) {
        let mut counts = self.gate.per_peer.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(n) = counts.get_mut(&self.peer) {
            *n -= 1;
            if *n == 0 {
                counts.remove(&self.peer);
            }
        }
    }
}

/// What a peer is counted as: an IPv4 address (also when IPv4-mapped), or an IPv6 /64.
fn peer_key(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V4(_) => ip,
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => IpAddr::V4(v4),
            None => {
                let s = v6.segments();
                IpAddr::V6(Ipv6Addr::new(s[0], s[1], s[2], s[3], 0, 0, 0, 0))
            }
        },
    }
}

/// The total connection cap: `configured`, else [`DEFAULT_MAX_CONNECTIONS`] but at most half
/// the soft `RLIMIT_NOFILE` (at least 1), so the listener cannot take the descriptors the bot
/// needs for its own files and sockets. A configured value above that half is kept and logged.
pub fn max_connections(configured: Option<usize>) -> usize {
    let half = nofile_soft_limit().map(|n| (n / 2).max(1));
    match (configured, half) {
        (Some(n), Some(half)) if n > half => {
            tracing::warn!(
                "config key `http.limits.max_connections` ({n}) is above half the process's open-file \
                 limit ({half} of {}): a flood of connections can leave the bot without descriptors; \
                 raise the limit (LimitNOFILE= in the unit) or lower the key",
                half * 2
            );
            n
        }
        (Some(n), _) => n,
        (None, Some(half)) => DEFAULT_MAX_CONNECTIONS.min(half),
        (None, None) => DEFAULT_MAX_CONNECTIONS,
    }
}

/// The soft `RLIMIT_NOFILE`; `None` when unlimited or unknown.
fn nofile_soft_limit() -> Option<usize> {
    let (soft, _hard) = nix::sys::resource::getrlimit(nix::sys::resource::Resource::RLIMIT_NOFILE).ok()?;
    if soft == nix::sys::resource::RLIM_INFINITY {
        return None;
    }
    usize::try_from(soft).ok()
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn a_peer_gets_its_share_and_gives_it_back() {
        let gate = Gate::new(3, 2);
        let a: IpAddr = "192.0.2.1".parse().unwrap();
        let take = |ip| gate.admit(ip, gate.total.clone().try_acquire_owned().unwrap());
        let first = take(a).unwrap();
        let _second = take(a).unwrap();
        assert!(take(a).is_none(), "a third from the same address");
        assert_eq!(gate.total.available_permits(), 1, "the refused one's permit went back");
        drop(first);
        assert!(take(a).is_some(), "admitted again once one closed");
    }

    #[test]
    fn an_ipv6_peer_counts_by_its_64_and_a_mapped_one_as_ipv4() {
        let gate = Gate::new(10, 1);
        let take = |ip: &str| gate.admit(ip.parse().unwrap(), gate.total.clone().try_acquire_owned().unwrap());
        let _one = take("2001:db8:1:2::1").unwrap();
        assert!(take("2001:db8:1:2::ffff").is_none(), "same /64");
        assert!(take("2001:db8:1:3::1").is_some(), "another /64");
        let _v4 = take("192.0.2.7").unwrap();
        assert!(take("::ffff:192.0.2.7").is_none(), "the mapped form is the same peer");
    }

    #[test]
    fn the_default_cap_leaves_half_the_descriptors() {
        let cap = max_connections(None);
        assert!((1..=DEFAULT_MAX_CONNECTIONS).contains(&cap));
        if let Some(soft) = nofile_soft_limit() {
            assert!(cap <= soft / 2, "{cap} of {soft}");
        }
        assert_eq!(max_connections(Some(7)), 7);
    }
}

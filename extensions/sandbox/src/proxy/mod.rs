//! The allow-list's proxy, in the bot: every connection a confined process makes to
//! `127.0.0.1:`[`PROXY_PORT`](crate::PROXY_PORT) in its own network namespace arrives here as a
//! descriptor (from the bridge, over the spawn's socket pair) and is served as an HTTP proxy
//! ([`http`]): `CONNECT host:443` for HTTPS, absolute `http://` requests for HTTP, to listed
//! hosts only, on ports 80 and 443, at public addresses only (the name resolved here, each
//! address checked with [`allowed_ip`](volcanic_abstractions::net::allowed_ip)).

mod http;

use crate::AllowList;
use nix::sys::socket::{ControlMessageOwned, MsgFlags, recvmsg};
use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::sync::Arc;
use std::time::Duration;
use tokio::io::unix::AsyncFd;
use tokio::sync::Semaphore;

/// Test-only (debug builds; ignored with a warning in release builds): `name=127.0.0.1:port`
/// pairs, comma-separated. A listed name that is also allowed is connected to that address
/// whatever the port asked, and the address check is skipped for it alone, so end-to-end tests
/// reach a loopback server under a name while loopback stays refused for everything else.
pub const TEST_RESOLVE_ENV: &str = "VOLCANIC_SANDBOX_TEST_RESOLVE";

/// Connections served at once, across every confined process (tunnels count apart).
pub const MAX_CONNECTIONS: usize = 256;
/// Resolving a name and connecting to it, each.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// Reading a request's head from the confined process.
pub const HEADER_TIMEOUT: Duration = Duration::from_secs(30);
/// Waiting for an upstream HTTP response's head.
pub const RESPONSE_TIMEOUT: Duration = Duration::from_secs(60);

/// The proxy: one per sandbox, made on the first spawn that needs it, on the runtime that spawn
/// came from.
#[derive(Debug, Clone)]
pub(crate) struct NetworkProxy {
    runtime: tokio::runtime::Handle,
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    connections: Arc<Semaphore>,
    test_resolve: BTreeMap<String, SocketAddr>,
}

/// What one spawn may reach, and whose it is (for the log and the refusal's text).
#[derive(Debug)]
pub(crate) struct Rules {
    /// The hosts.
    pub allow: AllowList,
    /// The chat (session scope) or the caller the process works for.
    pub chat: String,
}

impl NetworkProxy {
    /// The proxy on the current tokio runtime. Errors: no runtime (the host spawns from
    /// outside one: a bug).
    pub(crate) fn new() -> Result<NetworkProxy, String> {
        let runtime = tokio::runtime::Handle::try_current()
            .map_err(|_| "sandbox: the allow-list proxy needs the host's async runtime".to_owned())?;
        Ok(NetworkProxy {
            runtime,
            inner: Arc::new(Inner {
                connections: Arc::new(Semaphore::new(MAX_CONNECTIONS)),
                test_resolve: test_resolve(std::env::var(TEST_RESOLVE_ENV).ok().as_deref()),
            }),
        })
    }

    /// Serves the connections arriving on `control` (the proxy's end of one spawn's socket
    /// pair) under `rules`, until the other end closes (the process and its bridge ended).
    pub(crate) fn attach(&self, control: OwnedFd, rules: Rules) {
        let inner = Arc::clone(&self.inner);
        self.runtime.spawn(receive(control, inner, Arc::new(rules)));
    }
}

/// [`TEST_RESOLVE_ENV`]'s pairs; empty in release builds and for malformed pairs (said in the log).
fn test_resolve(value: Option<&str>) -> BTreeMap<String, SocketAddr> {
    let Some(value) = value.filter(|v| !v.is_empty()) else {
        return BTreeMap::new();
    };
    if !cfg!(debug_assertions) {
        tracing::warn!("{TEST_RESOLVE_ENV} is set but ignored: it is honoured by debug builds only (tests)");
        return BTreeMap::new();
    }
    let mut map = BTreeMap::new();
    for pair in value.split(',') {
        match pair
            .split_once('=')
            .map(|(n, a)| (n.trim().to_ascii_lowercase(), a.trim().parse()))
        {
            Some((name, Ok(address))) => {
                map.insert(name, address);
            }
            _ => tracing::error!("{TEST_RESOLVE_ENV}: `{pair}` is not name=ip:port; ignored"),
        }
    }
    tracing::warn!(names = ?map.keys().collect::<Vec<_>>(), "{TEST_RESOLVE_ENV}: test names mapped (tests only)");
    map
}

/// Receives descriptors on `control` until it closes; serves each as one client connection.
async fn receive(control: OwnedFd, inner: Arc<Inner>, rules: Arc<Rules>) {
    // SAFETY: an owned descriptor, open and the same until the AsyncFd drops it.
    #[allow(unsafe_code)]
    let registered = unsafe { AsyncFd::register_with_interest(control, tokio::io::Interest::READABLE) };
    let control = match registered {
        Ok(fd) => fd,
        Err(e) => {
            tracing::error!(chat = %rules.chat, "sandbox proxy: cannot watch the control socket: {e}");
            return;
        }
    };
    loop {
        let Ok(mut ready) = control.readable().await else {
            return;
        };
        let received = match ready.try_io(|fd| receive_one(fd.get_ref().as_raw_fd())) {
            Ok(received) => received,
            Err(_would_block) => continue,
        };
        let stream = match received {
            Ok(Some(fd)) => fd,
            Ok(None) => return,
            Err(e) => {
                tracing::warn!(chat = %rules.chat, "sandbox proxy: control socket: {e}");
                return;
            }
        };
        let Ok(permit) = Arc::clone(&inner.connections).try_acquire_owned() else {
            tracing::warn!(chat = %rules.chat, "sandbox proxy: {MAX_CONNECTIONS} connections open; one refused");
            continue;
        };
        let (inner, rules) = (Arc::clone(&inner), Arc::clone(&rules));
        tokio::spawn(async move {
            http::serve(stream, inner, rules).await;
            drop(permit);
        });
    }
}

/// One message from the bridge: `Some(connection)`, `None` at end of stream. A message without a
/// descriptor is skipped (`Some` of nothing is never made up).
fn receive_one(control: RawFd) -> std::io::Result<Option<OwnedFd>> {
    loop {
        let mut byte = [0u8; 1];
        let mut iov = [std::io::IoSliceMut::new(&mut byte)];
        let mut space = nix::cmsg_space!([RawFd; 1]);
        let message = recvmsg::<()>(
            control,
            &mut iov,
            Some(&mut space),
            MsgFlags::MSG_DONTWAIT | MsgFlags::MSG_CMSG_CLOEXEC,
        )
        .map_err(std::io::Error::from)?;
        let mut received = None;
        for item in message.cmsgs().map_err(std::io::Error::from)? {
            if let ControlMessageOwned::ScmRights(fds) = item {
                for fd in fds {
                    // SAFETY: a descriptor SCM_RIGHTS just installed in this process: owned
                    // by nothing else; all but the first are closed when dropped.
                    #[allow(unsafe_code)]
                    let owned = unsafe { OwnedFd::from_raw_fd(fd) };
                    received.get_or_insert(owned);
                }
            }
        }
        match (received, message.bytes) {
            (Some(fd), _) => return Ok(Some(fd)),
            (None, 0) => return Ok(None),
            (None, _) => continue,
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn test_names_are_read_in_debug_builds_and_bad_pairs_dropped() {
        let map = test_resolve(Some("Api.Test=127.0.0.1:8080, bad, other=nope"));
        if cfg!(debug_assertions) {
            assert_eq!(map.len(), 1);
            assert_eq!(map["api.test"], "127.0.0.1:8080".parse().unwrap());
        } else {
            assert!(map.is_empty());
        }
        assert!(test_resolve(None).is_empty());
    }
}

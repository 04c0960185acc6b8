//! The bot's one HTTP listener (`[http] listen`, reached from outside at `[http] public_url`):
//! host features mount their routes on it (OAuth callbacks, the A2A server, A2A push
//! receivers), and so does webhook mode. It runs only when something has routes to serve.
//!
//! It is public (the A2A card and the webhook must be), so no client may hold more of the bot
//! than [`HttpLimits`] allows (`[http.limits]`): a request head must arrive within
//! `header_timeout`, a body within `body_timeout`; a connection where nothing moved for
//! `idle_timeout` (no handler working) is closed; at most `max_connections` are open (then the
//! listener stops accepting until one closes), at most `max_connections_per_peer` from one
//! address (the one past it is closed at once). Authenticated routes check their credential
//! before reading a body (the webhook its secret header, A2A its bearer token).

mod conn;
mod gate;

use crate::config::HttpLimits;
use anyhow::Context;
use std::time::{Duration, Instant};
use tokio::net::TcpListener;
use tokio::task::{JoinHandle, JoinSet};
use tokio_util::sync::CancellationToken;

/// How long shutdown waits for the connections' requests in flight before closing them.
const SHUTDOWN_WAIT: Duration = Duration::from_secs(10);

/// At most one warning per this long about refused connections or failed accepts.
const WARN_EVERY: Duration = Duration::from_secs(60);

/// Binds `listen` (`host:port`). Errors: the address cannot be bound (named with its config key).
pub async fn bind(listen: &str) -> anyhow::Result<TcpListener> {
    TcpListener::bind(listen)
        .await
        .with_context(|| format!("config key `http.listen`: cannot listen on {listen}"))
}

/// Serves `app` on `listener` within `limits` until `stop` is cancelled, then lets the requests
/// in flight finish (for at most [`SHUTDOWN_WAIT`]).
pub fn serve(listener: TcpListener, app: axum::Router, limits: HttpLimits, stop: CancellationToken) -> JoinHandle<()> {
    let total = gate::max_connections(limits.max_connections);
    tracing::info!(
        "HTTP limits: {total} connections, {} per peer; head within {:?}, body within {:?}, idle {:?}",
        limits.max_connections_per_peer,
        limits.header_timeout,
        limits.body_timeout,
        limits.idle_timeout
    );
    let gate = gate::Gate::new(total, limits.max_connections_per_peer);
    tokio::spawn(async move {
        let mut conns = JoinSet::new();
        let mut told = Told::default();
        loop {
            // A place first: past the cap, connections wait in the kernel's backlog.
            let permit = tokio::select! {
                () = stop.cancelled() => break,
                p = gate.total.clone().acquire_owned() => match p {
                    Ok(p) => p,
                    Err(_) => break,
                },
            };
            let accepted = tokio::select! {
                () = stop.cancelled() => break,
                a = listener.accept() => a,
            };
            while conns.try_join_next().is_some() {}
            let (tcp, peer) = match accepted {
                Ok(a) => a,
                Err(e) => {
                    accept_failed(&e, &mut told).await;
                    continue;
                }
            };
            let Some(admitted) = gate.admit(peer.ip(), permit) else {
                // Closed at once: it costs a descriptor for no longer than this.
                drop(tcp);
                told.refused(peer.ip());
                continue;
            };
            // Without TCP_NODELAY the end of a short SSE stream waits ~40 ms on a delayed ACK.
            let _ = tcp.set_nodelay(true);
            conns.spawn(conn::serve(tcp, app.clone(), limits, stop.clone(), admitted));
        }
        drop(listener);
        if tokio::time::timeout(SHUTDOWN_WAIT, async { while conns.join_next().await.is_some() {} })
            .await
            .is_err()
        {
            tracing::warn!("HTTP connections still open {SHUTDOWN_WAIT:?} after shutdown began: closed");
        }
    })
}

/// Whether reading a request body failed because `http.limits.body_timeout_secs` passed.
pub fn timed_out(e: &axum::Error) -> bool {
    let mut cause: Option<&(dyn std::error::Error + 'static)> = Some(e);
    while let Some(c) = cause {
        if c.is::<conn::BodyTimedOut>() {
            return true;
        }
        cause = c.source();
    }
    false
}

/// A failed `accept`: a connection that went away before it was taken is passed over; anything
/// else (out of descriptors or memory) is logged and waited out briefly, so the loop does not spin.
async fn accept_failed(e: &std::io::Error, told: &mut Told) {
    use std::io::ErrorKind::{ConnectionAborted, ConnectionRefused, ConnectionReset};
    if matches!(e.kind(), ConnectionAborted | ConnectionRefused | ConnectionReset) {
        return;
    }
    if told.due() {
        tracing::warn!("the HTTP listener cannot accept connections: {e}; retrying");
    }
    tokio::time::sleep(Duration::from_millis(200)).await;
}

/// Rate-limits the listener's warnings ([`WARN_EVERY`]).
#[derive(Default)]
struct Told {
    last: Option<Instant>,
    refused: u64,
}

impl Told {
    fn due(&mut self) -> bool {
        let due = self.last.is_none_or(|t| t.elapsed() >= WARN_EVERY);
        if due {
            self.last = Some(Instant::now());
        }
        due
    }

    fn refused(&mut self, peer: std::net::IpAddr) {
        self.refused += 1;
        if self.due() {
            tracing::warn!(
                %peer,
                "HTTP connection refused: its address holds `http.limits.max_connections_per_peer` \
                 connections ({} refused since the last warning)",
                self.refused
            );
            self.refused = 0;
        }
    }
}

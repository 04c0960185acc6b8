//! The bot's one HTTP listener (`[http] listen`, reached from outside at `[http] public_url`):
//! host features mount their routes on it (OAuth callbacks, the A2A server, A2A push
//! receivers), and so does webhook mode. It runs only when something has routes to serve.

use anyhow::Context;
use tokio::net::TcpListener;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

/// Binds `listen` (`host:port`). Errors: the address cannot be bound (named with its config key).
pub async fn bind(listen: &str) -> anyhow::Result<TcpListener> {
    TcpListener::bind(listen)
        .await
        .with_context(|| format!("config key `http.listen`: cannot listen on {listen}"))
}

/// Serves `app` on `listener` until `stop` is cancelled, then finishes the requests in flight.
pub fn serve(listener: TcpListener, app: axum::Router, stop: CancellationToken) -> JoinHandle<()> {
    // Without TCP_NODELAY the end of a short SSE stream waits ~40 ms on a delayed ACK.
    let listener = axum::serve::ListenerExt::tap_io(listener, |tcp| {
        let _ = tcp.set_nodelay(true);
    });
    tokio::spawn(async move {
        let served = axum::serve(listener, app)
            .with_graceful_shutdown(stop.cancelled_owned())
            .await;
        if let Err(e) = served {
            tracing::error!("the HTTP listener failed: {e}");
        }
    })
}

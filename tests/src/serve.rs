//! What every HTTP double does to run: a listener on a free port of `127.0.0.1`, its router
//! served on the current tokio runtime, the serving task aborted when the double's last handle
//! goes.

use axum::Router;
use std::net::SocketAddr;
use std::sync::Arc;
use tokio::net::TcpListener;
use tokio::task::JoinHandle;

/// Aborts its task when dropped; a double's clones share it in an `Arc`.
#[derive(Debug)]
pub(crate) struct ServeTask(pub(crate) JoinHandle<()>);

impl Drop for ServeTask {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// Binds `127.0.0.1:0`: the listener and the address it got (for routers that must know it).
pub(crate) async fn bind_loopback() -> std::io::Result<(TcpListener, SocketAddr)> {
    let listener = TcpListener::bind(("127.0.0.1", 0)).await?;
    let addr = listener.local_addr()?;
    Ok((listener, addr))
}

/// Serves `app` on `listener` until the returned handle's last clone drops; a serving error is
/// logged with `double` (e.g. "Bot API double") as the one that stopped.
pub(crate) fn spawn(double: &'static str, listener: TcpListener, app: Router) -> Arc<ServeTask> {
    let task = tokio::spawn(async move {
        if let Err(error) = axum::serve(listener, app).await {
            tracing::warn!(%error, "volcanic-testkit {double} stopped");
        }
    });
    Arc::new(ServeTask(task))
}

//! One admitted connection, served by hyper with a timer (without one hyper's header-read
//! timeout never fires): the head within `header_timeout`, the body within `body_timeout`, and
//! closed after `idle_timeout` without a byte moving while no handler works for it.

use super::gate::Admitted;
use crate::config::HttpLimits;
use axum::body::{Body, Bytes, HttpBody};
use http_body::{Frame, SizeHint};
use hyper::body::Incoming;
use hyper_util::rt::{TokioIo, TokioTimer};
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::task::{Context, Poll};
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;
use tokio::time::{Instant, Sleep};
use tokio_util::sync::CancellationToken;
use tower::ServiceExt;

/// Serves `tcp` until the client closes, a limit closes it, or `stop` (then the request in
/// flight finishes first). `admitted` is given back when this returns.
pub async fn serve(tcp: TcpStream, app: axum::Router, limits: HttpLimits, stop: CancellationToken, admitted: Admitted) {
    let activity = Arc::new(Activity::new());
    let io = TokioIo::new(Tracked {
        inner: tcp,
        activity: activity.clone(),
    });
    let service = {
        let activity = activity.clone();
        hyper::service::service_fn(move |req: hyper::Request<Incoming>| {
            let busy = Busy::new(activity.clone());
            let req = req.map(|body| Body::new(Deadline::new(body, limits.body_timeout)));
            let app = app.clone();
            async move {
                let response = app.oneshot(req).await;
                drop(busy);
                response
            }
        })
    };
    let conn = hyper::server::conn::http1::Builder::new()
        .timer(TokioTimer::new())
        .header_read_timeout(limits.header_timeout)
        .serve_connection(io, service)
        .with_upgrades();
    tokio::pin!(conn);
    let mut stopping = false;
    loop {
        tokio::select! {
            served = conn.as_mut() => {
                if let Err(e) = served {
                    tracing::debug!("HTTP connection ended: {e}");
                }
                break;
            }
            () = stop.cancelled(), if !stopping => {
                stopping = true;
                conn.as_mut().graceful_shutdown();
            }
            () = activity.idle_for(limits.idle_timeout) => {
                tracing::debug!("HTTP connection closed: idle for {:?}", limits.idle_timeout);
                break;
            }
        }
    }
    drop(admitted);
}

/// When bytes last moved on a connection, and how many of its requests a handler works on.
#[derive(Debug)]
struct Activity {
    since: Instant,
    /// Milliseconds after `since`.
    last: AtomicU64,
    busy: AtomicUsize,
}

impl Activity {
    fn new() -> Self {
        Activity {
            since: Instant::now(),
            last: AtomicU64::new(0),
            busy: AtomicUsize::new(0),
        }
    }

    fn touch(&self) {
        let ms = u64::try_from(self.since.elapsed().as_millis()).unwrap_or(u64::MAX);
        self.last.store(ms, Ordering::Relaxed);
    }

    /// Returns once nothing moved for `limit` while no handler was busy.
    async fn idle_for(&self, limit: Duration) {
        loop {
            let last = self.since + Duration::from_millis(self.last.load(Ordering::Relaxed));
            if self.busy.load(Ordering::Relaxed) == 0 && last.elapsed() >= limit {
                return;
            }
            // Busy: look again a whole period later (its end counts as activity).
            let next = if self.busy.load(Ordering::Relaxed) > 0 {
                Instant::now() + limit
            } else {
                last + limit
            };
            tokio::time::sleep_until(next).await;
        }
    }
}

/// A handler at work on one request (the connection is not idle meanwhile).
struct Busy(Arc<Activity>);

impl Busy {
    fn new(activity: Arc<Activity>) -> Self {
        activity.busy.fetch_add(1, Ordering::Relaxed);
        Busy(activity)
    }
}

impl Drop for Busy {
    fn drop(&mut self) {
        self.0.touch();
        self.0.busy.fetch_sub(1, Ordering::Relaxed);
    }
}

/// The socket, noting each byte that moves.
struct Tracked {
    inner: TcpStream,
    activity: Arc<Activity>,
}

impl AsyncRead for Tracked {
    fn poll_read(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<std::io::Result<()>> {
        let before = buf.filled().len();
        let r = Pin::new(&mut self.inner).poll_read(cx, buf);
        if buf.filled().len() > before {
            self.activity.touch();
        }
        r
    }
}

impl AsyncWrite for Tracked {
    fn poll_write(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<std::io::Result<usize>> {
        let r = Pin::new(&mut self.inner).poll_write(cx, buf);
        if matches!(r, Poll::Ready(Ok(n)) if n > 0) {
            self.activity.touch();
        }
        r
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[std::io::IoSlice<'_>],
    ) -> Poll<std::io::Result<usize>> {
        let r = Pin::new(&mut self.inner).poll_write_vectored(cx, bufs);
        if matches!(r, Poll::Ready(Ok(n)) if n > 0) {
            self.activity.touch();
        }
        r
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

/// A request body that fails once its deadline passed (a body trickling in byte by byte holds
/// a connection and a buffer no longer than that).
struct Deadline {
    body: Incoming,
    deadline: Pin<Box<Sleep>>,
    within: Duration,
}

/// The body did not arrive whole in time.
#[derive(Debug, thiserror::Error)]
#[error("the request body did not arrive within {0:?} (`http.limits.body_timeout_secs`)")]
pub struct BodyTimedOut(Duration);

impl Deadline {
    fn new(body: Incoming, within: Duration) -> Self {
        Deadline {
            body,
            deadline: Box::pin(tokio::time::sleep(within)),
            within,
        }
    }
}

impl HttpBody for Deadline {
    type Data = Bytes;
    type Error = Box<dyn std::error::Error + Send + Sync>;

    fn poll_frame(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
        if let Poll::Ready(frame) = Pin::new(&mut self.body).poll_frame(cx) {
            return Poll::Ready(frame.map(|f| f.map_err(Into::into)));
        }
        match self.deadline.as_mut().poll(cx) {
            Poll::Ready(()) => Poll::Ready(Some(Err(Box::new(BodyTimedOut(self.within))))),
            Poll::Pending => Poll::Pending,
        }
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.body.size_hint()
    }
}

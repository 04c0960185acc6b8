//! One client connection of the proxy: HTTP/1.1 (hyper), `CONNECT` tunnels and absolute
//! `http://` requests, each target checked against the spawn's [`Rules`].

use super::{CONNECT_TIMEOUT, HEADER_TIMEOUT, Inner, RESPONSE_TIMEOUT, Rules};
use bytes::Bytes;
use http_body_util::{BodyExt, Full, combinators::BoxBody};
use hyper::body::Incoming;
use hyper::header::{HOST, HeaderValue};
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::{TokioIo, TokioTimer};
use std::net::SocketAddr;
use std::os::fd::OwnedFd;
use std::sync::Arc;
use tokio::net::TcpStream;
use volcanic_abstractions::net::allowed_ip;

/// Ports a listed host may be reached on: HTTP and HTTPS.
const PORTS: &[u16] = &[80, 443];

/// Where an owner changes a chat's network policy (said in every refusal).
const WHERE: &str =
    "an owner changes it with /network in the chat, or `[sandbox] allow_hosts` in the bot's config (docs/sandbox.md)";

type Body = BoxBody<Bytes, hyper::Error>;

/// Why a request was not forwarded.
#[derive(Debug)]
enum Refusal {
    /// Not a proxy request (origin-form, or a scheme other than `http` without `CONNECT`).
    NotProxy,
    /// The host is not on the list.
    NotListed(String),
    /// A listed host on a port other than 80 or 443.
    Port(String, u16),
    /// Every address of a listed host is loopback, private, link-local or special.
    Address(String),
    /// The host could not be resolved or reached, or answered nothing in time.
    Upstream(String, String),
    /// Too many connections open.
    Busy,
}

impl Refusal {
    /// The proxy's answer, one line of text; policy refusals are logged with the chat and host.
    fn response(&self, rules: &Rules) -> Response<Body> {
        let (status, text) = match self {
            Refusal::NotProxy => (
                StatusCode::BAD_REQUEST,
                "volcanic sandbox proxy: send CONNECT host:443 or an absolute http:// request".to_owned(),
            ),
            Refusal::NotListed(host) => (
                StatusCode::FORBIDDEN,
                format!(
                    "volcanic sandbox: the network policy refused {host}: it is not on this chat's allow-list; {WHERE}"
                ),
            ),
            Refusal::Port(host, port) => (
                StatusCode::FORBIDDEN,
                format!(
                    "volcanic sandbox: the network policy refused {host}:{port}: only ports 80 and 443 are reachable"
                ),
            ),
            Refusal::Address(host) => (
                StatusCode::FORBIDDEN,
                format!(
                    "volcanic sandbox: the network policy refused {host}: it resolves only to loopback, private, \
                     link-local or metadata addresses"
                ),
            ),
            Refusal::Upstream(host, why) => (
                StatusCode::BAD_GATEWAY,
                format!("volcanic sandbox proxy: cannot reach {host}: {why}"),
            ),
            Refusal::Busy => (
                StatusCode::SERVICE_UNAVAILABLE,
                "volcanic sandbox proxy: too many connections open".to_owned(),
            ),
        };
        if status == StatusCode::FORBIDDEN {
            tracing::warn!(chat = %rules.chat, "sandbox: {text}");
        }
        let mut response = Response::new(text_body(format!("{text}\n")));
        *response.status_mut() = status;
        response
    }
}

fn text_body(text: String) -> Body {
    Full::new(Bytes::from(text)).map_err(|never| match never {}).boxed()
}

/// Serves one client connection (a descriptor from the bridge) until it closes.
pub(super) async fn serve(stream: OwnedFd, inner: Arc<Inner>, rules: Arc<Rules>) {
    let stream = std::net::TcpStream::from(stream);
    let stream = match stream.set_nonblocking(true).and_then(|()| TcpStream::from_std(stream)) {
        Ok(s) => s,
        Err(e) => {
            tracing::warn!(chat = %rules.chat, "sandbox proxy: a bridged connection is unusable: {e}");
            return;
        }
    };
    let service = hyper::service::service_fn(move |request| {
        let (inner, rules) = (Arc::clone(&inner), Arc::clone(&rules));
        async move {
            let answer = route(request, &inner, &rules).await;
            Ok::<_, std::convert::Infallible>(answer.unwrap_or_else(|refusal| refusal.response(&rules)))
        }
    });
    let connection = hyper::server::conn::http1::Builder::new()
        .timer(TokioTimer::new())
        .header_read_timeout(HEADER_TIMEOUT)
        .serve_connection(TokioIo::new(stream), service)
        .with_upgrades();
    // A client that goes away mid-request is its own business.
    let _ = connection.await;
}

/// The target of a proxy request: `(host, port, connect)`.
fn target(request: &Request<Incoming>) -> Result<(String, u16, bool), Refusal> {
    let uri = request.uri();
    let connect = request.method() == Method::CONNECT;
    if !connect && uri.scheme_str() != Some("http") {
        return Err(Refusal::NotProxy);
    }
    let authority = uri.authority().ok_or(Refusal::NotProxy)?;
    let default = if connect { 443 } else { 80 };
    let host = authority.host().trim_start_matches('[').trim_end_matches(']');
    Ok((
        host.to_ascii_lowercase(),
        authority.port_u16().unwrap_or(default),
        connect,
    ))
}

async fn route(request: Request<Incoming>, inner: &Inner, rules: &Rules) -> Result<Response<Body>, Refusal> {
    let (host, port, connect) = target(&request)?;
    if !rules.allow.allows(&host) {
        return Err(Refusal::NotListed(host));
    }
    let upstream = open(inner, &host, port).await?;
    if connect {
        tunnel(request, upstream, inner)
    } else {
        forward(request, upstream, &host).await
    }
}

/// A connection to a listed `host`:`port`: a test name's own address, else the first public
/// address the name resolves to that answers.
async fn open(inner: &Inner, host: &str, port: u16) -> Result<TcpStream, Refusal> {
    let upstream = |why: String| Refusal::Upstream(host.to_owned(), why);
    let addresses: Vec<SocketAddr> = match inner.test_resolve.get(host.trim_end_matches('.')) {
        Some(address) => vec![*address],
        None => {
            if !PORTS.contains(&port) {
                return Err(Refusal::Port(host.to_owned(), port));
            }
            let resolved = tokio::time::timeout(CONNECT_TIMEOUT, tokio::net::lookup_host((host, port)))
                .await
                .map_err(|_| upstream("resolving timed out".to_owned()))?
                .map_err(|e| upstream(format!("cannot resolve: {e}")))?;
            let public: Vec<SocketAddr> = resolved.filter(|a| allowed_ip(a.ip(), false)).collect();
            if public.is_empty() {
                return Err(Refusal::Address(host.to_owned()));
            }
            public
        }
    };
    let mut last = String::from("no address");
    for address in addresses {
        match tokio::time::timeout(CONNECT_TIMEOUT, TcpStream::connect(address)).await {
            Ok(Ok(stream)) => return Ok(stream),
            Ok(Err(e)) => last = format!("{address}: {e}"),
            Err(_) => last = format!("{address}: connecting timed out"),
        }
    }
    Err(upstream(last))
}

/// Answers `CONNECT` with 200 and then copies bytes both ways until either side closes.
fn tunnel(request: Request<Incoming>, mut upstream: TcpStream, inner: &Inner) -> Result<Response<Body>, Refusal> {
    let permit = Arc::clone(&inner.connections)
        .try_acquire_owned()
        .map_err(|_| Refusal::Busy)?;
    tokio::spawn(async move {
        if let Ok(upgraded) = hyper::upgrade::on(request).await {
            let _ = tokio::io::copy_bidirectional(&mut TokioIo::new(upgraded), &mut upstream).await;
        }
        drop(permit);
    });
    Ok(Response::new(text_body(String::new())))
}

/// Sends an absolute `http://` request on to `upstream` in origin form, without the proxy's
/// own headers, and relays the answer.
async fn forward(mut request: Request<Incoming>, upstream: TcpStream, host: &str) -> Result<Response<Body>, Refusal> {
    let fail = |why: String| Refusal::Upstream(host.to_owned(), why);
    let (mut sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(upstream))
        .await
        .map_err(|e| fail(e.to_string()))?;
    tokio::spawn(connection);
    let authority = request.uri().authority().map(|a| a.as_str().to_owned());
    let path = request
        .uri()
        .path_and_query()
        .map_or("/", |p| p.as_str())
        .parse()
        .map_err(|_| Refusal::NotProxy)?;
    *request.uri_mut() = path;
    let headers = request.headers_mut();
    for name in ["proxy-connection", "proxy-authorization", "proxy-authenticate"] {
        headers.remove(name);
    }
    if !headers.contains_key(HOST)
        && let Some(value) = authority.and_then(|a| HeaderValue::from_str(&a).ok())
    {
        headers.insert(HOST, value);
    }
    let response = tokio::time::timeout(RESPONSE_TIMEOUT, sender.send_request(request))
        .await
        .map_err(|_| fail("no answer in time".to_owned()))?
        .map_err(|e| fail(e.to_string()))?;
    Ok(response.map(BodyExt::boxed))
}

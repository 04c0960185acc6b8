//! The MCP client over streamable HTTP against the pinned `server-everything`, started bound to
//! 127.0.0.1 (a preload wraps its `listen`), with a static header.

use serde_json::json;
use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio_util::sync::CancellationToken;
use volcanic_abstractions::processes::SecretRedactor;
use volcanic_mcp::client::Handler;
use volcanic_mcp::config::{DEFAULT_CALL_TIMEOUT, ServerSpec, Transport};
use volcanic_mcp::server::Connection;

struct NoRedaction;
impl SecretRedactor for NoRedaction {
    fn redact(&self, text: &str) -> String {
        text.to_owned()
    }
    fn add_secret(&self, _: &str) {}
}

/// Kills the server when the test ends, however it ends.
struct Child(std::process::Child);
impl Drop for Child {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[tokio::test]
async fn everything_over_streamable_http_lists_and_calls_tools() {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    let js = volcanic_testkit::testdeps::server_everything();
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .unwrap_or_else(|e| panic!("no free port: {e}"));
    let _server = Child(
        std::process::Command::new("node")
            .arg("-r")
            .arg(dir.join("tests/fixtures/loopback.cjs"))
            .arg(&js)
            .arg("streamableHttp")
            .env("PORT", port.to_string())
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start node: {e}")),
    );
    let deadline = Instant::now() + Duration::from_secs(20);
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(
            Instant::now() < deadline,
            "server-everything did not listen on 127.0.0.1:{port}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let spec = ServerSpec {
        name: "remote".into(),
        transport: Transport::Http {
            url: format!("http://127.0.0.1:{port}/mcp"),
            headers: BTreeMap::from([("X-Test".to_owned(), "yes".to_owned())]),
        },
        include_tools: Vec::new(),
        exclude_tools: Vec::new(),
        call_timeout: DEFAULT_CALL_TIMEOUT,
    };
    let (conn, tools) = match Connection::start(&spec, None, Arc::new(NoRedaction), Handler::default()).await {
        Ok(started) => started,
        Err(e) => panic!("did not start over HTTP: {e}"),
    };
    assert!(tools.iter().any(|t| t.name == "get-sum"), "{tools:?}");
    let sum = conn
        .call(
            "get-sum",
            json!({"a": 1, "b": 2}),
            Duration::from_secs(30),
            CancellationToken::new(),
        )
        .await;
    assert!(matches!(&sum, Ok(r) if r.text_content().contains('3')), "{sum:?}");
    conn.stop();
}

/// A remote server that wants a sign-in answers 401 with its protected-resource metadata: the
/// start says "needs login" (not a failure), with the challenge.
#[tokio::test]
async fn a_server_answering_401_needs_login() {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let port = listener.local_addr().map(|a| a.port()).unwrap_or_default();
    let challenge =
        format!("Bearer resource_metadata=\"http://127.0.0.1:{port}/.well-known/oauth-protected-resource\"");
    let header = challenge.clone();
    let app = axum::Router::new().fallback(move || {
        let header = header.clone();
        async move {
            (
                axum::http::StatusCode::UNAUTHORIZED,
                [(axum::http::header::WWW_AUTHENTICATE, header)],
                "sign in first",
            )
        }
    });
    let server = tokio::spawn(async move { axum::serve(listener, app).await });
    let spec = ServerSpec {
        name: "locked".into(),
        transport: Transport::Http {
            url: format!("http://127.0.0.1:{port}/mcp"),
            headers: BTreeMap::new(),
        },
        include_tools: Vec::new(),
        exclude_tools: Vec::new(),
        call_timeout: DEFAULT_CALL_TIMEOUT,
    };
    let started = Connection::start(&spec, None, Arc::new(NoRedaction), Handler::default()).await;
    match started {
        Err(volcanic_mcp::server::StartError::NeedsLogin(c)) => assert_eq!(c, challenge),
        Err(e) => panic!("not a sign-in: {e}"),
        Ok(_) => panic!("started without a sign-in"),
    }
    server.abort();
}

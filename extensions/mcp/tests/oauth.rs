//! The OAuth code ([`volcanic_mcp::oauth`]) against the test kit's OAuth MCP server whose
//! protected-resource metadata is only where its 401 challenge says: the challenge probed,
//! dynamic registration, PKCE, the code exchanged, tokens used and refreshed, logout revoking.

use std::sync::Arc;
use std::time::Duration;
use tokio_util::sync::CancellationToken;
use volcanic_abstractions::processes::SecretRedactor;
use volcanic_mcp::client::Handler;
use volcanic_mcp::config::{DEFAULT_CALL_TIMEOUT, ServerSpec, Transport};
use volcanic_mcp::oauth::{ClientSpec, Login, TokenFile, authorized_client, logout, probe_challenge};
use volcanic_mcp::server::{Connection, StartError};
use volcanic_testkit::mcp_oauth::{CUSTOM_PRM, OAuthMcpServer};

struct NoRedaction;
impl SecretRedactor for NoRedaction {
    fn redact(&self, text: &str) -> String {
        text.to_owned()
    }
    fn add_secret(&self, _: &str) {}
}

fn fail<E: std::fmt::Display>(e: E) -> String {
    e.to_string()
}

#[tokio::test]
async fn sign_in_through_a_challenge_named_metadata_use_refresh_and_log_out() -> Result<(), String> {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let remote = OAuthMcpServer::start_custom_prm().await?;
    let url = remote.url();
    let spec = ServerSpec {
        name: "remote".into(),
        transport: Transport::Http {
            url: url.clone(),
            headers: Default::default(),
        },
        include_tools: Vec::new(),
        exclude_tools: Vec::new(),
        call_timeout: DEFAULT_CALL_TIMEOUT,
    };
    let redactor: Arc<dyn SecretRedactor> = Arc::new(NoRedaction);
    match Connection::start(&spec, None, redactor.clone(), Handler::default()).await {
        Err(StartError::NeedsLogin(c)) => assert!(c.contains(CUSTOM_PRM), "{c}"),
        other => return Err(format!("not a needs-login: {:?}", other.map(|_| ()))),
    }
    let challenge = probe_challenge(&url).await.ok_or("no challenge")?;
    assert!(challenge.contains(CUSTOM_PRM), "{challenge}");

    let dir = tempfile::tempdir().map_err(fail)?;
    let file = TokenFile::new(dir.path(), "42", "remote", redactor.clone());
    let redirect = "http://127.0.0.1:53683/volcanic/mcp-oauth";
    let login = Login::begin(&url, &ClientSpec::default(), redirect, Some(&challenge), file.clone())
        .await
        .map_err(fail)?;
    let browser = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .map_err(fail)?;
    let answer = browser.get(login.url()).send().await.map_err(fail)?;
    let back = answer
        .headers()
        .get("location")
        .and_then(|v| v.to_str().ok())
        .ok_or(format!("no redirect: {}", answer.status()))?
        .to_owned();
    login.finish(&back).await.map_err(fail)?;
    assert!(file.exists());
    assert_eq!(remote.registrations(), 1);

    let auth = authorized_client(&url, file.clone()).await.map_err(fail)?;
    let (conn, tools) = Connection::start_with_auth(&spec, None, Some(auth), redactor, Handler::default())
        .await
        .map_err(fail)?;
    assert!(tools.iter().any(|t| t.name == "hello"), "{tools:?}");
    remote.expire_access_tokens();
    let r = conn
        .call(
            "hello",
            serde_json::json!({}),
            Duration::from_secs(20),
            CancellationToken::new(),
        )
        .await
        .map_err(fail)?;
    assert_eq!(r.text_content(), "hello from the protected server");
    assert_eq!(remote.grants(), ["authorization_code", "refresh_token"]);
    conn.stop();

    assert!(logout(&url, &file).await.map_err(fail)?, "not revoked");
    assert!(!file.exists());
    assert_eq!(remote.revocations(), ["refresh_token", "access_token"]);
    Ok(())
}

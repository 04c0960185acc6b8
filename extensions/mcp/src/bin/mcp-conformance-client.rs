//! The client under test for `@modelcontextprotocol/conformance client` (protocol 2025-11-25),
//! over the extension's own connection code: `mcp-conformance-client URL` (the runner appends
//! the scenario server's URL; `MCP_CONFORMANCE_SCENARIO` names the scenario).
//!
//! It connects over streamable HTTP, lists the tools and calls each one with arguments made from
//! its schema; questions from the server are accepted with the schema's defaults. Exit 0 when
//! every step worked.
//!
//! A server answering 401 (the `auth/*` scenarios) is signed in to with the extension's OAuth
//! code ([`volcanic_mcp::oauth`]) as a browser would: the authorization address is fetched, its
//! redirect followed back to us, the code exchanged; a pre-registered client comes from
//! `MCP_CONFORMANCE_CONTEXT` (`client_id`, `client_secret`). A call refused for scope (403
//! `insufficient_scope`) signs in again with the scope the challenge names, once.

use anyhow::{Context, bail};
use serde_json::{Map, Value};
use std::sync::Arc;
use std::time::Duration;
use tokio_util::sync::CancellationToken;
use volcanic_abstractions::processes::SecretRedactor;
use volcanic_mcp::client::Handler;
use volcanic_mcp::config::{DEFAULT_CALL_TIMEOUT, ServerSpec, Transport};
use volcanic_mcp::elicit::AcceptDefaults;
use volcanic_mcp::oauth::{ClientSpec, Login, TokenFile, authorized_client, step_up_scopes};
use volcanic_mcp::server::{Connection, StartError};

/// Where the (test) authorization server sends the browser back; never served: the redirect
/// is read from its `Location`.
const REDIRECT_URI: &str = "http://localhost:3000/callback";

/// The client metadata document address the runner expects (SEP-991); the runner never fetches it.
const CIMD_URL: &str = "https://conformance-test.local/client-metadata.json";

/// This binary holds no secrets.
struct NoSecrets;
impl SecretRedactor for NoSecrets {
    fn redact(&self, text: &str) -> String {
        text.to_owned()
    }
    fn add_secret(&self, _: &str) {}
}

/// Arguments for a tool: every required property given a value of its type.
fn arguments(schema: &Map<String, Value>) -> Value {
    let mut args = Map::new();
    let required = schema
        .get("required")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    for name in required.iter().filter_map(Value::as_str) {
        let p = schema.get("properties").and_then(|p| p.get(name));
        let value = match p.and_then(|p| p.get("type")).and_then(Value::as_str) {
            Some("number" | "integer") => Value::from(2),
            Some("boolean") => Value::Bool(true),
            _ => Value::String("conformance".into()),
        };
        args.insert(name.to_owned(), value);
    }
    Value::Object(args)
}

/// A progress line on stderr (the runner saves it as `stderr.txt`).
fn say(line: String) {
    use std::io::Write;
    let _ = writeln!(std::io::stderr(), "{line}");
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let url = std::env::args()
        .next_back()
        .context("usage: mcp-conformance-client URL")?;
    let scenario = std::env::var("MCP_CONFORMANCE_SCENARIO").unwrap_or_default();
    say(format!("scenario `{scenario}` against {url}"));
    let spec = ServerSpec {
        name: "conformance".into(),
        transport: Transport::Http {
            url: url.clone(),
            headers: Default::default(),
        },
        include_tools: Vec::new(),
        exclude_tools: Vec::new(),
        call_timeout: DEFAULT_CALL_TIMEOUT,
    };
    let dir = tempfile_dir()?;
    let store = TokenFile::new(&dir, "conformance", "conformance", Arc::new(NoSecrets));
    let handler = || Handler::new("conformance", Some(Arc::new(AcceptDefaults)), None);
    let (mut conn, mut tools) = match Connection::start(&spec, None, Arc::new(NoSecrets), handler()).await {
        Err(StartError::NeedsLogin(challenge)) => {
            say(format!("401: signing in ({challenge})"));
            sign_in(&url, &challenge, Vec::new(), &store).await?;
            let auth = authorized_client(&url, store.clone()).await?;
            Connection::start_with_auth(&spec, None, Some(auth), Arc::new(NoSecrets), handler()).await?
        }
        other => other?,
    };
    let mut step_up = true;
    let mut i = 0;
    while i < tools.len() {
        let tool = &tools[i];
        let args = arguments(&tool.input_schema);
        say(format!("calling `{}` with {args}", tool.name));
        let timeout = Duration::from_secs(20);
        match conn.call(&tool.name, args, timeout, CancellationToken::new()).await {
            Ok(r) => say(format!("result: {r:?}")),
            Err(e) if step_up && conn.insufficient_scope().is_some() => {
                step_up = false;
                let challenge = conn.insufficient_scope().unwrap_or_default();
                say(format!(
                    "`{}`: 403, signing in again for more scope ({challenge}): {e}",
                    tool.name
                ));
                conn.stop();
                let scopes = step_up_scopes(&[], &store, &challenge);
                sign_in(&url, &challenge, scopes, &store).await?;
                let auth = authorized_client(&url, store.clone()).await?;
                (conn, tools) =
                    Connection::start_with_auth(&spec, None, Some(auth), Arc::new(NoSecrets), handler()).await?;
                continue;
            }
            Err(e) => bail!("`{}` failed: {e}", tool.name),
        }
        i += 1;
    }
    conn.stop();
    let _ = std::fs::remove_dir_all(&dir);
    Ok(())
}

/// A fresh private folder for the token file.
fn tempfile_dir() -> anyhow::Result<std::path::PathBuf> {
    let dir = std::env::temp_dir().join(format!("mcp-conformance-{}", std::process::id()));
    std::fs::create_dir_all(&dir).with_context(|| format!("cannot make {}", dir.display()))?;
    Ok(dir)
}

/// Signs in as a browser would: the authorization address fetched without following
/// redirects, its `Location` (our redirect URI with `code`, `state`, `iss`) handed back;
/// `scopes` empty: chosen from the challenge and metadata.
async fn sign_in(url: &str, challenge: &str, scopes: Vec<String>, store: &TokenFile) -> anyhow::Result<()> {
    let context: Value = std::env::var("MCP_CONFORMANCE_CONTEXT")
        .ok()
        .and_then(|c| serde_json::from_str(&c).ok())
        .unwrap_or_default();
    let text = |k: &str| context.get(k).and_then(Value::as_str).map(str::to_owned);
    let client = ClientSpec {
        client_id: text("client_id"),
        client_secret: text("client_secret"),
        scopes,
        client_metadata_url: Some(CIMD_URL.to_owned()),
    };
    let login = Login::begin(url, &client, REDIRECT_URI, Some(challenge), store.clone()).await?;
    say(format!("authorization address: {}", login.url()));
    let browser = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()?;
    let answer = browser.get(login.url()).send().await?;
    let back = answer
        .headers()
        .get(reqwest::header::LOCATION)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned)
        .with_context(|| {
            format!(
                "the authorization server answered {} without a redirect",
                answer.status()
            )
        })?;
    say(format!("redirected back to {back}"));
    login.finish(&back).await?;
    Ok(())
}

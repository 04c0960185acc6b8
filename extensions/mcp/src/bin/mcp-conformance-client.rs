//! The client under test for `@modelcontextprotocol/conformance client` (protocol 2025-11-25),
//! over the extension's own connection code: `mcp-conformance-client URL` (the runner appends
//! the scenario server's URL; `MCP_CONFORMANCE_SCENARIO` names the scenario).
//!
//! It connects over streamable HTTP, lists the tools and calls each one with arguments made from
//! its schema; questions from the server are accepted with the schema's defaults. Exit 0 when
//! every step worked.

use anyhow::{Context, bail};
use serde_json::{Map, Value};
use std::sync::Arc;
use std::time::Duration;
use tokio_util::sync::CancellationToken;
use volcanic_abstractions::processes::SecretRedactor;
use volcanic_mcp::client::Handler;
use volcanic_mcp::config::{DEFAULT_CALL_TIMEOUT, ServerSpec, Transport};
use volcanic_mcp::elicit::AcceptDefaults;
use volcanic_mcp::server::Connection;

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
    let handler = Handler::new("conformance", Some(Arc::new(AcceptDefaults)), None);
    let (conn, tools) = Connection::start(&spec, None, Arc::new(NoSecrets), handler).await?;
    for tool in &tools {
        let args = arguments(&tool.input_schema);
        say(format!("calling `{}` with {args}", tool.name));
        let timeout = Duration::from_secs(20);
        match conn.call(&tool.name, args, timeout, CancellationToken::new()).await {
            Ok(r) => say(format!("result: {r:?}")),
            Err(e) => bail!("`{}` failed: {e}", tool.name),
        }
    }
    conn.stop();
    Ok(())
}

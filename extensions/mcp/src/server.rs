//! One connection to one MCP server: started (a child process in its own process group, or
//! streamable HTTP), initialised with protocol 2025-11-25, its tools listed, tools called with a
//! timeout, and stopped (the whole process group killed).

use crate::client::Handler;
use crate::config::{ServerSpec, Transport};
use crate::content::to_tool_result;
use rmcp::model::CallToolRequestParams;
use rmcp::service::{Peer, RoleClient, RunningService};
use rmcp::transport::{StreamableHttpClientTransport, TokioChildProcess};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::io::AsyncBufReadExt;
use tokio_util::sync::CancellationToken;
use volcanic_abstractions::processes::{ProcessGroup, ProcessSpawnContext, ProcessSpawnPolicy, SecretRedactor};
use volcanic_abstractions::tools::{ToolError, ToolResult};

/// How long `initialize` and the first `tools/list` may take before the server counts as failed.
pub const START_TIMEOUT: Duration = Duration::from_secs(60);

/// At most this much of a server's stderr goes to the log (per process); the rest is drained.
pub const STDERR_LOG_CAP: usize = 16 * 1024;

/// Why a server could not be started.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    /// The process could not be started.
    #[error("cannot start `{command}`: {source}")]
    Spawn {
        /// Program.
        command: String,
        /// Why.
        source: std::io::Error,
    },
    /// A header name or value is not valid HTTP.
    #[error("header `{0}` is not a valid HTTP header")]
    Header(String),
    /// `initialize` failed.
    #[error("initialize failed: {0}")]
    Initialize(String),
    /// `tools/list` failed.
    #[error("tools/list failed: {0}")]
    ListTools(String),
    /// It did not answer in time.
    #[error("no answer to initialize and tools/list within {} s", START_TIMEOUT.as_secs())]
    Timeout,
    /// It answered HTTP 401 (MCP 2025-11-25, "Authorization"): a sign-in is needed; with its
    /// `WWW-Authenticate` challenge.
    #[error("needs login (the server answered HTTP 401)")]
    NeedsLogin(String),
    /// The process could not be prepared (the process policy refused it).
    #[error("{0}")]
    Prepare(String),
}

/// The `WWW-Authenticate` challenge of a 401 somewhere in `error`'s chain, if it is one.
pub fn auth_challenge(error: &(dyn std::error::Error + 'static)) -> Option<String> {
    find_in_chain(error, &|e| {
        e.downcast_ref::<rmcp::transport::streamable_http_client::AuthRequiredError>()
            .map(|a| a.www_authenticate_header.clone())
    })
}

/// The `WWW-Authenticate` challenge of a 403 `insufficient_scope` in `error`'s chain.
pub fn scope_challenge(error: &(dyn std::error::Error + 'static)) -> Option<String> {
    find_in_chain(error, &|e| {
        e.downcast_ref::<rmcp::transport::streamable_http_client::InsufficientScopeError>()
            .map(|a| a.www_authenticate_header.clone())
    })
}

/// The first `Some` of `f` along `error`'s chain (through rmcp's transport wrappers).
fn find_in_chain(
    error: &(dyn std::error::Error + 'static),
    f: &dyn Fn(&(dyn std::error::Error + 'static)) -> Option<String>,
) -> Option<String> {
    let mut next = Some(error);
    while let Some(e) = next {
        if let Some(found) = f(e) {
            return Some(found);
        }
        if let Some(rmcp::service::ClientInitializeError::TransportError { error, .. }) =
            e.downcast_ref::<rmcp::service::ClientInitializeError>()
        {
            return find_in_chain(error, f);
        }
        if let Some(rmcp::ServiceError::TransportSend(error)) = e.downcast_ref::<rmcp::ServiceError>() {
            return find_in_chain(error, f);
        }
        next = e.source();
    }
    None
}

/// What a stdio server needs to start: its prepared process (the session's process policy made
/// it) and the policy's process-group handle.
pub struct Launch {
    /// The prepared command, cwd and complete environment.
    pub process: ProcessSpawnContext,
    /// Kills the group at stop.
    pub policy: Arc<dyn ProcessSpawnPolicy>,
}

/// A started server.
pub struct Connection {
    name: String,
    peer: Peer<RoleClient>,
    service: Mutex<Option<RunningService<RoleClient, Handler>>>,
    group: Mutex<Option<Box<dyn ProcessGroup>>>,
    /// A call was answered HTTP 401 (the token expired and could not be refreshed, or was revoked).
    needs_login: std::sync::atomic::AtomicBool,
    /// The challenge of the last call answered 403 `insufficient_scope`.
    insufficient_scope: Mutex<Option<String>>,
}

impl std::fmt::Debug for Connection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Connection")
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}

impl Connection {
    /// Starts `spec` (`launch` is needed for stdio servers) with `handler` answering the
    /// server's requests and notifications, and lists its tools.
    pub async fn start(
        spec: &ServerSpec,
        launch: Option<Launch>,
        redactor: Arc<dyn SecretRedactor>,
        handler: Handler,
    ) -> Result<(Connection, Vec<rmcp::model::Tool>), StartError> {
        Self::start_with_auth(spec, launch, None, redactor, handler).await
    }

    /// [`Connection::start`], a streamable HTTP server reached with `auth` (an OAuth client
    /// sending the stored token, refreshing it: [`crate::oauth::authorized_client`]).
    pub async fn start_with_auth(
        spec: &ServerSpec,
        launch: Option<Launch>,
        auth: Option<rmcp::transport::auth::AuthClient<reqwest::Client>>,
        redactor: Arc<dyn SecretRedactor>,
        handler: Handler,
    ) -> Result<(Connection, Vec<rmcp::model::Tool>), StartError> {
        let started =
            tokio::time::timeout(START_TIMEOUT, Self::start_inner(spec, launch, auth, redactor, handler)).await;
        let (conn, tools) = match started {
            Ok(r) => r?,
            Err(_) => return Err(StartError::Timeout),
        };
        Ok((conn, tools))
    }

    async fn start_inner(
        spec: &ServerSpec,
        launch: Option<Launch>,
        auth: Option<rmcp::transport::auth::AuthClient<reqwest::Client>>,
        redactor: Arc<dyn SecretRedactor>,
        handler: Handler,
    ) -> Result<(Connection, Vec<rmcp::model::Tool>), StartError> {
        let (service, group) = match (&spec.transport, launch) {
            (Transport::Stdio { .. }, Some(launch)) => {
                let cmd = tokio::process::Command::from(launch.process.to_group_command());
                let (child, stderr) = TokioChildProcess::builder(cmd)
                    .stderr(std::process::Stdio::piped())
                    .spawn()
                    .map_err(|source| StartError::Spawn {
                        command: launch.process.command.clone(),
                        source,
                    })?;
                let group = child.id().map(|pid| launch.policy.process_group(pid));
                if let Some(stderr) = stderr {
                    tokio::spawn(log_stderr(spec.name.clone(), stderr, redactor));
                }
                // The group is held from here: an initialize that fails drops it, killing the child.
                let service = rmcp::service::serve_client(handler, child).await;
                (service, group)
            }
            (Transport::Stdio { command, .. }, None) => {
                return Err(StartError::Spawn {
                    command: command.clone(),
                    source: std::io::Error::other("no session to prepare the process"),
                });
            }
            (Transport::Http { url, headers }, _) => {
                let mut custom = HashMap::new();
                for (k, v) in headers {
                    let name = http::HeaderName::try_from(k.as_str()).map_err(|_| StartError::Header(k.clone()))?;
                    let value = http::HeaderValue::try_from(v.as_str()).map_err(|_| StartError::Header(k.clone()))?;
                    custom.insert(name, value);
                }
                let config = rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig::with_uri(
                    url.as_str(),
                )
                .custom_headers(custom);
                let service = match auth {
                    Some(auth) => {
                        let transport = StreamableHttpClientTransport::with_client(auth, config);
                        rmcp::service::serve_client(handler, transport).await
                    }
                    None => {
                        let transport = StreamableHttpClientTransport::<reqwest::Client>::from_config(config);
                        rmcp::service::serve_client(handler, transport).await
                    }
                };
                (service, None)
            }
        };
        let service = service.map_err(|e| match auth_challenge(&e) {
            Some(challenge) => StartError::NeedsLogin(challenge),
            None => StartError::Initialize(e.to_string()),
        })?;
        let peer = service.peer().clone();
        let tools =
            peer.list_all_tools()
                .await
                .map_err(|e| match auth_challenge(&e).or_else(|| scope_challenge(&e)) {
                    Some(challenge) => StartError::NeedsLogin(challenge),
                    None => StartError::ListTools(e.to_string()),
                })?;
        Ok((
            Connection {
                name: spec.name.clone(),
                peer,
                service: Mutex::new(Some(service)),
                group: Mutex::new(group),
                needs_login: Default::default(),
                insufficient_scope: Mutex::default(),
            },
            tools,
        ))
    }

    /// Calls `tool` with `args` (a JSON object), at most `timeout`; a timeout, a server gone
    /// mid-call or a protocol error is an error result that says which.
    pub async fn call(
        &self,
        tool: &str,
        args: serde_json::Value,
        timeout: Duration,
        cancel: CancellationToken,
    ) -> Result<ToolResult, ToolError> {
        let arguments = match args {
            serde_json::Value::Object(map) => map,
            serde_json::Value::Null => serde_json::Map::new(),
            other => return Err(ToolError::msg(format!("arguments must be a JSON object, not {other}"))),
        };
        let params = CallToolRequestParams::new(tool.to_owned()).with_arguments(arguments);
        let call = self.peer.call_tool(params);
        let result = tokio::select! {
            r = tokio::time::timeout(timeout, call) => r,
            () = cancel.cancelled() => return Err(ToolError::Aborted),
        };
        let server = &self.name;
        match result {
            Err(_) => Err(ToolError::msg(format!(
                "MCP server `{server}` did not answer `{tool}` within {} s (its `call_timeout_secs`); \
                 the call was given up",
                timeout.as_secs()
            ))),
            Ok(Err(e)) if scope_challenge(&e).is_some() => {
                *self.insufficient_scope.lock().unwrap_or_else(|e| e.into_inner()) = scope_challenge(&e);
                Err(ToolError::msg(format!(
                    "MCP server `{server}` refused `{tool}`: the sign-in lacks a scope it needs; \
                     the user must run `/mcp login {server}` again"
                )))
            }
            Ok(Err(e)) if auth_challenge(&e).is_some() => {
                self.needs_login.store(true, std::sync::atomic::Ordering::SeqCst);
                Err(ToolError::msg(needs_login_message(server)))
            }
            Ok(Err(e)) if self.peer.is_transport_closed() => Err(ToolError::msg(format!(
                "MCP server `{server}` stopped during the call of `{tool}` ({e}); it is restarted \
                 (`/mcp` shows when it is back)"
            ))),
            Ok(Err(e)) => Err(ToolError::msg(format!("MCP server `{server}` refused `{tool}`: {e}"))),
            Ok(Ok(result)) => {
                let json = serde_json::to_value(&result)
                    .map_err(|e| ToolError::msg(format!("MCP server `{server}`: unreadable result: {e}")))?;
                to_tool_result(&json)
            }
        }
    }

    /// Whether a call was refused with HTTP 401 (a new sign-in is needed).
    pub fn needs_login(&self) -> bool {
        self.needs_login.load(std::sync::atomic::Ordering::SeqCst)
    }

    /// The `WWW-Authenticate` challenge of the last call refused for scope (HTTP 403).
    pub fn insufficient_scope(&self) -> Option<String> {
        self.insufficient_scope
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// Its tools now (`tools/list`, every page).
    pub async fn list_tools(&self) -> Result<Vec<rmcp::model::Tool>, rmcp::ServiceError> {
        self.peer.list_all_tools().await
    }

    /// Whether the server's transport is gone (the process exited, the HTTP session ended).
    pub fn is_closed(&self) -> bool {
        self.peer.is_transport_closed()
    }

    /// Stops it: the process group is killed, the client's tasks cancelled. Idempotent.
    pub fn stop(&self) {
        if let Some(g) = self.group.lock().unwrap_or_else(|e| e.into_inner()).take() {
            g.kill();
        }
        if let Some(s) = self.service.lock().unwrap_or_else(|e| e.into_inner()).take() {
            s.cancellation_token().cancel();
        }
    }
}

impl Drop for Connection {
    fn drop(&mut self) {
        self.stop();
    }
}

/// What the model is told when server `name` needs a sign-in.
pub fn needs_login_message(name: &str) -> String {
    format!(
        "MCP server `{name}` needs a sign-in: the user must run `/mcp login {name}` in this chat and \
         sign in; then ask again"
    )
}

/// Logs the server's stderr line by line (redacted) up to [`STDERR_LOG_CAP`] bytes, then drains.
async fn log_stderr(server: String, stderr: tokio::process::ChildStderr, redactor: Arc<dyn SecretRedactor>) {
    let mut lines = tokio::io::BufReader::new(stderr).lines();
    let mut logged = 0usize;
    let mut dropped = false;
    while let Ok(Some(line)) = lines.next_line().await {
        if logged < STDERR_LOG_CAP {
            logged += line.len() + 1;
            tracing::info!(server = %server, "MCP server stderr: {}", redactor.redact(&line));
        } else if !dropped {
            dropped = true;
            tracing::warn!(server = %server, "MCP server stderr: more than {STDERR_LOG_CAP} bytes; the rest is not logged");
        }
    }
}

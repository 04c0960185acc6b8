//! Server entries: the host's `[mcp.servers.NAME]` and a workspace's
//! `.volcanic/mcp.json` (the `mcpServers` shape other MCP clients use: `command`/`args`/`env` for
//! stdio, `url`/`headers` for streamable HTTP).
//!
//! A secret is named, never written: in the host config a value `"$NAME"` is replaced by the host
//! environment's `NAME` (resolved once, by the host, and added to the redactor); it reaches that
//! server only. A workspace file cannot name host variables (the agent can write it): a `$` value
//! there is a bad entry. Bad entries are reported by name and never stop the others.

use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

/// Where a workspace's MCP servers are listed, relative to the workspace.
pub const WORKSPACE_FILE: &str = ".volcanic/mcp.json";

/// The default time one tool call may take.
pub const DEFAULT_CALL_TIMEOUT: Duration = Duration::from_secs(60);

/// How a server is reached.
#[derive(Debug, Clone, PartialEq)]
pub enum Transport {
    /// A child process speaking JSON-RPC on stdin/stdout.
    Stdio {
        /// Program.
        command: String,
        /// Arguments.
        args: Vec<String>,
        /// Variables set on top of the process policy's filtered environment (secrets resolved).
        env: BTreeMap<String, String>,
    },
    /// Streamable HTTP (MCP 2025-11-25, "Transports").
    Http {
        /// The endpoint, e.g. `https://example.com/mcp`.
        url: String,
        /// Static headers sent with every request (secrets resolved).
        headers: BTreeMap<String, String>,
    },
}

/// One usable server entry.
#[derive(Debug, Clone, PartialEq)]
pub struct ServerSpec {
    /// Its name: the prefix of its tools (`<name>__<tool>`).
    pub name: String,
    /// How it is reached.
    pub transport: Transport,
    /// Only these tools (exact MCP names); empty: all.
    pub include_tools: Vec<String>,
    /// Never these tools (exact MCP names).
    pub exclude_tools: Vec<String>,
    /// How long one call may take before it ends with an error result.
    pub call_timeout: Duration,
}

impl ServerSpec {
    /// Whether the tool `name` passes the include/exclude filters.
    pub fn wants(&self, name: &str) -> bool {
        (self.include_tools.is_empty() || self.include_tools.iter().any(|t| t == name))
            && !self.exclude_tools.iter().any(|t| t == name)
    }
}

/// A server entry that cannot be used, with what to fix.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("MCP server `{name}`: {reason}")]
pub struct BadEntry {
    /// The entry's name.
    pub name: String,
    /// What is wrong and what to do.
    pub reason: String,
}

/// One entry as written (host config or workspace file; unknown fields refused).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "snake_case")]
pub struct RawEntry {
    /// Stdio: program.
    #[serde(default)]
    pub command: Option<String>,
    /// Stdio: arguments.
    #[serde(default)]
    pub args: Vec<String>,
    /// Stdio: environment (`"$NAME"` names a host secret in the host config).
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    /// HTTP: endpoint.
    #[serde(default)]
    pub url: Option<String>,
    /// HTTP: static headers (`"Bearer $TOKEN"`-style values name a host secret in the host config).
    #[serde(default)]
    pub headers: BTreeMap<String, String>,
    /// `false` keeps the entry but starts nothing (default `true`).
    #[serde(default = "yes")]
    pub enabled: bool,
    /// Only these tools.
    #[serde(default, alias = "includeTools")]
    pub include_tools: Vec<String>,
    /// Never these tools.
    #[serde(default, alias = "excludeTools")]
    pub exclude_tools: Vec<String>,
    /// Seconds one call may take (default 60).
    #[serde(default, alias = "callTimeoutSecs")]
    pub call_timeout_secs: Option<u64>,
    /// Host config only: the chats (keys as in the state folder: `123`, `g456`) it is for; empty:
    /// every chat.
    #[serde(default)]
    pub chats: Vec<String>,
    /// Host config only: one process (one connection) for all its chats instead of one per chat
    /// (for a server that keeps no per-user state); default `false`.
    #[serde(default)]
    pub shared: bool,
    /// HTTP, host config only: the OAuth client `/mcp login` uses (default: the server's
    /// dynamic client registration).
    #[serde(default)]
    pub oauth: Option<OAuthEntry>,
    /// Workspace files use `type` (`stdio`, `http`, `streamable-http`); informative only.
    #[serde(default, rename = "type")]
    pub kind: Option<String>,
}

fn yes() -> bool {
    true
}

/// `oauth = { client_id, client_secret, scopes, client_metadata_url }` of a `url` server.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OAuthEntry {
    /// A client registered with the server's authorization server beforehand.
    #[serde(default)]
    pub client_id: Option<String>,
    /// Its secret (`"$NAME"`: from the bot's environment).
    #[serde(default)]
    pub client_secret: Option<String>,
    /// Scopes to ask for (default: from the server's challenge or metadata).
    #[serde(default)]
    pub scopes: Vec<String>,
    /// The HTTPS address of this bot's client metadata document (SEP-991).
    #[serde(default)]
    pub client_metadata_url: Option<String>,
}

impl RawEntry {
    /// The entry's OAuth client (`oauth`, its secret resolved with `lookup`); default when the
    /// entry has none. Host config only; pushes a resolved secret to `secrets`.
    pub fn oauth_client(
        &self,
        name: &str,
        origin: Origin,
        lookup: &dyn Fn(&str) -> Option<String>,
        secrets: &mut Vec<String>,
    ) -> Result<crate::oauth::ClientSpec, BadEntry> {
        let bad = |reason: String| BadEntry {
            name: name.to_owned(),
            reason,
        };
        let Some(o) = &self.oauth else {
            return Ok(crate::oauth::ClientSpec::default());
        };
        if origin == Origin::Workspace {
            return Err(bad(
                "`oauth` belongs in the host config; a workspace's server signs in with dynamic registration".into(),
            ));
        }
        if self.url.is_none() {
            return Err(bad("`oauth` is for `url` servers".into()));
        }
        if o.client_secret.is_some() && o.client_id.is_none() {
            return Err(bad("`oauth.client_secret` needs its `oauth.client_id`".into()));
        }
        let client_secret = match &o.client_secret {
            Some(v) => {
                Some(substitute(v, origin, lookup, secrets).map_err(|r| bad(format!("oauth.client_secret: {r}")))?)
            }
            None => None,
        };
        Ok(crate::oauth::ClientSpec {
            client_id: o.client_id.clone(),
            client_secret,
            scopes: o.scopes.clone(),
            client_metadata_url: o.client_metadata_url.clone(),
        })
    }
}

/// Where an entry comes from: secrets resolve only in the host config.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Origin {
    /// The host config: `$NAME` reads the host environment through the given lookup.
    Host,
    /// A workspace file: `$NAME` is refused.
    Workspace,
}

impl RawEntry {
    /// Checks the entry and resolves its secrets with `lookup` (host entries only). `Ok(None)`:
    /// disabled. The resolved secret values are pushed to `secrets` (for the redactor).
    pub fn resolve(
        self,
        name: &str,
        origin: Origin,
        lookup: &dyn Fn(&str) -> Option<String>,
        secrets: &mut Vec<String>,
    ) -> Result<Option<ServerSpec>, BadEntry> {
        let bad = |reason: String| BadEntry {
            name: name.to_owned(),
            reason,
        };
        if !valid_server_name(name) {
            return Err(bad(
                "names use letters, digits, `-` and `_` (at most 32), since they prefix tool names".into(),
            ));
        }
        if origin == Origin::Workspace && !self.chats.is_empty() {
            return Err(bad("`chats` belongs in the host config, not in a workspace file".into()));
        }
        if origin == Origin::Workspace && self.shared {
            return Err(bad(
                "`shared` belongs in the host config: a workspace's servers are its chat's own".into(),
            ));
        }
        if !self.enabled {
            return Ok(None);
        }
        let mut subst = |field: &str, key: &str, value: String| -> Result<String, BadEntry> {
            substitute(&value, origin, lookup, secrets).map_err(|r| bad(format!("{field} `{key}`: {r}")))
        };
        let transport = match (self.command, self.url) {
            (Some(command), None) => {
                if !self.headers.is_empty() {
                    return Err(bad(
                        "`headers` are for `url` servers; a `command` server takes `env`".into()
                    ));
                }
                let mut env = BTreeMap::new();
                for (k, v) in self.env {
                    let v = subst("env", &k, v)?;
                    env.insert(k, v);
                }
                Transport::Stdio {
                    command,
                    args: self.args,
                    env,
                }
            }
            (None, Some(url)) => {
                if !url.starts_with("http://") && !url.starts_with("https://") {
                    return Err(bad(format!("`url` must start with http:// or https:// (got `{url}`)")));
                }
                if !self.env.is_empty() || !self.args.is_empty() {
                    return Err(bad(
                        "`env` and `args` are for `command` servers; a `url` server takes `headers`".into(),
                    ));
                }
                let mut headers = BTreeMap::new();
                for (k, v) in self.headers {
                    let v = subst("header", &k, v)?;
                    headers.insert(k, v);
                }
                Transport::Http { url, headers }
            }
            (Some(_), Some(_)) => return Err(bad("give either `command` (stdio) or `url` (HTTP), not both".into())),
            (None, None) => {
                return Err(bad(
                    "give `command` (a stdio server) or `url` (a streamable HTTP server)".into(),
                ));
            }
        };
        let call_timeout = match self.call_timeout_secs {
            Some(0) => return Err(bad("`call_timeout_secs` must be at least 1".into())),
            Some(s) => Duration::from_secs(s),
            None => DEFAULT_CALL_TIMEOUT,
        };
        Ok(Some(ServerSpec {
            name: name.to_owned(),
            transport,
            include_tools: self.include_tools,
            exclude_tools: self.exclude_tools,
            call_timeout,
        }))
    }
}

/// Whether `name` may name a server: `[A-Za-z0-9_-]{1,32}`.
pub fn valid_server_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 32
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

/// Replaces each `$NAME` (`[A-Z0-9_]+`, or `${NAME}`) in `value`; `$$` is a `$`.
fn substitute(
    value: &str,
    origin: Origin,
    lookup: &dyn Fn(&str) -> Option<String>,
    secrets: &mut Vec<String>,
) -> Result<String, String> {
    let mut out = String::with_capacity(value.len());
    let mut rest = value;
    while let Some(i) = rest.find('$') {
        out.push_str(&rest[..i]);
        let after = &rest[i + 1..];
        if let Some(tail) = after.strip_prefix('$') {
            out.push('$');
            rest = tail;
            continue;
        }
        let (var, tail) = if let Some(braced) = after.strip_prefix('{') {
            let end = braced.find('}').ok_or("`${` without its `}`")?;
            (&braced[..end], &braced[end + 1..])
        } else {
            let end = after
                .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                .unwrap_or(after.len());
            (&after[..end], &after[end..])
        };
        if var.is_empty() {
            return Err("a lone `$` (write `$$` for a dollar sign)".into());
        }
        if origin == Origin::Workspace {
            return Err(format!(
                "names the host variable `{var}`, which a workspace file may not do; put this server in \
                 the host config (`[mcp.servers.NAME]`) to pass it a secret"
            ));
        }
        let v =
            lookup(var).ok_or_else(|| format!("the host environment has no `{var}`; set it or change the entry"))?;
        secrets.push(v.clone());
        out.push_str(&v);
        rest = tail;
    }
    out.push_str(rest);
    Ok(out)
}

/// The workspace file `{"mcpServers": {NAME: entry}}`.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct WorkspaceFile {
    #[serde(default)]
    mcp_servers: BTreeMap<String, serde_json::Value>,
}

/// Reads `<workspace>/.volcanic/mcp.json`: the usable servers and the bad entries. A missing file
/// gives nothing; an unreadable or malformed one is one bad entry named after the file.
pub fn read_workspace(workspace: &Path) -> (Vec<ServerSpec>, Vec<BadEntry>) {
    let path = workspace.join(WORKSPACE_FILE);
    let text = match std::fs::read_to_string(&path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return (Vec::new(), Vec::new()),
        Err(e) => return (Vec::new(), vec![file_error(format!("cannot read it: {e}"))]),
    };
    let file: WorkspaceFile = match serde_json::from_str(&text) {
        Ok(f) => f,
        Err(e) => {
            return (
                Vec::new(),
                vec![file_error(format!("not valid JSON of the `mcpServers` shape: {e}"))],
            );
        }
    };
    let (mut ok, mut bad) = (Vec::new(), Vec::new());
    let no_lookup = |_: &str| None;
    for (name, value) in file.mcp_servers {
        let parsed = serde_json::from_value::<RawEntry>(value).map_err(|e| BadEntry {
            name: name.clone(),
            reason: format!("in {WORKSPACE_FILE}: {e}"),
        });
        match parsed.and_then(|raw| raw.resolve(&name, Origin::Workspace, &no_lookup, &mut Vec::new())) {
            Ok(Some(spec)) => ok.push(spec),
            Ok(None) => {}
            Err(e) => bad.push(e),
        }
    }
    (ok, bad)
}

fn file_error(reason: String) -> BadEntry {
    BadEntry {
        name: WORKSPACE_FILE.into(),
        reason,
    }
}

#[cfg(test)]
#[path = "config_tests.rs"]
mod tests;

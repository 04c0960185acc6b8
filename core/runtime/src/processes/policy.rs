//! [`ProcessSpawnPolicy`]: builds the command, cwd and complete environment of a child process.

use super::options::{NamePattern, ProcessEnvironmentOptions, any_matches, compile};
use super::redactor::{Redactor, is_host_secret};
use std::collections::BTreeMap;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::Path;
use std::sync::Arc;
use volcanic_abstractions::processes::{
    FileBoundary, ProcessSandbox, ProcessSpawnContext, ProcessSpawnError, ProcessSpawnPolicy as SpawnPolicy,
    ProcessSpawnRequest, SecretRedactor,
};

/// Where the inherited environment comes from: `(name, value)` pairs, read at every spawn.
pub type EnvSource = Arc<dyn Fn() -> Vec<(String, String)> + Send + Sync>;

/// The host's environment (variables whose name or value is not UTF-8 are skipped).
fn host_environment() -> Vec<(String, String)> {
    std::env::vars_os()
        .filter_map(|(name, value)| Some((name.into_string().ok()?, value.into_string().ok()?)))
        .collect()
}

/// Whether an inherited variable is a credential by its name (`deny`) or by its value (a URL
/// with a password, [`holds_url_password`]); its value then also counts as a secret.
fn denied(deny: &[NamePattern], name: &str, value: &str) -> bool {
    any_matches(deny, name) || holds_url_password(value)
}

/// Whether `value` holds a URL with a password anywhere in it (`scheme://user:password@host`,
/// also `redis://:password@host` or one of several URLs in a list; RFC 3986 `userinfo`): such a
/// variable (`DATABASE_URL`, `HTTPS_PROXY`, `PIP_INDEX_URL`) is a credential whatever its name.
/// A user name alone (`ssh://git@host`) or an empty password is not.
pub(crate) fn holds_url_password(value: &str) -> bool {
    value.match_indices("://").any(|(at, sep)| {
        let rest = &value[at + sep.len()..];
        let authority = rest
            .split(|c: char| matches!(c, '/' | '?' | '#') || c.is_whitespace())
            .next()
            .unwrap_or_default();
        authority
            .rsplit_once('@')
            .and_then(|(userinfo, _)| userinfo.split_once(':'))
            .is_some_and(|(_, password)| !password.is_empty())
    })
}

/// The process policy: `inherit → filter (deny, allow, secret values) → request.env → TZ → host
/// hooks → sandbox`. See the [module docs](super) for the rules.
pub struct ProcessSpawnPolicy {
    inherit: bool,
    deny: Vec<NamePattern>,
    allow: Option<Vec<NamePattern>>,
    /// The configured secret values that count as secrets ([`is_host_secret`]); kept apart from
    /// the redactor's set, whose run-time secrets may be removed again.
    secret_values: Vec<String>,
    hooks: Vec<volcanic_abstractions::processes::ProcessSpawnHook>,
    env_source: EnvSource,
    redactor: Arc<Redactor>,
    sandbox: Option<Arc<dyn ProcessSandbox>>,
}

impl ProcessSpawnPolicy {
    /// A policy over the host's real environment (`std::env`).
    pub fn new(options: ProcessEnvironmentOptions) -> Self {
        ProcessSpawnPolicy::with_env_source(options, Arc::new(host_environment))
    }

    /// A policy over an injected base environment (tests, or a host that keeps its own copy).
    ///
    /// The redactor is seeded now with `options.secret_values` and with the values of the base
    /// variables the deny-list matches, each only from [`MIN_HOST_SECRET_CHARS`](super::MIN_HOST_SECRET_CHARS) characters.
    pub fn with_env_source(options: ProcessEnvironmentOptions, env_source: EnvSource) -> Self {
        let deny = compile(&options.deny);
        let allow = options.allow.as_deref().map(compile);
        let secret_values: Vec<String> = options
            .secret_values
            .into_iter()
            .filter(|v| is_host_secret(v))
            .collect();
        let redactor = Arc::new(Redactor::with_secrets(&secret_values));
        let seeded = env_source()
            .into_iter()
            .filter(|(name, value)| denied(&deny, name, value) && is_host_secret(value))
            .map(|(_, value)| value);
        redactor.add_all(seeded);
        ProcessSpawnPolicy {
            inherit: options.inherit,
            deny,
            allow,
            secret_values,
            hooks: options.hooks,
            env_source,
            redactor,
            sandbox: None,
        }
    }

    /// The policy with `sandbox` confining every process it prepares (the last step, after the
    /// host hooks) and bounding the built-in file tools.
    pub fn with_sandbox(mut self, sandbox: Arc<dyn ProcessSandbox>) -> Self {
        self.sandbox = Some(sandbox);
        self
    }

    /// The concrete redactor (the trait's [`SpawnPolicy::redactor`] gives it as a trait object).
    pub fn secret_redactor(&self) -> Arc<Redactor> {
        Arc::clone(&self.redactor)
    }

    /// Whether an inherited variable survives the filter (deny-list, a URL with a password,
    /// allow-list, secret values).
    pub fn keeps_inherited(&self, name: &str, value: &str) -> bool {
        if denied(&self.deny, name, value) {
            return false;
        }
        if let Some(allow) = &self.allow
            && !any_matches(allow, name)
        {
            return false;
        }
        let holds_secret =
            self.secret_values.iter().any(|s| value.contains(s.as_str())) || self.redactor.contains_secret(value);
        !holds_secret
    }

    /// The filtered inherited environment (the first two steps of the pipeline).
    fn base_environment(&self) -> BTreeMap<String, String> {
        if !self.inherit {
            return BTreeMap::new();
        }
        (self.env_source)()
            .into_iter()
            .filter(|(name, value)| self.keeps_inherited(name, value))
            .collect()
    }
}

impl SpawnPolicy for ProcessSpawnPolicy {
    fn prepare(&self, request: &ProcessSpawnRequest) -> Result<ProcessSpawnContext, ProcessSpawnError> {
        let mut env = self.base_environment();
        for (name, value) in &request.env {
            match value {
                Some(value) => env.insert(name.clone(), value.clone()),
                None => env.remove(name),
            };
        }
        if let Some(zone) = &request.time_zone {
            env.insert("TZ".to_owned(), zone.clone());
        }
        let mut context = ProcessSpawnContext {
            command: request.command.clone(),
            args: request.args.clone(),
            cwd: request.cwd.clone(),
            env,
            confinement: None,
        };
        for (index, hook) in self.hooks.iter().enumerate() {
            let outcome = catch_unwind(AssertUnwindSafe(|| hook(request, &mut context)));
            match outcome {
                Ok(Ok(())) => {}
                Ok(Err(message)) => return Err(ProcessSpawnError(message)),
                Err(_) => {
                    return Err(ProcessSpawnError(format!("host hook #{} panicked", index + 1)));
                }
            }
        }
        if let Some(sandbox) = &self.sandbox {
            sandbox.confine(request, &mut context)?;
        }
        Ok(context)
    }

    fn file_boundary(&self, cwd: &Path) -> Option<FileBoundary> {
        self.sandbox.as_ref().and_then(|s| s.file_boundary(cwd))
    }

    fn redactor(&self) -> Arc<dyn SecretRedactor> {
        self.redactor.clone()
    }

    fn process_group(&self, pid: u32) -> Box<dyn volcanic_abstractions::processes::ProcessGroup> {
        Box::new(super::ProcessGroupKiller::of_pid(Some(pid)))
    }
}

impl std::fmt::Debug for ProcessSpawnPolicy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ProcessSpawnPolicy")
            .field("inherit", &self.inherit)
            .field("deny", &self.deny)
            .field("allow", &self.allow)
            .field("hooks", &self.hooks.len())
            .field("redactor", &self.redactor)
            .field("sandbox", &self.sandbox)
            .finish_non_exhaustive()
    }
}

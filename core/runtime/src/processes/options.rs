//! Configuration of the process environment and the name patterns of the deny/allow lists.

use volcanic_abstractions::processes::ProcessSpawnHook;

/// Name patterns removed from every child environment by default (case-insensitive, `*` matches
/// any run of characters): the usual secret suffixes (`*_KEY` covers `*_API_KEY`, `*_PRIVATE_KEY`,
/// `AWS_SECRET_ACCESS_KEY`, and also key ids such as `GPG_KEY`: a name that says key is treated as
/// one), their .NET-style `Section__Key` forms, and a few well-known names (`SSH_AUTH_SOCK` hands
/// out the user's SSH keys to whoever can reach the agent's socket). Variables whose value is a
/// URL with a password are removed whatever their name (the policy's value rule).
pub const DEFAULT_DENY: &[&str] = &[
    "*_KEY",
    "*_TOKEN",
    "*_SECRET",
    "*_PASSWORD",
    "*_CREDENTIALS",
    "*_PAT",
    "*_DSN",
    "*__ApiKey",
    "*__Token",
    "*__Secret",
    "*__Password",
    "TELEGRAM_BOT_TOKEN",
    "GOOGLE_CLIENT_SECRET",
    "SSH_AUTH_SOCK",
];

/// How the environment of agent-requested processes is built.
#[derive(Clone)]
pub struct ProcessEnvironmentOptions {
    /// Start from the host's environment (default `true`); `false` starts from an empty one.
    pub inherit: bool,
    /// Variable-name patterns removed from the inherited environment (`*` wildcards,
    /// case-insensitive). Defaults to [`DEFAULT_DENY`].
    pub deny: Vec<String>,
    /// When set, only inherited variables whose name matches one of these patterns survive.
    pub allow: Option<Vec<String>>,
    /// Secret values the host knows (the config's keys and tokens): an inherited variable whose
    /// value contains one is dropped whatever its name, and the redactor replaces them in tool
    /// output. Values shorter than [`MIN_HOST_SECRET_CHARS`](super::MIN_HOST_SECRET_CHARS)
    /// characters are ignored (placeholders such as `none`; see there why).
    pub secret_values: Vec<String>,
    /// Host hooks, run in order after the environment is built; an `Err` fails the spawn.
    pub hooks: Vec<ProcessSpawnHook>,
}

impl Default for ProcessEnvironmentOptions {
    fn default() -> Self {
        ProcessEnvironmentOptions {
            inherit: true,
            deny: DEFAULT_DENY.iter().map(|p| (*p).to_owned()).collect(),
            allow: None,
            secret_values: Vec::new(),
            hooks: Vec::new(),
        }
    }
}

impl std::fmt::Debug for ProcessEnvironmentOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ProcessEnvironmentOptions")
            .field("inherit", &self.inherit)
            .field("deny", &self.deny)
            .field("allow", &self.allow)
            .field("secret_values", &format_args!("[{} hidden]", self.secret_values.len()))
            .field("hooks", &self.hooks.len())
            .finish()
    }
}

/// A variable-name pattern: `*` matches any run of characters (also none); matching ignores case.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NamePattern {
    /// The pattern lower-cased, split at `*`.
    parts: Vec<String>,
}

impl NamePattern {
    /// Compiles a pattern such as `*_API_KEY` or `TELEGRAM_BOT_TOKEN`.
    pub fn new(pattern: &str) -> Self {
        NamePattern {
            parts: pattern.to_lowercase().split('*').map(str::to_owned).collect(),
        }
    }

    /// Whether `name` matches, ignoring case.
    pub fn matches(&self, name: &str) -> bool {
        let name = name.to_lowercase();
        let (first, rest) = match self.parts.split_first() {
            Some(split) => split,
            None => return name.is_empty(),
        };
        let Some(mut remaining) = name.strip_prefix(first.as_str()) else {
            return false;
        };
        let Some((last, middle)) = rest.split_last() else {
            // No `*` at all: the whole name must equal the pattern.
            return remaining.is_empty();
        };
        for part in middle {
            match remaining.find(part.as_str()) {
                Some(at) => remaining = &remaining[at + part.len()..],
                None => return false,
            }
        }
        remaining.ends_with(last.as_str())
    }
}

/// Whether any of `patterns` matches `name`.
pub(crate) fn any_matches(patterns: &[NamePattern], name: &str) -> bool {
    patterns.iter().any(|p| p.matches(name))
}

/// Compiles a list of patterns.
pub(crate) fn compile(patterns: &[String]) -> Vec<NamePattern> {
    patterns.iter().map(|p| NamePattern::new(p)).collect()
}

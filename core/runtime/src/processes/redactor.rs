//! [`Redactor`]: replaces known secret values with `[REDACTED]`.

use aho_corasick::AhoCorasick;
use std::sync::{RwLock, RwLockReadGuard, RwLockWriteGuard};
use volcanic_abstractions::processes::{REDACTED, SecretRedactor};

/// Secrets shorter than this many bytes are ignored: they would hit ordinary text too often.
pub const MIN_SECRET_BYTES: usize = 6;

/// A value the host knows as a secret (the value of a variable the deny-list matches, or one of
/// the configured [`secret_values`](super::ProcessEnvironmentOptions::secret_values)) counts as
/// one from this many characters. Shorter values are flags (`1`, `true`) or placeholder keys
/// (`none`, `ollama`): redacting them would turn every `1` or every mention of `ollama` in tool
/// output into `[REDACTED]`, and removing variables by them would drop `SHLVL=1`. They are
/// neither redacted nor matched by value; a denied variable still goes by its name. Real
/// credentials (API keys, bot tokens, OAuth client secrets) are 20 characters and more.
pub const MIN_HOST_SECRET_CHARS: usize = 8;

/// Whether the host treats `value` as a secret: at least [`MIN_HOST_SECRET_CHARS`] characters.
pub fn is_host_secret(value: &str) -> bool {
    value.chars().count() >= MIN_HOST_SECRET_CHARS
}

/// The [`SecretRedactor`] of a [`ProcessSpawnPolicy`](super::ProcessSpawnPolicy).
///
/// Every occurrence of every known secret is replaced; where occurrences overlap (one secret
/// contains or overlaps another), the union of their spans becomes one `[REDACTED]`, so a longer
/// secret is never left half-visible because a shorter one matched first. Text containing no
/// secret is returned unchanged after one scan. Secrets can be added at any time.
#[derive(Default)]
pub struct Redactor {
    inner: RwLock<Inner>,
}

#[derive(Default)]
struct Inner {
    /// Known secrets, longest first, without duplicates.
    secrets: Vec<String>,
    /// Matcher over `secrets`; `None` while there are none.
    matcher: Option<AhoCorasick>,
}

impl Redactor {
    /// An empty redactor.
    pub fn new() -> Self {
        Redactor::default()
    }

    /// A redactor knowing `secrets` (values shorter than [`MIN_SECRET_BYTES`] are ignored).
    pub fn with_secrets<I, S>(secrets: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: AsRef<str>,
    {
        let redactor = Redactor::new();
        redactor.add_all(secrets);
        redactor
    }

    /// Adds several secrets, rebuilding the matcher once.
    pub fn add_all<I, S>(&self, secrets: I)
    where
        I: IntoIterator<Item = S>,
        S: AsRef<str>,
    {
        let mut inner = self.write();
        let before = inner.secrets.len();
        for secret in secrets {
            let secret = secret.as_ref();
            if secret.len() >= MIN_SECRET_BYTES && !inner.secrets.iter().any(|s| s == secret) {
                inner.secrets.push(secret.to_owned());
            }
        }
        if inner.secrets.len() != before {
            inner.rebuild();
        }
    }

    /// Whether `text` contains any known secret.
    pub fn contains_secret(&self, text: &str) -> bool {
        self.read().matcher.as_ref().is_some_and(|m| m.is_match(text))
    }

    /// How many secrets are known.
    pub fn len(&self) -> usize {
        self.read().secrets.len()
    }

    /// Whether no secret is known.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn read(&self) -> RwLockReadGuard<'_, Inner> {
        self.inner.read().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    fn write(&self) -> RwLockWriteGuard<'_, Inner> {
        self.inner.write().unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

impl Inner {
    fn rebuild(&mut self) {
        self.secrets
            .sort_by(|a, b| b.len().cmp(&a.len()).then_with(|| a.cmp(b)));
        self.matcher = match AhoCorasick::new(&self.secrets) {
            Ok(matcher) => Some(matcher),
            Err(error) => {
                // Only possible past aho-corasick's size limits; keep the previous behaviour of
                // redacting nothing new rather than failing callers.
                tracing::error!(%error, "could not build the secret matcher");
                None
            }
        };
    }
}

impl SecretRedactor for Redactor {
    fn remove_secret(&self, value: &str) {
        let mut inner = self.write();
        let before = inner.secrets.len();
        inner.secrets.retain(|s| s != value);
        if inner.secrets.len() != before {
            inner.rebuild();
        }
    }

    fn redact(&self, text: &str) -> String {
        let inner = self.read();
        let Some(matcher) = inner.matcher.as_ref() else {
            return text.to_owned();
        };
        if !matcher.is_match(text) {
            return text.to_owned();
        }
        // Union of all (possibly overlapping) occurrences, in order of start.
        let mut spans: Vec<(usize, usize)> = Vec::new();
        for found in matcher.find_overlapping_iter(text) {
            spans.push((found.start(), found.end()));
        }
        spans.sort_unstable();
        let mut out = String::with_capacity(text.len());
        let mut copied = 0;
        let mut current: Option<(usize, usize)> = None;
        for (start, end) in spans {
            match current {
                Some((cur_start, cur_end)) if start < cur_end => {
                    current = Some((cur_start, cur_end.max(end)));
                }
                Some((cur_start, cur_end)) => {
                    out.push_str(&text[copied..cur_start]);
                    out.push_str(REDACTED);
                    copied = cur_end;
                    current = Some((start, end));
                }
                None => current = Some((start, end)),
            }
        }
        if let Some((cur_start, cur_end)) = current {
            out.push_str(&text[copied..cur_start]);
            out.push_str(REDACTED);
            copied = cur_end;
        }
        out.push_str(&text[copied..]);
        out
    }

    fn add_secret(&self, value: &str) {
        self.add_all([value]);
    }
}

impl std::fmt::Debug for Redactor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Redactor")
            .field("secrets", &format_args!("[{} hidden]", self.len()))
            .finish()
    }
}

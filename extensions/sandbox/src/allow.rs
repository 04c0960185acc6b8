//! `[sandbox] allow_hosts`: the host names a confined process may reach through the bot's proxy.

use std::sync::Arc;

/// An allow-list of host names: exact names (`api.github.com`) and wildcards (`*.example.com`:
/// every name below `example.com`, not `example.com` itself). Names are compared lowercase,
/// without a trailing dot. Cheap to clone.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct AllowList(Arc<[String]>);

impl AllowList {
    /// The list from config entries. Errors (one string naming the entry and what to write
    /// instead): an empty entry, a scheme, port, path or `*` other than a leading `*.`, or a
    /// character that cannot be in a host name.
    pub fn parse<S: AsRef<str>>(entries: &[S]) -> Result<AllowList, String> {
        let mut hosts = Vec::with_capacity(entries.len());
        for entry in entries {
            let raw = entry.as_ref();
            let name = normal(raw);
            let bare = name.strip_prefix("*.").unwrap_or(&name);
            let valid = !bare.is_empty()
                && bare
                    .split('.')
                    .all(|label| !label.is_empty() && label.chars().all(|c| c.is_ascii_alphanumeric() || c == '-'));
            if !valid {
                return Err(format!(
                    "`{raw}` is not a host name: write names such as \"api.github.com\" or \"*.example.com\" \
                     (no scheme, port or path)"
                ));
            }
            if !hosts.contains(&name) {
                hosts.push(name);
            }
        }
        Ok(AllowList(hosts.into()))
    }

    /// Whether `host` (a name or an address literal as a client sent it) is on the list.
    pub fn allows(&self, host: &str) -> bool {
        let host = normal(host);
        self.0.iter().any(|entry| match entry.strip_prefix("*.") {
            Some(domain) => host
                .strip_suffix(domain)
                .is_some_and(|sub| sub.len() > 1 && sub.ends_with('.')),
            None => *entry == host,
        })
    }

    /// The entries, normalised, in config order.
    pub fn hosts(&self) -> &[String] {
        &self.0
    }
}

/// Lowercase, without surrounding blanks, a trailing dot or IPv6 brackets.
fn normal(host: &str) -> String {
    host.trim()
        .trim_end_matches('.')
        .trim_start_matches('[')
        .trim_end_matches(']')
        .to_ascii_lowercase()
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn exact_names_and_wildcards_match_as_documented() {
        let list = AllowList::parse(&["api.GitHub.com.", "*.example.com"]).unwrap();
        for yes in ["api.github.com", "API.github.com.", "a.example.com", "b.a.example.com"] {
            assert!(list.allows(yes), "{yes}");
        }
        for no in [
            "github.com",
            "example.com",
            "xexample.com",
            "a.example.com.evil",
            "127.0.0.1",
            "",
        ] {
            assert!(!list.allows(no), "{no}");
        }
    }

    #[test]
    fn entries_that_are_not_host_names_are_refused_naming_them() {
        for bad in [
            "https://x.com",
            "x.com:443",
            "x.com/path",
            "",
            "*",
            "a..b",
            "*.*.x.com",
            "x y",
        ] {
            let e = AllowList::parse(&[bad]).unwrap_err();
            assert!(e.contains(&format!("`{bad}`")), "{bad}: {e}");
        }
    }
}

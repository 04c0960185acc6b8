//! The processes slice: the command, cwd and environment of every process started on the agent's
//! behalf (spec: architecture.md, "Processes and secrets"; extensions.md, "Spawning processes").
//!
//! Entry type: [`ProcessSpawnPolicy`], which implements the contract
//! [`volcanic_abstractions::processes::ProcessSpawnPolicy`]. Its pipeline, in this order:
//!
//! ```text
//! inherit the host environment (unless options.inherit = false)
//!   → filter: deny-list (names; and any value holding a URL with a password), allow-list,
//!     variables whose value contains a known secret
//!   → explicit request.env (never filtered; None removes a variable)
//!   → TZ from request.time_zone
//!   → host hooks, in order (an Err fails the spawn with ProcessSpawnError)
//!   → the sandbox, when set (ProcessSpawnPolicy::with_sandbox): confines the prepared process
//! ```
//!
//! The result is the child's **complete** environment: spawners clear the inherited one and apply
//! exactly [`ProcessSpawnContext::env`](volcanic_abstractions::processes::ProcessSpawnContext).
//! Nothing falls back to the inherited environment when a hook fails. The session adds the
//! `ProcessSpawnEvent` dispatch to extensions on top of this policy.
//!
//! [`Redactor`] is the policy's [`SecretRedactor`](volcanic_abstractions::processes::SecretRedactor):
//! it replaces every known secret with `[REDACTED]`; its set starts with the values of host
//! variables the deny-list matches and the configured secret values (each at least
//! [`MIN_HOST_SECRET_CHARS`] characters), and can grow at run time. An inherited variable whose
//! value contains a known secret is dropped like a denied one, whatever its name.
//!
//! [`harden_host_process`] makes the host non-dumpable (`prctl(PR_SET_DUMPABLE, 0)`), once per
//! process. The host calls it at start-up (`harden_process = true`); the policy never does, so test
//! runners stay dumpable. The sandbox itself is a backend behind
//! [`ProcessSandbox`](volcanic_abstractions::processes::ProcessSandbox) (the host's
//! `volcanic-sandbox` crate: Landlock + seccomp); without one, children run as the host's OS user
//! with its access.

mod group;
mod hardening;
mod options;
mod policy;
mod redactor;

pub use group::{GroupChild, ProcessGroupKiller, spawn_in_group};
pub use hardening::{HardeningError, harden_host_process};
pub use options::{DEFAULT_DENY, NamePattern, ProcessEnvironmentOptions};
pub use policy::{EnvSource, ProcessSpawnPolicy};
pub use redactor::{MIN_HOST_SECRET_CHARS, MIN_SECRET_BYTES, Redactor, is_host_secret};

#[cfg(test)]
mod policy_tests;
#[cfg(test)]
mod redactor_tests;

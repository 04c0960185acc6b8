//! The Landlock + seccomp backend of the process sandbox seam
//! ([`ProcessSandbox`](volcanic_abstractions::processes::ProcessSandbox)); docs/sandbox.md.
//!
//! Every process the host's process policy prepares gets a [`ChildConfinement`] that runs in the
//! child between `fork` and `exec`, in this order:
//!
//! ```text
//! (allow-list only: a user and network namespace of its own holding only loopback, listening
//!   for the bot's proxy on 127.0.0.1:PROXY_PORT)
//!   → drop every capability (bounding set, ambient, effective/permitted/inheritable; securebits
//!   NOROOT locked when the host could set them)
//!   → no_new_privs
//!   → Landlock (the highest ABI the kernel offers, best effort): read/execute of the system,
//!     read-write of the workspace and its private temp dir, nothing else; signals and abstract
//!     UNIX sockets scoped to the sandbox (ABI ≥ 6); TCP refused with `network = off` (ABI ≥ 4)
//!   → seccomp: ptrace, process_vm_*, mount family, namespaces, keyctl, bpf, perf_event_open,
//!     modules, kexec, reboot, io_uring, ... refused with EPERM (inet sockets too with
//!     `network = off`)
//!   → (allow-list only: the bridge process that hands connections to the proxy)
//! ```
//!
//! The network policy is the bot's ([`SandboxSettings::network`]) or, for a chat's processes,
//! the chat's own ([`ChatNetworks`]); the allow-list's proxy runs in the host ([`PROXY_PORT`]).
//!
//! Entry type: [`LandlockSandbox`], built from [`SandboxSettings`] and the probed
//! [`KernelSupport`]. What the kernel lacks is left out (and said once at start, by the host), or
//! refused with [`SandboxMode::Required`]. The bot's built-in file tools get the same boundary
//! ([`FileBoundary`](volcanic_abstractions::processes::FileBoundary)).
//!
//! [`ChildConfinement`]: volcanic_abstractions::processes::ChildConfinement

mod allow;
mod chats;
mod child;
mod netns;
mod paths;
mod proxy;
mod rulesets;
mod sandbox;
mod seccomp;
mod settings;
mod support;

pub use allow::AllowList;
pub use chats::{CHAT_NETWORKS_DIR, ChatNetworkError, ChatNetworks};
pub use netns::PROXY_PORT;
pub use paths::resolved;
pub use proxy::TEST_RESOLVE_ENV;
pub use sandbox::LandlockSandbox;
pub use settings::{NetworkPolicy, SandboxError, SandboxMode, SandboxSettings};
pub use support::{KernelSupport, SIMULATE_ENV};

//! The doctor's sandbox line: what the kernel offers and what the bot will do with it.

use super::Check;
use crate::config::Config;
use volcanic_sandbox::{KernelSupport, SandboxMode};

/// `sandbox`: Landlock ABI, seccomp, user namespaces, and the outcome of `[sandbox] mode` on
/// this kernel: ok when confined, a note when `auto` runs with less, a failure when `required`
/// would refuse to start or the sandbox is off.
pub(super) fn check(config: &Config, support: KernelSupport) -> Check {
    let offers = format!(
        "kernel: Landlock {}, seccomp {}, user namespaces {}",
        support
            .landlock_abi
            .map_or_else(|| "missing".to_owned(), |abi| format!("ABI {abi}")),
        if support.seccomp { "yes" } else { "missing" },
        if support.user_namespaces { "yes" } else { "no" },
    );
    match (config.sandbox.mode, support.missing()) {
        (SandboxMode::Off, _) => Check::fail(
            "sandbox",
            format!("{offers}; [sandbox] mode = \"off\": agent processes run unconfined"),
            "remove `mode = \"off\"` from [sandbox] (docs/sandbox.md)",
        ),
        (SandboxMode::Required, Some(missing)) => Check::fail(
            "sandbox",
            format!("{offers}; [sandbox] mode = \"required\" refuses to start: {missing}"),
            "run on a kernel with Landlock and seccomp, or set [sandbox] mode = \"auto\"",
        ),
        (SandboxMode::Auto, Some(missing)) => Check::note(
            "sandbox",
            format!("{offers}; mode auto: runs confined without what is missing ({missing})"),
        ),
        (SandboxMode::Auto | SandboxMode::Required, None) => Check::ok(
            "sandbox",
            format!("{offers}; every agent process confined (Landlock, seccomp, no capabilities)"),
        ),
    }
}

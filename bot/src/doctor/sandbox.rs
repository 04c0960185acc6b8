//! The doctor's sandbox line: what the kernel offers and what the bot will do with it.

use super::Check;
use crate::config::Config;
use volcanic_sandbox::{KernelSupport, NetworkPolicy, SandboxMode};

/// `sandbox`: Landlock ABI, seccomp, user namespaces (whether the allow-list can work), and the
/// outcome of `[sandbox] mode` on this kernel: ok when confined, a note when `auto` runs with
/// less, a failure when `required` would refuse to start, the sandbox is off, or `allow_hosts`
/// is set on a kernel without user namespaces (every spawn would fail).
pub(super) fn check(config: &Config, support: KernelSupport) -> Check {
    if matches!(config.sandbox.network, NetworkPolicy::AllowList(_))
        && config.sandbox.mode != SandboxMode::Off
        && !support.user_namespaces
    {
        return Check::fail(
            "sandbox",
            "[sandbox] allow_hosts needs unprivileged user namespaces, which this kernel refuses: every agent \
             process would fail to start",
            "allow user namespaces (sysctl user.max_user_namespaces > 0, kernel.unprivileged_userns_clone = 1, \
             no AppArmor restriction), or use network = \"on\" or \"off\" (docs/sandbox.md)",
        );
    }
    let check = outcome(config, support);
    let allow_list = if support.user_namespaces {
        "the allow-list (allow_hosts, /network allow) can work"
    } else {
        "the allow-list (allow_hosts, /network allow) cannot work: no unprivileged user namespaces"
    };
    Check {
        detail: format!("{}; {allow_list}", check.detail),
        ..check
    }
}

/// The outcome of `[sandbox] mode` on a kernel offering `support`.
fn outcome(config: &Config, support: KernelSupport) -> Check {
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

//! What the running kernel offers: Landlock (and its ABI), seccomp filters, user namespaces.

/// Set to `no-landlock` to make [`KernelSupport::probe`] report a kernel without Landlock, to
/// `no-userns` for one without unprivileged user namespaces, or to both, comma-separated (tests
/// and `doctor` show what the modes and the allow-list then do). Other values are ignored.
pub const SIMULATE_ENV: &str = "VOLCANIC_SANDBOX_SIMULATE";

/// The kernel's sandboxing features, as probed at start.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KernelSupport {
    /// The Landlock ABI version the kernel offers (`landlock_create_ruleset(NULL, 0,
    /// LANDLOCK_CREATE_RULESET_VERSION)`); `None` when Landlock is missing or disabled.
    pub landlock_abi: Option<i32>,
    /// Whether seccomp filters are available (`Seccomp_filters` in `/proc/self/status`).
    pub seccomp: bool,
    /// Whether unprivileged user namespaces are allowed (the allow-list needs them).
    pub user_namespaces: bool,
    /// Whether [`SIMULATE_ENV`] hid Landlock.
    pub simulated_no_landlock: bool,
}

impl KernelSupport {
    /// Probes the running kernel, honouring [`SIMULATE_ENV`].
    pub fn probe() -> KernelSupport {
        let asked = std::env::var(SIMULATE_ENV).unwrap_or_default();
        let simulates = |what: &str| asked.split(',').any(|v| v.trim() == what);
        let simulated = simulates("no-landlock");
        KernelSupport {
            landlock_abi: if simulated { None } else { landlock_abi() },
            seccomp: seccomp_filters(),
            user_namespaces: !simulates("no-userns") && user_namespaces(),
            simulated_no_landlock: simulated,
        }
    }

    /// What is missing for full confinement, in words (`None`: nothing).
    pub fn missing(&self) -> Option<String> {
        let mut missing = Vec::new();
        if self.landlock_abi.is_none() {
            missing.push(if self.simulated_no_landlock {
                format!("Landlock is not available (simulated by {SIMULATE_ENV}=no-landlock)")
            } else {
                "Landlock is not available (kernel ≥ 5.13 with landlock in its `lsm=` list)".to_owned()
            });
        }
        if !self.seccomp {
            missing.push("seccomp filters are not available".to_owned());
        }
        (!missing.is_empty()).then(|| missing.join(" and "))
    }
}

/// The kernel's Landlock ABI version, asked with the version flag (no ruleset is made).
#[allow(unsafe_code)]
fn landlock_abi() -> Option<i32> {
    const LANDLOCK_CREATE_RULESET_VERSION: libc::c_long = 1;
    // SAFETY: with a null attribute pointer, size 0 and the version flag, the call only returns
    // a number (or -1 with errno); no memory is touched. The landlock crate keeps its ABI probe
    // private, so this one read-only query is ours.
    let version = unsafe {
        libc::syscall(
            libc::SYS_landlock_create_ruleset,
            std::ptr::null::<libc::c_void>(),
            0 as libc::size_t,
            LANDLOCK_CREATE_RULESET_VERSION,
        )
    };
    i32::try_from(version).ok().filter(|v| *v > 0)
}

fn seccomp_filters() -> bool {
    std::fs::read_to_string("/proc/self/status").is_ok_and(|s| s.lines().any(|l| l.starts_with("Seccomp_filters:")))
}

fn user_namespaces() -> bool {
    let number = |path: &str| {
        std::fs::read_to_string(path)
            .ok()
            .and_then(|s| s.trim().parse::<u64>().ok())
    };
    let max = number("/proc/sys/user/max_user_namespaces").unwrap_or(0) > 0;
    // Debian's switch; absent elsewhere (then allowed).
    let unprivileged = number("/proc/sys/kernel/unprivileged_userns_clone").is_none_or(|v| v != 0);
    max && unprivileged
}

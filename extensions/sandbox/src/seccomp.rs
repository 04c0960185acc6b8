//! The seccomp filters every confined child installs (rules fixed at start, compiled once).

use crate::settings::SandboxError;
use seccompiler::{
    BpfProgram, SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter, SeccompRule,
};
use std::collections::BTreeMap;

/// System calls a confined process never needs and that reach other processes, the kernel or the
/// mount table (refused with `EPERM`; after the Docker and Codex profiles).
const DENIED: &[libc::c_long] = &[
    libc::SYS_ptrace,
    libc::SYS_process_vm_readv,
    libc::SYS_process_vm_writev,
    libc::SYS_pidfd_getfd,
    libc::SYS_process_madvise,
    libc::SYS_kcmp,
    libc::SYS_mount,
    libc::SYS_umount2,
    libc::SYS_pivot_root,
    libc::SYS_chroot,
    libc::SYS_move_mount,
    libc::SYS_open_tree,
    libc::SYS_fsopen,
    libc::SYS_fsconfig,
    libc::SYS_fsmount,
    libc::SYS_fspick,
    libc::SYS_mount_setattr,
    libc::SYS_unshare,
    libc::SYS_setns,
    libc::SYS_keyctl,
    libc::SYS_add_key,
    libc::SYS_request_key,
    libc::SYS_bpf,
    libc::SYS_perf_event_open,
    libc::SYS_userfaultfd,
    libc::SYS_open_by_handle_at,
    libc::SYS_init_module,
    libc::SYS_finit_module,
    libc::SYS_delete_module,
    libc::SYS_kexec_load,
    libc::SYS_kexec_file_load,
    libc::SYS_reboot,
    libc::SYS_swapon,
    libc::SYS_swapoff,
    libc::SYS_acct,
    libc::SYS_quotactl,
    libc::SYS_syslog,
    libc::SYS_settimeofday,
    libc::SYS_clock_settime,
    libc::SYS_clock_adjtime,
    libc::SYS_adjtimex,
    libc::SYS_vhangup,
    // io_uring runs socket and file operations the filter below cannot see.
    libc::SYS_io_uring_setup,
    libc::SYS_io_uring_enter,
    libc::SYS_io_uring_register,
    #[cfg(target_arch = "x86_64")]
    libc::SYS_iopl,
    #[cfg(target_arch = "x86_64")]
    libc::SYS_ioperm,
];

/// Namespace flags `clone` may not carry (a new user namespace would bring capabilities back).
const NAMESPACE_FLAGS: &[libc::c_int] = &[
    libc::CLONE_NEWUSER,
    libc::CLONE_NEWNS,
    libc::CLONE_NEWPID,
    libc::CLONE_NEWNET,
    libc::CLONE_NEWUTS,
    libc::CLONE_NEWIPC,
    libc::CLONE_NEWCGROUP,
];

/// The filters, in install order: the `EPERM` filter (the list above, `clone` with a namespace
/// flag, `kill(-1)` and signals to the host's pid `host_pid`, inet sockets when `network_off`),
/// then `clone3` → `ENOSYS` (its flags sit behind a pointer the filter cannot read; libc then
/// falls back to `clone`, which the first filter checks).
pub(crate) fn filters(network_off: bool, host_pid: u32) -> Result<Vec<BpfProgram>, SandboxError> {
    let e = |e: seccompiler::BackendError| SandboxError::Seccomp(e.to_string());
    let cond =
        |arg: u8, len: SeccompCmpArgLen, op: SeccompCmpOp, value: u64| SeccompCondition::new(arg, len, op, value);
    let mut rules: BTreeMap<i64, Vec<SeccompRule>> = DENIED.iter().map(|s| (*s, Vec::new())).collect();
    let clone_rules = NAMESPACE_FLAGS
        .iter()
        .map(|flag| {
            let flag = *flag as u64;
            SeccompRule::new(vec![cond(
                0,
                SeccompCmpArgLen::Qword,
                SeccompCmpOp::MaskedEq(flag),
                flag,
            )?])
        })
        .collect::<Result<Vec<_>, _>>()
        .map_err(e)?;
    rules.insert(libc::SYS_clone, clone_rules);
    // Landlock's signal scope does this on ABI ≥ 6; this covers older kernels for the host.
    let target = |pid: u64| SeccompRule::new(vec![cond(0, SeccompCmpArgLen::Dword, SeccompCmpOp::Eq, pid)?]);
    for call in [
        libc::SYS_kill,
        libc::SYS_tgkill,
        libc::SYS_rt_sigqueueinfo,
        libc::SYS_rt_tgsigqueueinfo,
    ] {
        let mut list = vec![target(u64::from(host_pid)).map_err(e)?];
        if call == libc::SYS_kill {
            list.push(target(u64::from(u32::MAX)).map_err(e)?);
        }
        rules.insert(call, list);
    }
    rules.insert(libc::SYS_tkill, vec![target(u64::from(host_pid)).map_err(e)?]);
    if network_off {
        let domain =
            |d: libc::c_int| SeccompRule::new(vec![cond(0, SeccompCmpArgLen::Dword, SeccompCmpOp::Eq, d as u64)?]);
        let socket = vec![domain(libc::AF_INET).map_err(e)?, domain(libc::AF_INET6).map_err(e)?];
        rules.insert(libc::SYS_socket, socket);
    }
    let arch = std::env::consts::ARCH
        .try_into()
        .map_err(|err: seccompiler::BackendError| SandboxError::Seccomp(err.to_string()))?;
    let eperm = SeccompFilter::new(
        rules,
        SeccompAction::Allow,
        SeccompAction::Errno(libc::EPERM as u32),
        arch,
    )
    .map_err(e)?;
    let clone3 = SeccompFilter::new(
        BTreeMap::from([(libc::SYS_clone3, Vec::new())]),
        SeccompAction::Allow,
        SeccompAction::Errno(libc::ENOSYS as u32),
        arch,
    )
    .map_err(e)?;
    [eperm, clone3].into_iter().map(|f| f.try_into().map_err(e)).collect()
}

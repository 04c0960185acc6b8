//! The escape suite: a chat's `bash` (the scripted model's attempts, through the real binary)
//! tries to reach what is not its own: files of the bot, of other chats and of the host, the bot's
//! process, and the kernel. Every attempt is named, refused, and no planted secret appears in a
//! tool result, a session file, the Bot API double's log or the bot's log.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::sandbox_support::*;
use crate::support::FRIEND;

/// A raw system call through `/usr/bin/python3`'s ctypes: prints `errno=N` and fails when refused.
fn syscall(name: &'static str, number: libc::c_long, args: &str) -> Attempt {
    bash(
        name,
        format!(
            "/usr/bin/python3 -c 'import ctypes,sys; l=ctypes.CDLL(None, use_errno=True); \
             r=l.syscall({number}{args}); print(\"errno=%d\" % ctypes.get_errno()); sys.exit(r < 0)'"
        ),
    )
}

/// The attempts against the rig's places; `bot` is the bot's pid.
fn attempts(rig: &Rig, bot: u32) -> Vec<(Attempt, &'static str)> {
    let dir = rig.env.dir.path();
    let state = dir.join("data").display().to_string();
    let secret = format!("{state}/secret.txt");
    let config = dir.join("config").display().to_string();
    let home = rig.env.home().display().to_string();
    let other = format!("../{FRIEND}/notes.txt");
    let denied = "ermission denied";
    let eperm = "ot permitted";
    vec![
        (bash("read_state_file", format!("cat {secret}")), denied),
        (bash("list_state_dir", format!("ls {state}")), denied),
        (bash("read_other_chat_by_dotdot", format!("cat {other}")), denied),
        (bash("list_workspaces_root", "ls .."), denied),
        (bash("read_config_file", format!("cat {config}/volcanic.toml")), denied),
        (bash("read_config_folder", format!("cat {config}/notes")), denied),
        (bash("read_home_key", format!("cat {home}/.ssh/id_ed25519")), denied),
        (
            bash("read_via_proc_self_root", format!("cat /proc/self/root{secret}")),
            denied,
        ),
        (
            bash("read_via_proc_self_cwd", format!("cat /proc/self/cwd/{other}")),
            denied,
        ),
        (
            bash("symlink_to_state_file", format!("ln -s {secret} l1; cat l1")),
            denied,
        ),
        (
            bash("symlink_to_state_dir", format!("ln -s {state} l2; cat l2/secret.txt")),
            denied,
        ),
        (bash("hard_link_state_file", format!("ln {secret} h1")), ""),
        (bash("copy_state_file", format!("cp {secret} c1")), denied),
        (bash("rename_state_file_in", format!("mv {secret} m1")), ""),
        (bash("rename_other_chat_in", format!("mv ../{FRIEND} m2")), ""),
        (bash("write_into_state", format!("echo x > {state}/planted")), denied),
        (
            bash("append_to_config", format!("echo x >> {config}/volcanic.toml")),
            denied,
        ),
        (
            bash("write_other_chat", format!("echo x > ../{FRIEND}/planted")),
            denied,
        ),
        (bash("truncate_other_chat", format!(": > {other}")), denied),
        (bash("mkdir_in_state", format!("mkdir {state}/d")), denied),
        // Landlock does not cover metadata: the mode may change (docs/sandbox.md), the content stays closed.
        (
            bash(
                "chmod_then_read_state_file",
                format!("chmod 644 {secret}; cat {secret}"),
            ),
            denied,
        ),
        (bash("exec_from_state", format!("{state}/tool.sh")), denied),
        (bash("source_from_state", format!(". {state}/tool.sh")), ""),
        (bash("read_etc_shadow", "cat /etc/shadow"), denied),
        (bash("list_other_homes", "ls /home /root"), ""),
        (bash("read_host_tmp", "ls /tmp"), denied),
        (bash("read_bot_environ", format!("cat /proc/{bot}/environ")), ""),
        (
            bash(
                "read_bot_mem",
                format!("dd if=/proc/{bot}/mem bs=1 count=1 skip=4194304"),
            ),
            "",
        ),
        (bash("readlink_bot_fd", format!("readlink /proc/{bot}/fd/0")), ""),
        (
            bash("open_bot_fd", format!("cat /proc/{bot}/fd/0 /proc/{bot}/fd/3")),
            "",
        ),
        (bash("read_bot_root", format!("ls /proc/{bot}/root/")), ""),
        (bash("read_bot_cwd", format!("ls /proc/{bot}/cwd/")), ""),
        (bash("signal_bot", format!("kill -0 {bot}")), eperm),
        (bash("signal_bot_cont", format!("kill -CONT {bot}")), eperm),
        (bash("signal_everyone", "kill -0 -1"), ""),
        (
            syscall("ptrace_attach_bot", libc::SYS_ptrace, &format!(", 16, {bot}, 0, 0")),
            "errno=1",
        ),
        (
            syscall(
                "process_vm_readv_bot",
                libc::SYS_process_vm_readv,
                &format!(", {bot}, 0, 0, 0, 0, 0"),
            ),
            "errno=1",
        ),
        (
            bash("strace_bot", format!("strace -p {bot} -e trace=none -o /dev/null")),
            "",
        ),
        (bash("mount_tmpfs", "mkdir -p mnt; mount -t tmpfs none mnt"), ""),
        (syscall("umount_root", libc::SYS_umount2, ", b\"/proc\", 2"), "errno=1"),
        (
            syscall("pivot_root", libc::SYS_pivot_root, ", b\".\", b\".\""),
            "errno=1",
        ),
        (bash("unshare_user_namespace", "unshare -Ur id"), ""),
        (bash("unshare_mount_namespace", "unshare -m true"), ""),
        (syscall("keyctl", libc::SYS_keyctl, ", 0, -3"), "errno=1"),
        (
            syscall("add_key", libc::SYS_add_key, ", b\"user\", b\"k\", b\"v\", 1, -3"),
            "errno=1",
        ),
        (syscall("bpf", libc::SYS_bpf, ", 0, 0, 0"), "errno=1"),
        (
            syscall("perf_event_open", libc::SYS_perf_event_open, ", 0, 0, -1, -1, 0"),
            "errno=1",
        ),
        (
            syscall("finit_module", libc::SYS_finit_module, ", -1, b\"\", 0"),
            "errno=1",
        ),
        (
            syscall("delete_module", libc::SYS_delete_module, ", b\"nope\", 0"),
            "errno=1",
        ),
        (syscall("reboot_bad_magic", libc::SYS_reboot, ", 0, 0, 0, 0"), "errno=1"),
        (syscall("io_uring_setup", libc::SYS_io_uring_setup, ", 1, 0"), "errno=1"),
        (
            bash(
                "read_block_device",
                "head -c 1 /dev/vda || head -c 1 /dev/sda || head -c 1 /dev/nvme0n1",
            ),
            "",
        ),
        (bash("read_dev_mem", "head -c 1 /dev/mem"), ""),
        (bash("read_kernel_log", "head -c 1 /dev/kmsg"), ""),
        (bash("mknod_mem_device", "mknod m3 c 1 1 && head -c 1 m3"), ""),
        (bash("write_dev_shm", "echo x > /dev/shm/planted"), ""),
        (bash("write_proc_sys", "echo 1 > /proc/sys/kernel/sysrq"), ""),
        (bash("read_sys_firmware", "ls /sys/firmware"), ""),
        (
            bash(
                "keeps_a_capability",
                "! grep -q '^CapEff:[[:space:]]*0*$' /proc/self/status",
            ),
            "",
        ),
        (
            bash(
                "new_privileges_allowed",
                "! grep -q '^NoNewPrivs:[[:space:]]*1$' /proc/self/status",
            ),
            "",
        ),
    ]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_escape_attempt_through_bash_succeeds_and_no_planted_secret_leaks() {
    let rig = Rig::start("mode = \"required\"", &[]).await;
    let bot = rig.bot.child.id();
    let attempts = attempts(&rig, bot);
    assert!(attempts.len() >= 40, "{} attempts", attempts.len());
    let (list, needles): (Vec<Attempt>, Vec<&str>) = attempts.into_iter().unzip();
    let outputs = rig.run(&list, 12).await;
    let mut escaped = Vec::new();
    for ((attempt, needle), out) in list.iter().zip(&needles).zip(&outputs) {
        let refused = !out.contains(ESCAPED) && out.contains("Command exited with code") && out.contains(needle);
        if !refused {
            escaped.push(format!("{}: {out}", attempt.name));
        }
    }
    assert!(
        escaped.is_empty(),
        "not refused as expected:\n{}",
        escaped.join("\n---\n")
    );
    // Nothing of the attempts changed the places they aimed at.
    let dir = rig.env.dir.path();
    assert_eq!(std::fs::read_to_string(dir.join("data/secret.txt")).unwrap(), IN_STATE);
    assert!(!dir.join("data/planted").exists() && !dir.join("data/d").exists());
    let other = dir.join("workspaces").join(FRIEND.to_string());
    assert_eq!(std::fs::read_to_string(other.join("notes.txt")).unwrap(), IN_OTHER_CHAT);
    assert!(!other.join("planted").exists());
    assert!(
        rig.bot.log().contains("sandbox: every agent process confined"),
        "{}",
        rig.bot.log()
    );
    rig.assert_no_secret_anywhere();
}

/// A file-tool attempt (`read`, `write`, `edit` run in the bot itself): must be refused by the
/// boundary check.
fn tool(name: &'static str, tool: &'static str, args: serde_json::Value) -> Attempt {
    Attempt { name, tool, args }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_file_tools_reach_nothing_outside_the_workspace_whatever_the_path_trick() {
    use serde_json::json;
    let rig = Rig::start("", &[]).await;
    let dir = rig.env.dir.path();
    let secret = dir.join("data/secret.txt").display().to_string();
    let config = dir.join("config/volcanic.toml").display().to_string();
    let ws = rig.workspace();
    // Links made outside the sandbox (as an unconfined process could): the tools still refuse.
    std::os::unix::fs::symlink(dir.join("data/secret.txt"), ws.join("link")).unwrap();
    std::os::unix::fs::symlink(dir.join("data"), ws.join("dirlink")).unwrap();
    std::fs::hard_link(dir.join("data/secret.txt"), ws.join("hard")).unwrap();
    let other = format!("../{}/notes.txt", crate::support::FRIEND);
    let attempts = vec![
        tool("read_state_file", "read", json!({"path": secret})),
        tool("read_other_chat_by_dotdot", "read", json!({"path": other})),
        tool("read_config", "read", json!({"path": config})),
        tool("read_symlink_to_state", "read", json!({"path": "link"})),
        tool(
            "read_through_dir_symlink",
            "read",
            json!({"path": "dirlink/secret.txt"}),
        ),
        tool("read_hard_link", "read", json!({"path": "hard"})),
        tool(
            "read_proc_self_root",
            "read",
            json!({"path": format!("/proc/self/root{secret}")}),
        ),
        tool("read_home", "read", json!({"path": "~/.ssh/id_ed25519"})),
        tool(
            "write_into_state",
            "write",
            json!({"path": dir.join("data/planted").display().to_string(), "content": "x"}),
        ),
        tool(
            "write_through_dir_symlink",
            "write",
            json!({"path": "dirlink/planted", "content": "x"}),
        ),
        tool(
            "write_via_missing_dotdot",
            "write",
            json!({"path": "nope/../../../data/planted", "content": "x"}),
        ),
        tool("write_system", "write", json!({"path": "/etc/planted", "content": "x"})),
        tool(
            "edit_config",
            "edit",
            json!({"path": config, "edits": [{"oldText": "model", "newText": "x"}]}),
        ),
        tool(
            "edit_hard_link",
            "edit",
            json!({"path": "hard", "edits": [{"oldText": "planted", "newText": "x"}]}),
        ),
    ];
    let outputs = rig.run(&attempts, 7).await;
    let escaped: Vec<String> = attempts
        .iter()
        .zip(&outputs)
        .filter(|(_, out)| !out.contains("outside what this chat's sandbox may"))
        .map(|(a, out)| format!("{}: {out}", a.name))
        .collect();
    assert!(escaped.is_empty(), "not refused:\n{}", escaped.join("\n---\n"));
    assert!(!dir.join("data/planted").exists() && !std::path::Path::new("/etc/planted").exists());
    assert_eq!(std::fs::read_to_string(dir.join("data/secret.txt")).unwrap(), IN_STATE);
    // The tools still work in the workspace.
    let ok = rig
        .run(
            &[tool(
                "write_own",
                "write",
                json!({"path": "sub/own.txt", "content": "mine"}),
            )],
            1,
        )
        .await;
    assert!(
        ok[0].contains("Successfully wrote") || ws.join("sub/own.txt").is_file(),
        "{}",
        ok[0]
    );
    assert_eq!(std::fs::read_to_string(ws.join("sub/own.txt")).unwrap(), "mine");
    rig.assert_no_secret_anywhere();
}

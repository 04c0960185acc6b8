//! The legitimate-work suite: in a confined chat, the usual tools still work in the workspace.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::sandbox_support::*;
use serde_json::json;

/// A task: its name, the command, and text its output must hold.
fn task(name: &'static str, command: &str) -> Attempt {
    Attempt {
        name,
        tool: "bash",
        args: json!({ "command": format!("{command} && echo TASK-OK") }),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn everyday_work_succeeds_in_a_confined_workspace() {
    let rig = Rig::start("mode = \"required\"", &[]).await;
    let mut tasks = vec![
        task(
            "git_init_commit",
            "git init -q r && cd r && git -c user.name=a -c user.email=a@b commit -q --allow-empty -m m && git log --oneline | grep -q m",
        ),
        task(
            "python3_writes_a_file",
            "python3 -c 'open(\"p.txt\",\"w\").write(\"py\")' && grep -q py p.txt",
        ),
        task(
            "node_runs",
            "node -e 'require(\"fs\").writeFileSync(\"n.txt\", \"js\")' && grep -q js n.txt",
        ),
        task(
            "make_and_cc",
            "printf 'int main(void){return 0;}\\n' > m.c && printf 'm: m.c\\n\\tcc -o m m.c\\n' > Makefile && make -s && ./m",
        ),
        task("pipes", "seq 1 100 | sort -rn | head -1 | grep -q 100"),
        task(
            "background_job",
            "(sleep 0.1; echo bg > bg.txt) & wait; grep -q bg bg.txt",
        ),
        task("timeout_kills", "! timeout 0.2 sleep 5"),
        task("reads_etc_ssl", "ls /etc/ssl/certs | grep -q ."),
        task(
            "reads_zoneinfo",
            "test -s /usr/share/zoneinfo/UTC && TZ=Europe/Berlin date >/dev/null",
        ),
        task(
            "private_tmpdir",
            "t=$(mktemp) && echo x > \"$t\" && case \"$t\" in \"$TMPDIR\"/*) true;; *) false;; esac",
        ),
        task(
            "home_is_writable",
            "echo x > \"$HOME/.rc\" && git config --global user.name someone",
        ),
        task("dev_null_and_urandom", "head -c 4 /dev/urandom > /dev/null"),
    ];
    // Each task runs alone: one model turn per task.
    let outputs = rig.run(&tasks, 1).await;
    let failed: Vec<String> = tasks
        .drain(..)
        .zip(&outputs)
        .filter(|(_, out)| !out.contains("TASK-OK"))
        .map(|(t, out)| format!("{}: {out}", t.name))
        .collect();
    assert!(failed.is_empty(), "legitimate work failed:\n{}", failed.join("\n---\n"));
    assert!(rig.workspace().join("r/.git").is_dir());
    rig.assert_no_secret_anywhere();
}

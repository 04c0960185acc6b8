//! The container image: the runtime stage of `Containerfile` (FROM scratch) built with podman
//! around this test build of the bot, laid out by `scripts/container-rootfs.sh`, then unpacked
//! (`podman image mount`) and run with `chroot` as the image's user: `--version`, `doctor`
//! against the doubles, and a shell command as the agents run them. Containers themselves cannot
//! run on this kind of machine (the runtime cannot set rlimits or cgroups), so nothing here
//! starts one. Podman keeps its store in the test's temporary folder; the image is removed at
//! the end. Needs root, `podman` and `chroot` (scripts/test.sh installs them), and fails saying
//! so when they are missing.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support::*;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use volcanic_testkit::bot_api::BotApiServer;
use volcanic_testkit::model_server::{ModelServer, Turn};

/// The repository's root.
fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// Runs `c` and returns its output, failing with what to install when the program is missing.
fn run(c: &mut Command) -> Output {
    let program = c.get_program().to_string_lossy().into_owned();
    let out = c.output().unwrap_or_else(|e| {
        panic!("the container test needs `{program}` ({e}): apt-get install podman busybox-static binutils, as root")
    });
    assert!(
        out.status.success(),
        "{program} {:?} failed ({}):\n{}\n{}",
        c.get_args().collect::<Vec<_>>(),
        out.status,
        stdout(&out),
        stderr(&out)
    );
    out
}

/// Podman with its store, run files and temporary files in `dir`, so the test leaves nothing
/// behind and runs beside other podman users.
struct Podman {
    dir: PathBuf,
}

impl Podman {
    fn command(&self, args: &[&str]) -> Command {
        let mut c = Command::new("podman");
        c.arg("--root")
            .arg(self.dir.join("store"))
            .arg("--runroot")
            .arg(self.dir.join("run"))
            .args(["--storage-driver", "vfs", "--events-backend", "none"])
            .args(["--cgroup-manager", "cgroupfs"])
            .args(args)
            .env("TMPDIR", self.dir.join("tmp"));
        c
    }

    fn run(&self, args: &[&str]) -> String {
        stdout(&run(&mut self.command(args))).trim().to_owned()
    }
}

/// Removes the image however the test ends (its store goes with the temporary folder).
struct Image<'a> {
    podman: &'a Podman,
    tag: String,
}

impl Drop for Image<'_> {
    fn drop(&mut self) {
        let _ = self.podman.command(&["image", "unmount", &self.tag]).output();
        let _ = self.podman.command(&["rmi", "--force", &self.tag]).output();
    }
}

/// The runtime stage of the Containerfile with its `--from=builder /out/...` sources made local
/// to the build context (what the builder stage leaves in /out is what the script wrote here).
fn runtime_stage() -> String {
    let file = std::fs::read_to_string(repo().join("Containerfile")).unwrap();
    let start = file
        .rfind("\nFROM scratch\n")
        .expect("Containerfile ends with a FROM scratch stage");
    let stage = &file[start + 1..];
    assert_eq!(stage.matches("--from=builder ").count(), 2, "{stage}");
    assert_eq!(stage.matches(" /out/").count(), 2, "{stage}");
    stage.replace("--from=builder ", "").replace(" /out/", " ")
}

/// `chroot [--userspec=USER] ROOT ARGS` with exactly the environment `env`.
fn chroot(root: &Path, user: &str, args: &[&str], env: &[String]) -> Output {
    let mut c = Command::new("chroot");
    c.arg(format!("--userspec={user}")).arg(root).args(args).env_clear();
    for pair in env {
        let (k, v) = pair.split_once('=').unwrap();
        c.env(k, v);
    }
    c.output()
        .unwrap_or_else(|e| panic!("the container test needs `chroot` (coreutils): {e}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_image_built_from_scratch_runs_the_bot_and_its_doctor_on_its_own() {
    let uid = stdout(&run(Command::new("id").arg("-u"))).trim().to_owned();
    assert_eq!(
        uid, "0",
        "the container test needs root (podman's store and chroot); run it as root"
    );
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("tmp")).unwrap();
    // The test build without its debug info (a sixth of the size), as the release build ships.
    let binary = dir.path().join("volcanic-bot");
    run(Command::new("objcopy")
        .arg("--strip-debug")
        .arg(env!("CARGO_BIN_EXE_volcanic-bot"))
        .arg(&binary));
    let ctx = dir.path().join("ctx");
    run(Command::new(repo().join("scripts/container-rootfs.sh"))
        .arg(&binary)
        .arg(&ctx));
    std::fs::write(ctx.join("Containerfile"), runtime_stage()).unwrap();

    let podman = Podman {
        dir: dir.path().to_owned(),
    };
    let image = Image {
        podman: &podman,
        tag: format!("localhost/volcanic-bot-test:{}", std::process::id()),
    };
    let context = ctx.to_str().unwrap();
    podman.run(&["build", "--quiet", "--tag", &image.tag, context]);
    let config: serde_json::Value =
        serde_json::from_str(&podman.run(&["image", "inspect", "--format", "{{json .Config}}", &image.tag])).unwrap();
    assert_eq!(config["User"], "10001:10001", "{config}");
    assert_eq!(config["Entrypoint"], serde_json::json!(["/usr/local/bin/volcanic-bot"]));
    assert!(config["Volumes"].get("/var/lib/volcanic").is_some(), "{config}");
    let env: Vec<String> = serde_json::from_value(config["Env"].clone()).unwrap();
    assert!(
        env.contains(&"VOLCANIC_CONFIG=/etc/volcanic/volcanic.toml".to_owned()),
        "{env:?}"
    );
    let root = PathBuf::from(podman.run(&["image", "mount", &image.tag]));

    // The binary starts from the image's own loader and libraries, as the image's user.
    let user = "10001:10001";
    let version = chroot(&root, user, &["/usr/local/bin/volcanic-bot", "--version"], &env);
    let host = run(Command::new(env!("CARGO_BIN_EXE_volcanic-bot")).arg("--version"));
    assert!(version.status.success(), "{}", stderr(&version));
    assert_eq!(stdout(&version), stdout(&host));

    // doctor with the config where the image expects it, against the doubles on loopback
    // (chroot keeps the host's network): every check passes, the state volume is writable.
    let model = ModelServer::start().await.unwrap();
    model.push(Turn::reply("ok"));
    let tg = BotApiServer::start(TOKEN).await.unwrap();
    std::fs::write(
        root.join("etc/volcanic/volcanic.toml"),
        format!(
            "state_dir = \"/var/lib/volcanic/data\"\nworkspaces_dir = \"/var/lib/volcanic/workspaces\"\n\
             model = \"anthropic/claude-sonnet-4-5\"\n{}\
             [providers.anthropic]\nbase_url = \"{}\"\napi_key_env = \"E2E_ANTHROPIC_KEY\"\n",
            telegram_config(&tg, ""),
            model.url()
        ),
    )
    .unwrap();
    let mut with_keys = env.clone();
    with_keys.extend([
        format!("TELEGRAM_BOT_TOKEN={TOKEN}"),
        "E2E_ANTHROPIC_KEY=test-key".into(),
    ]);
    let doctor = tokio::task::spawn_blocking({
        let root = root.clone();
        move || chroot(&root, user, &["/usr/local/bin/volcanic-bot", "doctor"], &with_keys)
    })
    .await
    .unwrap();
    let text = stdout(&doctor);
    assert_eq!(doctor.status.code(), Some(0), "{text}\n{}", stderr(&doctor));
    assert!(
        text.contains("[ok]   config          /etc/volcanic/volcanic.toml loads"),
        "{text}"
    );
    assert!(text.contains("[ok]   token           @volcanic_test_bot"), "{text}");
    assert!(
        text.contains("[ok]   state_dir       /var/lib/volcanic/data: writable"),
        "{text}"
    );
    assert!(text.ends_with("All checks passed.\n"), "{text}");
    assert_eq!(tg.calls("getMe").len(), 1);

    // The agents' shell: bash, busybox's commands and the zone files are in the image.
    let shell = chroot(
        &root,
        user,
        &[
            "bash",
            "-c",
            "cd /tmp && echo hi > f && cat f && ls /usr/share/zoneinfo/Europe/Berlin",
        ],
        &env,
    );
    assert_eq!(
        stdout(&shell),
        "hi\n/usr/share/zoneinfo/Europe/Berlin\n",
        "{}",
        stderr(&shell)
    );
}

//! A fake `claude` executable (the `fake-claude` bin of this crate) for the Claude Code
//! provider's tests: it prints recorded `stream-json` lines in the shapes `claude -p
//! --output-format stream-json --verbose --include-partial-messages` prints (the Agent SDK's
//! `SDKMessage` union: `system`/`init`, `stream_event` partials, one content block per
//! `assistant` line, tool results as `user` lines, a `result` line with `total_cost_usd`,
//! `usage`, `modelUsage`, `is_error`, `subtype`). The real package is never installed by tests.
//!
//! It checks how it was started and fails loudly (exit 3, the reason on stderr) when a required
//! flag or `--model` is missing, `--permission-mode` is not one Claude Code knows, or any
//! environment variable outside [`ALLOWED_ENV`] is set (a bot secret must
//! never reach `claude`). The prompt (stdin) picks the scenario by marker:
//!
//! - `[tool]`: a `Bash` call (`toolu_1`, `{"command":"ls"}`, streamed, then whole) and its result
//!   (`notes.txt`), then the answer;
//! - `[error]`: an error result (`error_during_execution`);
//! - `[login]`: an error result asking to `/login`;
//! - `[crash]`: the init line, a stderr message and exit 1 without a result;
//! - `[slow]`: the init line and a first text delta, then a 120 s sleep (for abort tests);
//! - anything else: a streamed thinking and text answer.
//!
//! The answer reads `fake claude (<new|resumed> session <id>, model <m>, TZ <tz>, cwd <dir>): <the
//! prompt's last line>`, so a test can see the flags' effect; `--resume <id>` keeps `<id>`. Two
//! markers add to it (for the sandbox's tests), as Claude's own tools would act:
//!
//! - `[read <path>]`: ` | read <path>: <its content, or error: <why>>`;
//! - `[state]`: writes and reads back `fake-state` in its own config folder (`CLAUDE_CONFIG_DIR`,
//!   else `$HOME/.claude`): ` | state: ok`, or ` | state: error: <why>`.

use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::path::PathBuf;
use std::sync::OnceLock;

/// Environment variable names the fake accepts (what the provider may pass).
pub const ALLOWED_ENV: &[&str] = &[
    "PATH",
    "HOME",
    "LANG",
    "TZ",
    "TMPDIR",
    "CLAUDE_CODE_OAUTH_TOKEN",
    "CLAUDE_CONFIG_DIR",
];

/// The flags every run must carry.
pub const REQUIRED_FLAGS: &[&str] = &["-p", "--verbose", "--include-partial-messages"];

/// The fake's `main`: `args` without the program name, `env` its environment, `stdin` the
/// prompt; writes to `out`/`err`, returns the exit code.
pub fn run(
    args: &[String],
    env: &BTreeMap<String, String>,
    stdin: &str,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> i32 {
    if let Some(bad) = env.keys().find(|k| !ALLOWED_ENV.contains(&k.as_str())) {
        let _ = writeln!(
            err,
            "fake claude: unexpected environment variable {bad} (only {ALLOWED_ENV:?} may reach claude)"
        );
        return 3;
    }
    if let Some(missing) = REQUIRED_FLAGS.iter().find(|f| !args.iter().any(|a| a == *f)) {
        let _ = writeln!(err, "fake claude: missing flag {missing}");
        return 3;
    }
    let flag = |name: &str| {
        args.iter()
            .position(|a| a == name)
            .and_then(|i| args.get(i + 1))
            .cloned()
    };
    if flag("--output-format").as_deref() != Some("stream-json") {
        let _ = writeln!(err, "fake claude: missing --output-format stream-json");
        return 3;
    }
    let mode = flag("--permission-mode");
    if mode
        .as_deref()
        .is_some_and(|m| !["default", "acceptEdits", "plan", "bypassPermissions"].contains(&m))
    {
        let _ = writeln!(err, "fake claude: unknown --permission-mode {mode:?}");
        return 3;
    }
    let Some(model) = flag("--model") else {
        let _ = writeln!(err, "fake claude: missing --model");
        return 3;
    };
    let resume = flag("--resume");
    let session = resume.clone().unwrap_or_else(|| {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos());
        format!("fake-{:x}-{}", nanos, std::process::id())
    });
    let mut emit = |v: Value| {
        let _ = writeln!(out, "{v}");
        let _ = out.flush();
    };
    emit(
        json!({"type": "system", "subtype": "init", "session_id": session, "model": model,
        "cwd": cwd(), "tools": ["Bash", "Read"], "mcp_servers": [], "permissionMode": flag("--permission-mode")}),
    );
    let last_line = stdin.trim().lines().last().unwrap_or_default().to_owned();
    let answer = format!(
        "fake claude ({} session {session}, model {model}, TZ {}, cwd {}): {last_line}{}",
        if resume.is_some() { "resumed" } else { "new" },
        env.get("TZ").map_or("unset", String::as_str),
        cwd(),
        file_work(stdin, env),
    );
    if stdin.contains("[crash]") {
        let _ = writeln!(err, "fake claude: crashed on purpose");
        return 1;
    }
    if stdin.contains("[error]") || stdin.contains("[login]") {
        let said = if stdin.contains("[login]") {
            "Invalid API key · Please run /login"
        } else {
            "the fake failed during execution"
        };
        emit(result(&session, true, "error_during_execution", said));
        return 1;
    }
    let message = |n: u32, content: Value| {
        json!({"type": "assistant", "message": {"id": format!("msg_{n}"), "type": "message", "role": "assistant",
            "model": model, "content": [content]}, "parent_tool_use_id": null, "session_id": session})
    };
    let partial = |event: Value| json!({"type": "stream_event", "event": event, "parent_tool_use_id": null, "session_id": session});
    if stdin.contains("[tool]") {
        // As `claude` streams it: the partials of the tool-using message, then its whole block.
        emit(partial(
            json!({"type": "message_start", "message": {"id": "msg_1", "content": []}}),
        ));
        emit(partial(
            json!({"type": "content_block_start", "index": 0, "content_block": {"type": "tool_use", "id": "toolu_1", "name": "Bash", "input": {}}}),
        ));
        emit(partial(
            json!({"type": "content_block_delta", "index": 0, "delta": {"type": "input_json_delta", "partial_json": "{\"command\":\"ls\"}"}}),
        ));
        emit(partial(json!({"type": "content_block_stop", "index": 0})));
        emit(partial(
            json!({"type": "message_delta", "delta": {"stop_reason": "tool_use"}}),
        ));
        emit(partial(json!({"type": "message_stop"})));
        let call = json!({"type": "tool_use", "id": "toolu_1", "name": "Bash", "input": {"command": "ls"}});
        emit(message(1, call));
        emit(
            json!({"type": "user", "message": {"role": "user", "content": [{"type": "tool_result",
            "tool_use_id": "toolu_1", "content": "notes.txt", "is_error": false}]}, "parent_tool_use_id": null, "session_id": session}),
        );
    }
    emit(partial(
        json!({"type": "message_start", "message": {"id": "msg_2", "content": []}}),
    ));
    emit(partial(
        json!({"type": "content_block_start", "index": 0, "content_block": {"type": "thinking", "thinking": ""}}),
    ));
    emit(partial(
        json!({"type": "content_block_delta", "index": 0, "delta": {"type": "thinking_delta", "thinking": "Considering."}}),
    ));
    emit(partial(json!({"type": "content_block_stop", "index": 0})));
    emit(message(
        2,
        json!({"type": "thinking", "thinking": "Considering.", "signature": "sig"}),
    ));
    emit(partial(
        json!({"type": "content_block_start", "index": 1, "content_block": {"type": "text", "text": ""}}),
    ));
    let cut = answer.char_indices().nth(12).map_or(answer.len(), |(i, _)| i);
    emit(partial(
        json!({"type": "content_block_delta", "index": 1, "delta": {"type": "text_delta", "text": &answer[..cut]}}),
    ));
    if stdin.contains("[slow]") {
        std::thread::sleep(std::time::Duration::from_secs(120));
    }
    emit(partial(
        json!({"type": "content_block_delta", "index": 1, "delta": {"type": "text_delta", "text": &answer[cut..]}}),
    ));
    emit(partial(json!({"type": "content_block_stop", "index": 1})));
    emit(message(2, json!({"type": "text", "text": answer})));
    emit(partial(json!({"type": "message_stop"})));
    emit(result(&session, false, "success", &answer));
    0
}

/// What the `[read <path>]` and `[state]` markers of `stdin` did, as the answer's suffix.
fn file_work(stdin: &str, env: &BTreeMap<String, String>) -> String {
    let mut out = String::new();
    if let Some(path) = stdin.split("[read ").nth(1).and_then(|rest| rest.split(']').next()) {
        let got = std::fs::read_to_string(path).map_or_else(|e| format!("error: {e}"), |t| t.trim().to_owned());
        out.push_str(&format!(" | read {path}: {got}"));
    }
    if stdin.contains("[state]") {
        let dir = env
            .get("CLAUDE_CONFIG_DIR")
            .map(PathBuf::from)
            .or_else(|| env.get("HOME").map(|h| PathBuf::from(h).join(".claude")));
        let file = dir.map(|d| d.join("fake-state"));
        let done = match &file {
            Some(file) => std::fs::write(file, "kept")
                .and_then(|()| std::fs::read_to_string(file))
                .map_or_else(|e| format!("error: {e}"), |t| format!("ok ({t})")),
            None => "error: neither CLAUDE_CONFIG_DIR nor HOME is set".to_owned(),
        };
        out.push_str(&format!(" | state: {done}"));
    }
    out
}

fn cwd() -> String {
    std::env::current_dir().map_or_else(|_| "?".into(), |d| d.display().to_string())
}

fn result(session: &str, is_error: bool, subtype: &str, text: &str) -> Value {
    json!({"type": "result", "subtype": subtype, "is_error": is_error, "duration_ms": 12, "num_turns": 1,
        "result": text, "session_id": session, "total_cost_usd": 0.0123,
        "usage": {"input_tokens": 10, "cache_creation_input_tokens": 20, "cache_read_input_tokens": 30, "output_tokens": 5},
        "modelUsage": {"claude-sonnet-4-5": {"inputTokens": 10, "outputTokens": 5, "costUSD": 0.0123}},
        "permission_denials": []})
}

/// Entry point of the `fake-claude` bin.
pub fn main() -> i32 {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let env: BTreeMap<String, String> = std::env::vars().collect();
    let mut stdin = String::new();
    let _ = std::io::stdin().read_to_string(&mut stdin);
    run(&args, &env, &stdin, &mut std::io::stdout(), &mut std::io::stderr())
}

/// The path of the built `fake-claude` bin, building it (once per process) with the cargo that
/// runs the tests, in the same target directory and profile as the calling test.
///
/// # Errors
/// Says why it could not be built (the test then fails with it).
pub fn path() -> Result<PathBuf, String> {
    static PATH: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    PATH.get_or_init(build).clone()
}

fn build() -> Result<PathBuf, String> {
    let exe = std::env::current_exe().map_err(|e| format!("current_exe: {e}"))?;
    // target/<profile>/deps/<test> → target/<profile>
    let profile_dir = exe
        .parent()
        .and_then(|d| d.parent())
        .ok_or("the test binary is not in target/<profile>/deps")?;
    let target_dir = profile_dir.parent().ok_or("no target directory")?;
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let mut cmd = std::process::Command::new(cargo);
    // What `cargo test` sets for the test process would look like a changed build environment
    // to some build scripts (ring), rebuilding them on every run.
    for (k, _) in std::env::vars_os() {
        let k = k.to_string_lossy().into_owned();
        let keep = ["CARGO_HOME", "CARGO_TARGET_DIR", "CARGO_BUILD_JOBS"].contains(&k.as_str());
        if (k.starts_with("CARGO_") && !keep)
            || ["LD_LIBRARY_PATH", "OUT_DIR", "RUST_TEST_THREADS"].contains(&k.as_str())
        {
            cmd.env_remove(&k);
        }
    }
    cmd.args([
        "build",
        "--quiet",
        "-p",
        "volcanic-testkit",
        "--bin",
        "fake-claude",
        "--target-dir",
    ])
    .arg(target_dir)
    .current_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/.."));
    if profile_dir.file_name().is_some_and(|n| n == "release") {
        cmd.arg("--release");
    }
    let out = cmd
        .output()
        .map_err(|e| format!("cannot run cargo to build fake-claude: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "building fake-claude failed: {}",
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    let bin = profile_dir.join("fake-claude");
    bin.is_file()
        .then_some(bin.clone())
        .ok_or_else(|| format!("fake-claude was built but {} is missing", bin.display()))
}

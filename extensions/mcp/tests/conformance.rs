//! The conformance runner `@modelcontextprotocol/conformance` (pinned in `.testdeps`, on its
//! Node 22) against our client binary, for protocol 2025-11-25: every scenario its
//! `requirements/2025-11-25.yaml` lists for clients that we claim. A scenario passes when the
//! runner exits 0 and its `checks.json` has successes and no failure or warning.

use std::path::Path;
use std::process::Command;
use volcanic_testkit::testdeps;

/// Runs one client scenario; `Err` says what failed, with the runner's output.
fn run(scenario: &str) -> Result<(), String> {
    let node = testdeps::path("node_modules/node/bin/node")?;
    let runner = testdeps::path("node_modules/@modelcontextprotocol/conformance/dist/index.js")?;
    let client = env!("CARGO_BIN_EXE_mcp-conformance-client");
    let out = tempfile::tempdir().map_err(|e| e.to_string())?;
    let output = Command::new(&node)
        .arg(&runner)
        .args([
            "client",
            "--command",
            client,
            "--scenario",
            scenario,
            "--spec-version",
            "2025-11-25",
        ])
        .arg("-o")
        .arg(out.path())
        .output()
        .map_err(|e| format!("cannot run {}: {e}", node.display()))?;
    let log = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    if !output.status.success() {
        return Err(format!("runner exited with {}:\n{log}", output.status));
    }
    let checks = read_checks(out.path()).map_err(|e| format!("{e}\n{log}"))?;
    let status = |c: &serde_json::Value| c["status"].as_str().unwrap_or_default().to_owned();
    let bad: Vec<_> = checks
        .iter()
        .filter(|c| matches!(status(c).as_str(), "FAILURE" | "WARNING"))
        .map(|c| format!("{}: {}", c["id"], c["errorMessage"]))
        .collect();
    let passed = checks.iter().filter(|c| status(c) == "SUCCESS").count();
    if !bad.is_empty() || passed == 0 {
        return Err(format!("{passed} checks passed; failed: {bad:?}\n{log}"));
    }
    Ok(())
}

/// The checks of the one result folder the runner wrote under `dir` (`auth/x` scenarios write
/// one level deeper, under `auth/`).
fn read_checks(dir: &Path) -> Result<Vec<serde_json::Value>, String> {
    let entries = std::fs::read_dir(dir).map_err(|e| e.to_string())?;
    for entry in entries.flatten() {
        let file = entry.path().join("checks.json");
        if file.is_file() {
            let text = std::fs::read_to_string(&file).map_err(|e| e.to_string())?;
            return serde_json::from_str(&text).map_err(|e| format!("{}: {e}", file.display()));
        }
        if entry.path().is_dir()
            && let Ok(checks) = read_checks(&entry.path())
        {
            return Ok(checks);
        }
    }
    Err(format!("the runner wrote no checks.json under {}", dir.display()))
}

/// Runs the scenarios in turn and reports every one that failed.
fn run_all(scenarios: &[&str]) {
    let failed: Vec<String> = scenarios
        .iter()
        .filter_map(|s| run(s).err().map(|e| format!("scenario `{s}`: {e}")))
        .collect();
    assert!(failed.is_empty(), "{}", failed.join("\n\n"));
}

#[test]
fn lifecycle_tools_elicitation_and_sse_retry_scenarios_pass() {
    run_all(&[
        "initialize",
        "tools_call",
        "elicitation-sep1034-client-defaults",
        "sse-retry",
    ]);
}

/// The `auth/*` client scenarios of `requirements/2025-11-25.yaml` (the scored ones; the
/// `not_scored` extensions, client credentials, enterprise-managed, DPoP and workload identity,
/// are not claimed): discovery variants, CIMD, scope selection and step-up, the three token
/// endpoint auth methods, a pre-registered client.
#[test]
fn auth_scenarios_pass() {
    run_all(&[
        "auth/metadata-default",
        "auth/metadata-var1",
        "auth/metadata-var2",
        "auth/metadata-var3",
        "auth/basic-cimd",
        "auth/scope-from-www-authenticate",
        "auth/scope-from-scopes-supported",
        "auth/scope-omitted-when-undefined",
        "auth/scope-step-up",
        "auth/scope-retry-limit",
        "auth/token-endpoint-auth-basic",
        "auth/token-endpoint-auth-post",
        "auth/token-endpoint-auth-none",
        "auth/pre-registration",
    ]);
}

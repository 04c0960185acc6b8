//! `deploy/`: the systemd unit is verified by `systemd-analyze verify` where it is installed,
//! and always by this file's own reading of it (sections, known keys, well-formed values, and
//! the hardening and shutdown settings docs/deploy.md promises), so a machine without systemd
//! checks it too, and says which check ran.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stderr)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

fn deploy_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../deploy")
}

/// Keys systemd knows, per section, that a service unit like ours may use (a subset of
/// systemd.unit(5), systemd.service(5), systemd.exec(5), systemd.kill(5)). A key outside the list
/// fails: add it here if systemd documents it.
const KNOWN: &[(&str, &[&str])] = &[
    (
        "Unit",
        &[
            "Description",
            "Documentation",
            "Wants",
            "Requires",
            "After",
            "Before",
            "PartOf",
            "StartLimitIntervalSec",
            "StartLimitBurst",
            "ConditionPathExists",
        ],
    ),
    (
        "Service",
        &[
            "Type",
            "User",
            "Group",
            "ExecStart",
            "ExecStartPre",
            "ExecReload",
            "EnvironmentFile",
            "Environment",
            "WorkingDirectory",
            "StateDirectory",
            "StateDirectoryMode",
            "LogsDirectory",
            "UMask",
            "Restart",
            "RestartSec",
            "KillMode",
            "KillSignal",
            "TimeoutStartSec",
            "TimeoutStopSec",
            "NoNewPrivileges",
            "ProtectSystem",
            "ReadWritePaths",
            "ReadOnlyPaths",
            "ProtectHome",
            "PrivateTmp",
            "PrivateDevices",
            "ProtectKernelTunables",
            "ProtectKernelModules",
            "ProtectKernelLogs",
            "ProtectControlGroups",
            "ProtectClock",
            "ProtectHostname",
            "RestrictSUIDSGID",
            "RestrictRealtime",
            "RestrictNamespaces",
            "LockPersonality",
            "RestrictAddressFamilies",
            "SystemCallArchitectures",
            "CapabilityBoundingSet",
            "AmbientCapabilities",
            "LimitNOFILE",
            "MemoryMax",
        ],
    ),
    ("Install", &["WantedBy", "RequiredBy", "Alias"]),
];

const BOOLEAN: &[&str] = &[
    "NoNewPrivileges",
    "PrivateTmp",
    "PrivateDevices",
    "ProtectKernelTunables",
    "ProtectKernelModules",
    "ProtectKernelLogs",
    "ProtectControlGroups",
    "ProtectClock",
    "ProtectHostname",
    "RestrictSUIDSGID",
    "RestrictRealtime",
    "RestrictNamespaces",
    "LockPersonality",
];

const TIME_SPANS: &[&str] = &[
    "RestartSec",
    "TimeoutStopSec",
    "TimeoutStartSec",
    "StartLimitIntervalSec",
];

/// A unit file read as systemd reads it: `[Section]`, `Key=Value`, `#`/`;` comments; a key
/// given twice keeps every value (as for ReadWritePaths). Errors name the line.
fn parse_unit(text: &str) -> Result<BTreeMap<(String, String), Vec<String>>, String> {
    let mut out: BTreeMap<(String, String), Vec<String>> = BTreeMap::new();
    let mut section: Option<String> = None;
    for (n, raw) in text.lines().enumerate() {
        let line = raw.trim();
        let at = n + 1;
        if line.is_empty() || line.starts_with('#') || line.starts_with(';') {
            continue;
        }
        if line.ends_with('\\') {
            return Err(format!("line {at}: continuation lines are not used here"));
        }
        if let Some(name) = line.strip_prefix('[').and_then(|l| l.strip_suffix(']')) {
            if !KNOWN.iter().any(|(s, _)| *s == name) {
                return Err(format!("line {at}: unknown section [{name}]"));
            }
            section = Some(name.to_owned());
            continue;
        }
        let Some(section) = &section else {
            return Err(format!("line {at}: `{line}` before any section"));
        };
        let Some((key, value)) = line.split_once('=') else {
            return Err(format!("line {at}: `{line}` is not Key=Value"));
        };
        let (key, value) = (key.trim(), value.trim());
        let keys = KNOWN
            .iter()
            .find(|(s, _)| s == section)
            .map(|(_, k)| *k)
            .unwrap_or_default();
        if !keys.contains(&key) {
            return Err(format!("line {at}: unknown key {key} in [{section}]"));
        }
        if BOOLEAN.contains(&key) && !matches!(value, "true" | "false" | "yes" | "no" | "1" | "0") {
            return Err(format!("line {at}: {key}={value} is not a boolean"));
        }
        if TIME_SPANS.contains(&key) {
            time_span(value).map_err(|e| format!("line {at}: {key}={value}: {e}"))?;
        }
        out.entry((section.clone(), key.to_owned()))
            .or_default()
            .push(value.to_owned());
    }
    Ok(out)
}

/// A systemd time span of the forms used here: `90`, `90s`, `5min`, `1h` (systemd.time(7)).
fn time_span(value: &str) -> Result<Duration, String> {
    let digits: String = value.chars().take_while(char::is_ascii_digit).collect();
    let n: u64 = digits.parse().map_err(|_| "not a time span".to_owned())?;
    let secs = match &value[digits.len()..] {
        "" | "s" | "sec" => n,
        "min" | "m" => n * 60,
        "h" => n * 3600,
        other => return Err(format!("unit `{other}` not understood")),
    };
    Ok(Duration::from_secs(secs))
}

fn one<'a>(unit: &'a BTreeMap<(String, String), Vec<String>>, section: &str, key: &str) -> &'a str {
    let values = unit
        .get(&(section.to_owned(), key.to_owned()))
        .unwrap_or_else(|| panic!("[{section}] {key} is missing"));
    values.last().unwrap()
}

/// `key = "value"` of the deploy config (a top-level string key).
fn config_value(text: &str, key: &str) -> String {
    text.lines()
        .find_map(|l| {
            let (k, v) = l.split_once('=')?;
            (k.trim() == key).then(|| v.trim().trim_matches('"').to_owned())
        })
        .unwrap_or_else(|| panic!("{key} missing from deploy/volcanic.toml"))
}

#[test]
fn the_unit_keeps_its_hardening_and_a_stop_timeout_above_the_graceful_shutdown() {
    let text = std::fs::read_to_string(deploy_dir().join("volcanic-bot.service")).unwrap();
    let unit = parse_unit(&text).unwrap_or_else(|e| panic!("deploy/volcanic-bot.service: {e}"));
    for (key, want) in [
        ("NoNewPrivileges", "true"),
        ("ProtectSystem", "strict"),
        ("ProtectHome", "true"),
        ("PrivateTmp", "true"),
        ("Restart", "on-failure"),
        ("KillMode", "mixed"),
    ] {
        assert_eq!(one(&unit, "Service", key), want, "{key}");
    }
    // The bot's own bound: 10 s for runs to finish, 5 s after aborting, 5 s for the
    // scheduler's records, 5 s to deliver queued answers (bot/src/telegram/mod.rs).
    let stop = time_span(one(&unit, "Service", "TimeoutStopSec")).unwrap();
    assert!(
        stop > Duration::from_secs(25),
        "TimeoutStopSec {stop:?} must exceed the 25 s shutdown"
    );
    // Secrets come from an environment file that the example documents.
    assert!(one(&unit, "Service", "EnvironmentFile").starts_with('/'));
    let env_example = std::fs::read_to_string(deploy_dir().join("volcanic.env.example")).unwrap();
    assert!(
        env_example.lines().any(|l| l.starts_with("TELEGRAM_BOT_TOKEN=")),
        "{env_example}"
    );
    // The state and workspaces of the deploy config are writable under ProtectSystem=strict.
    let config = std::fs::read_to_string(deploy_dir().join("volcanic.toml")).unwrap();
    let writable = &unit[&("Service".to_owned(), "ReadWritePaths".to_owned())];
    for key in ["state_dir", "workspaces_dir"] {
        let dir = config_value(&config, key);
        assert!(
            writable
                .iter()
                .flat_map(|v| v.split_whitespace())
                .any(|w| Path::new(&dir).starts_with(w)),
            "{key} {dir} is not under ReadWritePaths {writable:?}"
        );
    }
    // Enough descriptors that the listener's default cap (512, at most half the limit) holds
    // whole and the bot keeps the other half (docs/deploy.md, "The HTTP listener's limits").
    let nofile: u64 = one(&unit, "Service", "LimitNOFILE").parse().unwrap_or_default();
    assert!(nofile >= 4096, "LimitNOFILE {nofile}: set a number of at least 4096");
    let exec = one(&unit, "Service", "ExecStart");
    assert!(
        exec.starts_with('/') && exec.contains("--config /etc/volcanic/volcanic.toml"),
        "{exec}"
    );
}

#[test]
fn the_checker_refuses_what_systemd_would_warn_about() {
    assert!(
        parse_unit("[Service]\nBogus=1\n")
            .unwrap_err()
            .contains("unknown key Bogus")
    );
    assert!(parse_unit("[Servce]\n").unwrap_err().contains("unknown section"));
    assert!(
        parse_unit("[Service]\nTimeoutStopSec=abc\n")
            .unwrap_err()
            .contains("TimeoutStopSec=abc")
    );
    assert!(
        parse_unit("[Service]\nPrivateTmp=maybe\n")
            .unwrap_err()
            .contains("not a boolean")
    );
    assert!(parse_unit("Type=exec\n").unwrap_err().contains("before any section"));
}

#[test]
fn systemd_analyze_verifies_the_unit() {
    let text = std::fs::read_to_string(deploy_dir().join("volcanic-bot.service")).unwrap();
    parse_unit(&text).unwrap_or_else(|e| panic!("deploy/volcanic-bot.service: {e}"));
    let found = std::process::Command::new("systemd-analyze").arg("--version").output();
    if found.is_err() {
        eprintln!(
            "systemd-analyze is not available here: deploy/volcanic-bot.service was checked by this \
             test's own parser only (sections, known keys, values, hardening)"
        );
        return;
    }
    // verify checks that ExecStart's binary exists: point it at the one cargo built.
    let dir = tempfile::tempdir().unwrap();
    let unit = dir.path().join("volcanic-bot.service");
    std::fs::write(
        &unit,
        text.replace("/usr/local/bin/volcanic-bot", env!("CARGO_BIN_EXE_volcanic-bot")),
    )
    .unwrap();
    let out = std::process::Command::new("systemd-analyze")
        .arg("verify")
        .arg(&unit)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    // verify exits 0 on unknown keys and bad values too, with a warning naming the file.
    let about_unit: Vec<&str> = stderr.lines().filter(|l| l.contains("volcanic-bot.service")).collect();
    assert!(
        out.status.success() && about_unit.is_empty(),
        "systemd-analyze verify: {}\n{stderr}",
        out.status
    );
    eprintln!("systemd-analyze verify: the unit passed");
}

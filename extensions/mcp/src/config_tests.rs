use super::*;

fn raw(json: serde_json::Value) -> RawEntry {
    serde_json::from_value(json).unwrap_or_else(|e| panic!("bad test entry: {e}"))
}

fn lookup(name: &str) -> Option<String> {
    (name == "GITHUB_TOKEN").then(|| "ghp_secret_value".to_owned())
}

#[test]
fn host_entries_resolve_named_secrets_and_report_them() {
    let mut secrets = Vec::new();
    let spec = raw(serde_json::json!({"command": "srv", "env": {"GITHUB_TOKEN": "$GITHUB_TOKEN", "X": "a$$b"}}))
        .resolve("gh", Origin::Host, &lookup, &mut secrets)
        .map(|s| s.map(|s| s.transport));
    let Ok(Some(Transport::Stdio { env, .. })) = spec else {
        panic!("not resolved: {spec:?}");
    };
    assert_eq!(env["GITHUB_TOKEN"], "ghp_secret_value");
    assert_eq!(env["X"], "a$b");
    assert_eq!(secrets, vec!["ghp_secret_value".to_owned()]);
}

#[test]
fn missing_secrets_and_workspace_references_are_bad_entries_by_name() {
    let e = raw(serde_json::json!({"url": "https://x/mcp", "headers": {"Authorization": "Bearer ${NOPE}"}})).resolve(
        "remote",
        Origin::Host,
        &lookup,
        &mut Vec::new(),
    );
    assert!(
        matches!(&e, Err(b) if b.name == "remote" && b.reason.contains("`NOPE`")),
        "{e:?}"
    );
    let e = raw(serde_json::json!({"command": "srv", "env": {"T": "$GITHUB_TOKEN"}})).resolve(
        "gh",
        Origin::Workspace,
        &lookup,
        &mut Vec::new(),
    );
    assert!(
        matches!(&e, Err(b) if b.reason.contains("workspace file may not")),
        "{e:?}"
    );
    let e = raw(serde_json::json!({})).resolve("x", Origin::Host, &lookup, &mut Vec::new());
    assert!(matches!(&e, Err(b) if b.reason.contains("`command`")), "{e:?}");
    let e = raw(serde_json::json!({"command": "a"})).resolve("a b", Origin::Host, &lookup, &mut Vec::new());
    assert!(e.is_err());
}

#[test]
fn disabled_entries_start_nothing_and_filters_apply() {
    let off = raw(serde_json::json!({"command": "srv", "enabled": false}));
    assert_eq!(off.resolve("s", Origin::Host, &lookup, &mut Vec::new()), Ok(None));
    let spec = raw(serde_json::json!({"command": "srv", "include_tools": ["a", "b"], "exclude_tools": ["b"]})).resolve(
        "s",
        Origin::Host,
        &lookup,
        &mut Vec::new(),
    );
    let Ok(Some(spec)) = spec else { panic!("{spec:?}") };
    assert!(spec.wants("a") && !spec.wants("b") && !spec.wants("c"));
}

#[test]
fn workspace_file_keeps_good_entries_beside_bad_ones() {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    std::fs::create_dir_all(dir.path().join(".volcanic")).unwrap_or_else(|e| panic!("{e}"));
    std::fs::write(
        dir.path().join(WORKSPACE_FILE),
        r#"{"mcpServers": {"good": {"command": "srv", "args": ["x"]}, "bad": {"comand": "typo"}}}"#,
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let (ok, bad) = read_workspace(dir.path());
    assert_eq!(ok.len(), 1);
    assert_eq!(ok[0].name, "good");
    assert_eq!(bad.len(), 1);
    assert_eq!(bad[0].name, "bad");
    assert!(bad[0].reason.contains("comand"), "{}", bad[0].reason);
}

#[test]
fn shared_is_for_the_host_config_only() {
    let e = raw(serde_json::json!({"command": "srv", "shared": true})).resolve(
        "s",
        Origin::Workspace,
        &lookup,
        &mut Vec::new(),
    );
    assert!(
        matches!(&e, Err(b) if b.name == "s" && b.reason.contains("`shared` belongs in the host config")),
        "{e:?}"
    );
    let ok =
        raw(serde_json::json!({"command": "srv", "shared": true})).resolve("s", Origin::Host, &lookup, &mut Vec::new());
    assert!(matches!(ok, Ok(Some(_))), "{ok:?}");
}

#[test]
fn oauth_clients_resolve_their_secret_and_bad_ones_are_named() {
    let mut secrets = Vec::new();
    let entry = raw(
        serde_json::json!({"url": "https://x/mcp", "oauth": {"client_id": "bot", "client_secret": "$GITHUB_TOKEN", "scopes": ["tools"]}}),
    );
    let client = entry.oauth_client("remote", Origin::Host, &lookup, &mut secrets);
    let Ok(client) = client else {
        panic!("not resolved: {client:?}");
    };
    assert_eq!(client.client_id.as_deref(), Some("bot"));
    assert_eq!(client.client_secret.as_deref(), Some("ghp_secret_value"));
    assert_eq!(client.scopes, ["tools"]);
    assert_eq!(secrets, ["ghp_secret_value"]);
    let none =
        raw(serde_json::json!({"url": "https://x/mcp"})).oauth_client("r", Origin::Host, &lookup, &mut Vec::new());
    assert!(matches!(none, Ok(c) if c == crate::oauth::ClientSpec::default()));
    for (json, origin, why) in [
        (
            serde_json::json!({"url": "https://x/mcp", "oauth": {"client_id": "a"}}),
            Origin::Workspace,
            "belongs in the host config",
        ),
        (
            serde_json::json!({"url": "https://x/mcp", "oauth": {"client_secret": "s"}}),
            Origin::Host,
            "needs its `oauth.client_id`",
        ),
        (
            serde_json::json!({"command": "srv", "oauth": {"client_id": "a"}}),
            Origin::Host,
            "is for `url` servers",
        ),
    ] {
        let e = raw(json).oauth_client("r", origin, &lookup, &mut Vec::new());
        assert!(matches!(&e, Err(b) if b.name == "r" && b.reason.contains(why)), "{e:?}");
    }
}

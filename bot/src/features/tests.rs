#![allow(clippy::unwrap_used, clippy::expect_used)]

use super::*;
use volcanic_core::processes::ProcessEnvironmentOptions;

/// Services of a console-like host (no Telegram) for the config `toml`.
pub(super) fn services(toml: &str) -> Services {
    let config = Config::parse(toml, Path::new("test.toml")).unwrap();
    Services::new(
        Arc::new(config),
        Arc::new(ProcessSpawnPolicy::new(ProcessEnvironmentOptions::default())),
        PathBuf::from("/nonexistent/state"),
        PathBuf::from("/nonexistent/workspaces"),
        CancellationToken::new(),
    )
}

/// A feature that never finishes stopping, with one command.
struct Stuck;

#[async_trait]
impl HostFeature for Stuck {
    fn name(&self) -> &'static str {
        "stuck"
    }
    async fn stop(&self) {
        std::future::pending::<()>().await;
    }
    fn commands(&self) -> &[FeatureCommand] {
        &[FeatureCommand {
            name: "stuck",
            description: "Never stops",
            turn: Turn::AtOnce,
        }]
    }
    fn help(&self) -> &[&'static str] {
        &["/stuck - never stops"]
    }
    fn press_prefix(&self) -> Option<&'static str> {
        Some("stuck:")
    }
}

fn stuck(_: &Services) -> anyhow::Result<Option<Arc<dyn HostFeature>>> {
    Ok(Some(Arc::new(Stuck)))
}

#[test]
fn without_telegram_only_the_features_that_need_no_chat_are_built() {
    let features = Features::build(&services("[example]\nreply = \"hi\"\n")).unwrap();
    // Recall and memory need no chat: the console's session searches its own past sessions and
    // keeps its working directory's memory.
    assert_eq!(format!("{features:?}"), "[\"recall\", \"memory\", \"example\"]");
    let none = Features::build(&services("[memory]\nmax_chars = 100\n")).unwrap();
    assert_eq!(format!("{none:?}"), "[\"recall\", \"memory\"]");
}

#[test]
fn a_section_no_feature_reads_is_an_error_naming_its_key_and_the_known_ones() {
    let err = Features::build(&services("[exampel]\nreply = \"hi\"\n"))
        .unwrap_err()
        .to_string();
    assert_eq!(
        err,
        "config key `exampel`: not a setting, and no feature reads it (features: a2a, allowance, example, mcp, memory)"
    );
}

#[test]
fn memory_refuses_unknown_keys_and_a_cap_out_of_range() {
    let err = Features::build(&services("[memory]\nmax_char = 10\n"))
        .unwrap_err()
        .to_string();
    assert!(
        err.starts_with("config key `memory`: ") && err.contains("max_char"),
        "{err}"
    );
    let err = Features::build(&services("[memory]\nmax_chars = 0\n"))
        .unwrap_err()
        .to_string();
    assert!(
        err.starts_with("config key `memory.max_chars`: 0 is out of range"),
        "{err}"
    );
}

#[test]
fn a_bad_key_in_a_section_is_an_error_naming_the_section_and_the_key() {
    let err = Features::build(&services("[example]\nrepyl = \"hi\"\n"))
        .unwrap_err()
        .to_string();
    assert!(err.starts_with("config key `example`: "), "{err}");
    assert!(err.contains("repyl"), "{err}");
}

#[test]
fn commands_help_and_extensions_come_in_list_order() {
    let s = services("[example]\n");
    let builders: &[Build] = &[stuck, example::build];
    let features = Features::build_from(builders, &s).unwrap();
    let names: Vec<&str> = features.commands().iter().map(|c| c.name).collect();
    assert_eq!(names, ["stuck", "example"]);
    assert_eq!(
        features.help(),
        ["/stuck - never stops", "/example - the example feature answers"]
    );
    let (f, c) = features.command("example").unwrap();
    assert_eq!((f.name(), c.turn), ("example", Turn::Waits));
    assert!(features.command("nope").is_none());
    let place = SessionPlace {
        chat: None,
        time_zone: chrono_tz::UTC,
        workspace: Path::new("/w/ws"),
        caller: None,
    };
    assert_eq!(features.session_extensions(&place).len(), 1);
    assert!(features.routes().is_some());
    assert!(features.taker("anything").is_none());
    assert!(features.chat_files("123").is_empty());
    // Presses go to the feature whose prefix the data has, with the rest of the data.
    let (f, rest) = features.presser("stuck:d:1").unwrap();
    assert_eq!((f.name(), rest), ("stuck", "d:1"));
    assert!(features.presser("cmd:/model").is_none());
}

#[tokio::test(start_paused = true)]
async fn a_stop_step_that_hangs_is_left_after_its_bound() {
    let features = Features::build_from(&[stuck], &services("")).unwrap();
    let started = tokio::time::Instant::now();
    features.stop().await;
    assert_eq!(started.elapsed(), STOP_BOUND);
}

#[test]
fn the_services_and_features_can_be_shared_between_tasks() {
    fn shared<T: Send + Sync + 'static>() {}
    shared::<Features>();
    shared::<Services>();
    shared::<Arc<dyn HostFeature>>();
}

#[test]
fn the_a2a_server_section_is_checked_without_telegram_as_doctor_does() {
    let toml = "[http]\npublic_url = \"https://bot.example.org\"\n[a2a.server]\n\
                [[a2a.server.callers]]\nname = \"laptop\"\ntoken_env = \"VOLCANIC_TEST_UNSET_A2A_TOKEN\"\n";
    let s = services(toml);
    // The console builds no server...
    let features = Features::build(&s).unwrap();
    assert!(!format!("{features:?}").contains("a2a-server"));
    // ...but the check names the key the bot's start would refuse.
    let e = a2a_server::configured(&s)
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default();
    assert!(e.contains("a2a.server.callers[0].token_env"), "{e}");
    let e = a2a_server::configured(&services("[a2a.server]\nnmae = \"x\"\n"))
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default();
    assert!(e.contains("nmae"), "{e}");
}

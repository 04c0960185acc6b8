//! Skills: listing, `session-start` and `turn-end` hooks, `protected-paths`, `skill_hooks = false`.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support::*;
use pretty_assertions::assert_eq;
use serde_json::json;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};
use volcanic_abstractions::messages::Message;
use volcanic_core::agent::{AgentSession, AgentSessionFactory, AgentSessionOptions, PromptInput, SessionSelect};

/// A temp dir with a workspace `ws/` and a Volcanic home `home/`.
struct Setup {
    dir: tempfile::TempDir,
}

impl Setup {
    fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("ws")).unwrap();
        std::fs::create_dir_all(dir.path().join("home")).unwrap();
        Setup { dir }
    }

    fn ws(&self) -> PathBuf {
        self.dir.path().join("ws")
    }

    fn home(&self) -> PathBuf {
        self.dir.path().join("home")
    }

    /// Writes `<root>/skills/<name>/SKILL.md` with `extra` frontmatter lines; returns its folder.
    fn skill(&self, root: &Path, name: &str, extra: &str) -> PathBuf {
        let dir = root.join("skills").join(name);
        std::fs::create_dir_all(&dir).unwrap();
        let md = format!("---\nname: {name}\ndescription: The {name} skill.\n{extra}---\n\nUse it well.\n");
        std::fs::write(dir.join("SKILL.md"), md).unwrap();
        dir
    }

    fn factory(&self, faux: Arc<Faux>, hooks: bool) -> AgentSessionFactory {
        let mut config = factory_config(faux, vec![], self.dir.path());
        config.skill_hooks = hooks;
        config.home_dir = Some(self.home());
        AgentSessionFactory::new(config)
    }

    async fn session(&self, turns: Vec<FauxTurn>, hooks: bool) -> (AgentSession, Arc<Faux>, AgentSessionFactory) {
        self.session_with(turns, hooks, false).await
    }

    /// A session of a factory with `hooks`, itself with `no_skill_hooks`.
    async fn session_with(
        &self,
        turns: Vec<FauxTurn>,
        hooks: bool,
        no_skill_hooks: bool,
    ) -> (AgentSession, Arc<Faux>, AgentSessionFactory) {
        let faux = Faux::new(turns);
        let factory = self.factory(faux.clone(), hooks);
        let session = factory
            .create(AgentSessionOptions {
                cwd: self.ws(),
                session: SessionSelect::New,
                time_zone: Some(chrono_tz::Europe::Berlin),
                no_skill_hooks,
                ..Default::default()
            })
            .await
            .unwrap();
        (session, faux, factory)
    }
}

fn hook(kind: &str, command: &str, timeout: u64) -> String {
    format!("  {kind}:\n    command: '{command}'\n    timeout: {timeout}\n")
}

fn hooks(list: &[String]) -> String {
    format!("hooks:\n{}", list.concat())
}

fn block(name: &str, text: &str) -> String {
    format!("<skill_session_context name=\"{name}\">\n{text}\n</skill_session_context>")
}

async fn prompt(session: &AgentSession, text: &str) {
    session.prompt(PromptInput::text(text)).await.unwrap();
}

#[tokio::test]
async fn skills_are_listed_and_session_start_output_reaches_the_system_prompt() {
    let s = Setup::new();
    let ws_notes = s.skill(
        &s.ws(),
        "notes",
        &hooks(&[hook("session-start", "echo notes index: 3 files", 5)]),
    );
    s.skill(&s.home(), "notes", "");
    let calendar = s.skill(&s.home(), "calendar", "");
    // An invalid file is skipped, not fatal.
    std::fs::create_dir_all(s.ws().join("skills/broken")).unwrap();
    std::fs::write(s.ws().join("skills/broken/SKILL.md"), "no frontmatter").unwrap();
    std::fs::write(
        s.home().join("skills/notes/SKILL.md"),
        "---\nname: notes\ndescription: GLOBAL\n---\n",
    )
    .unwrap();

    let (session, faux, _f) = s.session(vec![FauxTurn::text("ok")], true).await;
    prompt(&session, "hi").await;
    let system = faux.context(0).system_prompt;
    let listing = format!(
        "- calendar: The calendar skill. ({})\n- notes: The notes skill. ({})\n",
        calendar.join("SKILL.md").display(),
        ws_notes.join("SKILL.md").display()
    );
    assert!(system.contains(&listing), "{system}");
    assert!(!system.contains("GLOBAL") && !system.contains("broken"), "{system}");
    assert!(system.contains(&block("notes", "notes index: 3 files")), "{system}");
}

#[tokio::test]
async fn hooks_run_in_the_skill_folder_with_workspace_skill_dir_and_time_zone() {
    let s = Setup::new();
    let dir = s.skill(&s.ws(), "env", &hooks(&[hook("session-start", "./show.sh", 5)]));
    let script = dir.join("show.sh");
    std::fs::write(
        &script,
        "#!/bin/sh\nprintf 'ws=%s\\ndir=%s\\ntz=%s\\npwd=%s\\n' \"$VOLCANIC_WORKSPACE\" \"$VOLCANIC_SKILL_DIR\" \"$TZ\" \"$(pwd)\"\n",
    )
    .unwrap();
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    let (session, faux, _f) = s.session(vec![FauxTurn::text("ok")], true).await;
    prompt(&session, "hi").await;
    let system = faux.context(0).system_prompt;
    let real_dir = dir.canonicalize().unwrap();
    let want = format!(
        "ws={}\ndir={}\ntz=Europe/Berlin\npwd={}",
        s.ws().display(),
        dir.display(),
        real_dir.display()
    );
    assert!(system.contains(&block("env", &want)), "{system}");
}

#[tokio::test]
async fn a_hanging_session_start_hook_delays_a_run_by_at_most_its_timeout() {
    let s = Setup::new();
    s.skill(&s.ws(), "slow", &hooks(&[hook("session-start", "sleep 30", 1)]));
    let (session, faux, _f) = s.session(vec![FauxTurn::text("ok")], true).await;
    let start = Instant::now();
    prompt(&session, "hi").await;
    let elapsed = start.elapsed();
    assert!(elapsed < Duration::from_millis(1500), "waited {elapsed:?}");
    // The run did wait for the hook: its timeout is reported in the prompt.
    let system = faux.context(0).system_prompt;
    assert!(
        system.contains(&block(
            "slow",
            "[session-start hook timed out after 1 s and was stopped]"
        )),
        "{system}"
    );
}

#[tokio::test]
async fn turn_end_hooks_run_after_the_run_and_their_notice_follows_the_next_prompt() {
    let s = Setup::new();
    s.skill(&s.ws(), "indexer", &hooks(&[hook("turn-end", "echo reindexed", 5)]));
    s.skill(&s.ws(), "slow", &hooks(&[hook("turn-end", "sleep 30", 2)]));
    let (session, faux, _f) = s
        .session(vec![FauxTurn::text("one"), FauxTurn::text("two")], true)
        .await;
    let start = Instant::now();
    prompt(&session, "first").await;
    // Turn-end hooks are never awaited at the end of the run.
    assert!(start.elapsed() < Duration::from_millis(1500), "{:?}", start.elapsed());
    let second = Instant::now();
    prompt(&session, "second").await;
    // The next run waits for them, each until its deadline at most.
    assert!(second.elapsed() < Duration::from_millis(2500), "{:?}", second.elapsed());

    assert_eq!(
        transcript(&faux.context(0).messages),
        vec![("user", "first".to_owned())]
    );
    let notice = "Your skills' turn-end hooks ran after the previous answer:\n\n\
        <skill_turn_end name=\"indexer\">\nreindexed\n</skill_turn_end>\n\n\
        <skill_turn_end name=\"slow\">\n[turn-end hook timed out after 2 s and was stopped]\n</skill_turn_end>";
    assert_eq!(
        transcript(&faux.context(1).messages),
        vec![
            ("user", "first".to_owned()),
            ("assistant", "one".to_owned()),
            ("user", "second".to_owned()),
            ("custom", notice.to_owned()),
        ]
    );
    let custom_types: Vec<String> = session
        .messages()
        .iter()
        .filter_map(|m| match m {
            Message::Custom(c) => Some(c.custom_type.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(custom_types, vec!["skill_turn_end".to_owned()]);
}

#[tokio::test]
async fn hook_output_is_redacted() {
    let s = Setup::new();
    let leak = format!("echo token={TEST_SECRET}");
    s.skill(
        &s.ws(),
        "leaky",
        &hooks(&[hook("session-start", &leak, 5), hook("turn-end", &leak, 5)]),
    );
    let (session, faux, _f) = s
        .session(vec![FauxTurn::text("one"), FauxTurn::text("two")], true)
        .await;
    prompt(&session, "first").await;
    prompt(&session, "second").await;
    let system = faux.context(1).system_prompt;
    assert!(system.contains(&block("leaky", "token=[REDACTED]")), "{system}");
    let seen = format!("{system}{:?}", faux.context(1).messages);
    assert!(!seen.contains(TEST_SECRET), "{seen}");
    let notice = transcript(&faux.context(1).messages).pop().unwrap();
    assert_eq!(notice.0, "custom");
    assert!(notice.1.contains("token=[REDACTED]"), "{}", notice.1);
}

fn protected_calls() -> FauxTurn {
    FauxTurn::calls(vec![
        (
            "e1",
            "edit",
            json!({"path": "notes/index.md", "edits": [{"oldText": "original", "newText": "changed"}]}),
        ),
        (
            "w1",
            "write",
            json!({"path": "./notes/../notes/index.md", "content": "overwritten"}),
        ),
        ("w2", "write", json!({"path": "archive/2024/jan.md", "content": "x"})),
        ("w3", "write", json!({"path": "free.md", "content": "ok"})),
    ])
}

/// Asserts the protected calls of [`protected_calls`] were refused and the free one ran.
fn assert_refused(ws: &Path, messages: &[Message]) {
    let results = tool_results_of(messages);
    let ids: Vec<(&str, bool)> = results.iter().map(|(id, e, _)| (id.as_str(), *e)).collect();
    assert_eq!(ids, vec![("e1", true), ("w1", true), ("w2", true), ("w3", false)]);
    for (id, _, text) in &results[..2] {
        assert!(
            text.contains("`notes/index.md` is protected by the skill `guard` (pattern `notes/index.md`"),
            "{id}: {text}"
        );
    }
    assert!(results[2].2.contains("pattern `archive/**`"), "{}", results[2].2);
    assert_eq!(
        std::fs::read_to_string(ws.join("notes/index.md")).unwrap(),
        "original\n"
    );
    assert!(!ws.join("archive/2024/jan.md").exists());
    assert_eq!(std::fs::read_to_string(ws.join("free.md")).unwrap(), "ok");
}

#[tokio::test]
async fn protected_paths_refuse_write_and_edit_and_leave_the_files_unchanged() {
    let s = Setup::new();
    s.skill(
        &s.ws(),
        "guard",
        "protected-paths:\n  - notes/index.md\n  - \"archive/**\"\n",
    );
    std::fs::create_dir_all(s.ws().join("notes")).unwrap();
    std::fs::write(s.ws().join("notes/index.md"), "original\n").unwrap();
    let (session, faux, _f) = s.session(vec![protected_calls(), FauxTurn::text("done")], true).await;
    prompt(&session, "tidy up").await;
    // The model sees the refusals.
    assert_refused(&s.ws(), &faux.context(1).messages);
}

#[tokio::test]
async fn skill_hooks_off_runs_no_hook_but_skills_are_listed_and_paths_guarded() {
    hooks_off_runs_no_hook(false, false).await;
}

#[tokio::test]
async fn a_session_without_skill_hooks_runs_none_though_the_factory_has_them_on() {
    hooks_off_runs_no_hook(true, true).await;
}

/// With the factory's `hooks` and the session's `no_skill_hooks` (hooks off one way or the
/// other): no hook runs, skills are listed and their paths guarded.
async fn hooks_off_runs_no_hook(hooks_on: bool, no_skill_hooks: bool) {
    let s = Setup::new();
    let extra = format!(
        "{}protected-paths:\n  - notes/index.md\n  - \"archive/**\"\n",
        hooks(&[
            hook(
                "session-start",
                "touch \"$VOLCANIC_WORKSPACE/started\"; echo started",
                5
            ),
            hook("turn-end", "touch \"$VOLCANIC_WORKSPACE/ended\"", 5),
        ])
    );
    s.skill(&s.ws(), "guard", &extra);
    std::fs::create_dir_all(s.ws().join("notes")).unwrap();
    std::fs::write(s.ws().join("notes/index.md"), "original\n").unwrap();
    let turns = vec![protected_calls(), FauxTurn::text("done"), FauxTurn::text("again")];
    let (session, faux, _f) = s.session_with(turns, hooks_on, no_skill_hooks).await;
    prompt(&session, "tidy up").await;
    // With hooks on, this run would wait for the first run's turn-end hook.
    prompt(&session, "again").await;
    assert!(!s.ws().join("started").exists());
    assert!(!s.ws().join("ended").exists());
    let system = faux.context(2).system_prompt;
    assert!(system.contains("- guard: The guard skill."), "{system}");
    assert!(!system.contains("skill_session_context"), "{system}");
    assert!(
        !transcript(&faux.context(2).messages)
            .iter()
            .any(|(role, _)| *role == "custom")
    );
    assert_refused(&s.ws(), &faux.context(1).messages);
}

#[tokio::test]
async fn session_start_hooks_run_again_after_new_session_and_on_resume() {
    let s = Setup::new();
    let count = "echo run >> \"$VOLCANIC_WORKSPACE/starts\"; echo \"start $(wc -l < \"$VOLCANIC_WORKSPACE/starts\")\"";
    s.skill(&s.ws(), "counter", &hooks(&[hook("session-start", count, 5)]));
    let (session, faux, factory) = s
        .session(
            vec![FauxTurn::text("1"), FauxTurn::text("2"), FauxTurn::text("3")],
            true,
        )
        .await;
    prompt(&session, "a").await;
    assert!(faux.context(0).system_prompt.contains(&block("counter", "start 1")));
    session.new_session().await.unwrap();
    prompt(&session, "b").await;
    assert!(faux.context(1).system_prompt.contains(&block("counter", "start 2")));
    let resumed = factory
        .create(AgentSessionOptions {
            cwd: s.ws(),
            session: SessionSelect::Open(session.session_file().unwrap()),
            ..Default::default()
        })
        .await
        .unwrap();
    prompt(&resumed, "c").await;
    let system = faux.context(2).system_prompt;
    assert!(system.contains(&block("counter", "start 3")), "{system}");
}

#[tokio::test]
async fn session_start_hooks_run_again_after_a_compaction() {
    let s = Setup::new();
    let count = "echo run >> \"$VOLCANIC_WORKSPACE/starts\"; echo \"start $(wc -l < \"$VOLCANIC_WORKSPACE/starts\")\"";
    s.skill(&s.ws(), "counter", &hooks(&[hook("session-start", count, 5)]));
    let turns = vec![FauxTurn::text("1"), FauxTurn::text("2"), FauxTurn::text("3")];
    let (session, faux, _factory) = s.session(turns, true).await;
    prompt(&session, "a").await;
    prompt(&session, "b").await;
    assert!(faux.context(1).system_prompt.contains(&block("counter", "start 1")));
    session.compact(None).await.unwrap();
    prompt(&session, "c").await;
    let system = faux.context(2).system_prompt;
    assert!(system.contains(&block("counter", "start 2")), "{system}");
}

#[tokio::test]
async fn a_turn_end_notice_stays_with_its_conversation_after_new() {
    let s = Setup::new();
    s.skill(&s.ws(), "indexer", &hooks(&[hook("turn-end", "echo reindexed", 5)]));
    let turns = vec![FauxTurn::text("one"), FauxTurn::text("two")];
    let (session, faux, _f) = s.session(turns, true).await;
    prompt(&session, "first").await;
    session.new_session().await.unwrap();
    prompt(&session, "in the new session").await;
    assert_eq!(
        transcript(&faux.context(1).messages),
        vec![("user", "in the new session".to_owned())],
        "the old conversation's turn-end notice is not carried over"
    );
}

#[tokio::test]
async fn dispose_lets_a_running_turn_end_hook_finish() {
    let s = Setup::new();
    let write = "sleep 1; echo done > \"$VOLCANIC_WORKSPACE/indexed\"";
    s.skill(&s.ws(), "indexer", &hooks(&[hook("turn-end", write, 5)]));
    let (session, _faux, _f) = s.session(vec![FauxTurn::text("one")], true).await;
    prompt(&session, "first").await;
    session.dispose().await;
    assert_eq!(std::fs::read_to_string(s.ws().join("indexed")).unwrap(), "done\n");
}

//! The escape suite for the processes a chat starts without `bash`: a skill hook (of a skill the
//! owner installed in `state_dir/skills`, outside every workspace) and a watcher script. Each
//! tries to reach the bot's state, another chat's workspace and the bot's environment, and to
//! write outside its workspace: all refused (their output says so), and no planted secret appears
//! in what the model got, the session files, the Bot API double's log or the bot's log.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::sandbox_support::*;
use crate::support::{FRIEND, OWNER, nth_text, texts};
use serde_json::json;
use volcanic_testkit::bot_api::updates;
use volcanic_testkit::model_server::Turn;

/// The places an attempt aims at: (state_dir, another chat's workspace, the bot's pid).
fn places(rig: &Rig) -> (String, String, u32) {
    let dir = rig.env.dir.path();
    (
        dir.join("data").display().to_string(),
        dir.join("workspaces").join(FRIEND.to_string()).display().to_string(),
        rig.bot.child.id(),
    )
}

/// Fails unless every model request is free of the planted secrets and the rig's other places too.
fn assert_nothing_leaked(rig: &Rig) {
    let asked = serde_json::to_string(&rig.model.requests().iter().map(|r| &r.body).collect::<Vec<_>>()).unwrap();
    for secret in [IN_STATE, IN_OTHER_CHAT, IN_CONFIG_DIR, IN_HOME, IN_BOT_ENV] {
        assert!(!asked.contains(secret), "{secret} reached the model:\n{asked}");
    }
    rig.assert_no_secret_anywhere();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_skill_hook_reaches_the_sessions_workspace_and_its_own_skill_and_nothing_else() {
    let rig = Rig::start("mode = \"required\"", &[]).await;
    let (state, other, bot) = places(&rig);
    let command = format!(
        "cat {state}/secret.txt || echo REFUSED-state; cat {other}/notes.txt || echo REFUSED-other; \
         cat /proc/{bot}/environ || echo REFUSED-environ; echo x > {state}/planted || echo REFUSED-write-state; \
         echo x > \"$VOLCANIC_SKILL_DIR/tamper\" || echo REFUSED-write-skill; \
         test -r SKILL.md && echo READ-own-skill; echo hook > \"$VOLCANIC_WORKSPACE/hook.txt\" && echo WROTE-workspace"
    );
    let skill = rig.env.dir.path().join("data/skills/peek");
    std::fs::create_dir_all(&skill).unwrap();
    std::fs::write(
        skill.join("SKILL.md"),
        format!(
            "---\nname: peek\ndescription: Peeks.\nhooks:\n  session-start:\n    command: '{command}'\n    timeout: 20\n---\nPeek.\n"
        ),
    )
    .unwrap();
    rig.model.push(Turn::reply("hooked"));
    rig.tg.push_update(updates::text_message(OWNER, OWNER, "hello"));
    nth_text(&rig.tg, OWNER, "hooked", 1, &rig.bot).await;
    let system = serde_json::to_string(&rig.model.requests()[0].body["system"]).unwrap();
    for said in [
        "REFUSED-state",
        "REFUSED-other",
        "REFUSED-environ",
        "REFUSED-write-state",
        "REFUSED-write-skill",
        "READ-own-skill",
        "WROTE-workspace",
    ] {
        assert!(system.contains(said), "{said} missing from the hook's output: {system}");
    }
    assert_eq!(
        std::fs::read_to_string(rig.workspace().join("hook.txt")).unwrap(),
        "hook\n"
    );
    assert!(!skill.join("tamper").exists() && !rig.env.dir.path().join("data/planted").exists());
    assert_nothing_leaked(&rig);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_watcher_script_reaches_nothing_outside_its_workspace() {
    let rig = Rig::start("mode = \"required\"", &[]).await;
    let (state, other, bot) = places(&rig);
    let script = format!(
        "cat {state}/secret.txt 2>&1 || echo REFUSED-state\n\
         ls {state} 2>&1 || echo REFUSED-list-state\n\
         cat {other}/notes.txt 2>&1 || echo REFUSED-other\n\
         cat ../{FRIEND}/notes.txt 2>&1 || echo REFUSED-other-by-dotdot\n\
         cat /proc/{bot}/environ 2>&1 || echo REFUSED-environ\n\
         (echo x > {state}/planted) 2>&1 || echo REFUSED-write-state\n\
         (echo x > {other}/planted) 2>&1 || echo REFUSED-write-other\n\
         ln -s {state}/secret.txt link 2>&1; cat link 2>&1 || echo REFUSED-symlink\n"
    );
    std::fs::write(rig.workspace().join("watch.sh"), script).unwrap();
    rig.model.push(Turn::call(
        "call_1",
        "schedule",
        json!({"action": "add", "kind": "watcher", "script": "watch.sh", "every": "30s",
               "text": "Say what the watcher found."}),
    ));
    rig.model.push(Turn::reply("Watching."));
    rig.model.push(Turn::reply("The watcher found refusals."));
    rig.tg.push_update(updates::text_message(OWNER, OWNER, "watch"));
    nth_text(&rig.tg, OWNER, "Watching.", 1, &rig.bot).await;
    // The first run comes at the next 30 s slot.
    let found = |tg: &volcanic_testkit::bot_api::BotApiServer| {
        texts(tg, OWNER)
            .iter()
            .any(|t| t.contains("The watcher found refusals."))
    };
    rig.tg
        .wait_for(found, std::time::Duration::from_secs(70))
        .await
        .unwrap_or_else(|e| panic!("no watcher run: {e}\nbot log:\n{}", rig.bot.log()));
    let prompt = serde_json::to_string(rig.model.requests()[2].messages()).unwrap();
    for said in [
        "REFUSED-state",
        "REFUSED-list-state",
        "REFUSED-other",
        "REFUSED-other-by-dotdot",
        "REFUSED-environ",
        "REFUSED-write-state",
        "REFUSED-write-other",
        "REFUSED-symlink",
    ] {
        assert!(
            prompt.contains(said),
            "{said} missing from the watcher's output: {prompt}"
        );
    }
    let dir = rig.env.dir.path();
    assert!(!dir.join("data/planted").exists());
    assert!(!dir.join("workspaces").join(FRIEND.to_string()).join("planted").exists());
    assert_nothing_leaked(&rig);
}

//! `/network`'s buttons through the real binary: everyone sees the policy with its buttons, a
//! non-owner's press is refused with a toast and changes nothing, an owner's press sets the
//! chat's policy (kept in `<state_dir>/network/<chat key>`) and updates the message.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::memory_support::wait_toast;
use crate::sandbox_support::*;
use crate::support::{FRIEND, OWNER, eventually, press_as, wait_text};
use volcanic_testkit::bot_api::updates;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn owners_set_a_chats_network_policy_with_network_s_buttons_others_are_refused() {
    let rig = Rig::start("mode = \"required\"\nallow_hosts = [\"allowed.test\"]", &[]).await;
    let dir = rig.env.dir.path().join("data/network");
    let kept = |chat: i64| std::fs::read_to_string(dir.join(chat.to_string())).ok();
    // A non-owner sees the buttons; the press is refused and nothing is kept.
    rig.tg.push_update(updates::text_message(FRIEND, FRIEND, "/network"));
    wait_text(&rig.tg, FRIEND, "allow-list: allowed.test", &rig.bot).await;
    press_as(&rig.tg, FRIEND, FRIEND, "Off").await;
    wait_toast(
        &rig.tg,
        "Only an owner can change this chat's network policy.",
        &rig.bot,
    )
    .await;
    assert_eq!(kept(FRIEND), None, "a non-owner's press was kept");
    // The owner's presses: off, on, the bot's allow-list, the bot's default.
    rig.tg.push_update(updates::text_message(OWNER, OWNER, "/network"));
    wait_text(&rig.tg, OWNER, "the bot's default, [sandbox]", &rig.bot).await;
    press_as(&rig.tg, OWNER, OWNER, "Off").await;
    wait_toast(&rig.tg, "Changed, from the next command.", &rig.bot).await;
    eventually("off kept", &rig.bot, || {
        kept(OWNER).as_deref().is_some_and(|k| k.starts_with("off"))
    })
    .await;
    wait_text(&rig.tg, OWNER, "off: no network at all (this chat's own", &rig.bot).await;
    press_as(&rig.tg, OWNER, OWNER, "On").await;
    eventually("on kept", &rig.bot, || {
        kept(OWNER).as_deref().is_some_and(|k| k.starts_with("on"))
    })
    .await;
    press_as(&rig.tg, OWNER, OWNER, "Allow-list (bot's hosts)").await;
    eventually("the bot's allow-list kept", &rig.bot, || {
        kept(OWNER)
            .as_deref()
            .is_some_and(|k| k.starts_with("allow") && k.contains("allowed.test"))
    })
    .await;
    // The policy applies from the next command: the allow-list's proxy variables are set.
    let out = rig
        .run(&[shell("env_under_allow_list", "echo proxy=$HTTPS_PROXY")], 1)
        .await;
    assert!(out[0].contains("proxy=http://127.0.0.1:3128"), "{}", out[0]);
    press_as(&rig.tg, OWNER, OWNER, "Bot default").await;
    eventually("back to the default", &rig.bot, || kept(OWNER).is_none()).await;
    rig.assert_no_secret_anywhere();
}

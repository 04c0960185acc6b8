//! The host's gate through a recording chat port: the cap stops requests and tells the person
//! and the owners (once), an owner's top-up lets the next one through, 80 % is told once.

use super::gate::Sender;
use super::*;
use crate::config::allowance::AllowanceConfig;
use crate::features::port::{CallerGrant, Delivered, LinePrompt, OwnSession, PortError, UrlButton};
use std::sync::Mutex;
use volcanic_abstractions::messages::{Cost, Usage};
use volcanic_abstractions::spend::{SpendPurpose, SpendRequest};
use volcanic_core::agent::AgentSession;

/// Keeps every offer (`to`, text, button data) and notice.
#[derive(Debug, Default)]
struct Port {
    offers: Mutex<Vec<(i64, String, Vec<String>)>>,
    notices: Mutex<Vec<(i64, String)>>,
}

#[async_trait]
impl ChatPort for Port {
    async fn send(&self, _: Target, _: &str, _: &[UrlButton]) -> Result<(), PortError> {
        Ok(())
    }
    async fn offer(&self, to: Target, text: &str, rows: &[Vec<PressButton>]) -> Result<i64, PortError> {
        let data = rows.iter().flatten().map(|b| b.data.clone()).collect();
        let mut offers = self.offers.lock().unwrap_or_else(|e| e.into_inner());
        offers.push((to.chat_id, text.to_owned(), data));
        Ok(offers.len() as i64)
    }
    async fn edit(&self, _: Target, _: i64, _: &str, _: &[Vec<PressButton>]) -> Result<(), PortError> {
        Ok(())
    }
    async fn delete(&self, _: Target, _: i64) -> Result<(), PortError> {
        Ok(())
    }
    async fn notice(&self, to: Target, text: String) -> Result<(), PortError> {
        self.notices
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push((to.chat_id, text));
        Ok(())
    }
    async fn deliver(&self, _: LinePrompt) -> Result<Delivered, PortError> {
        Err(PortError::ShuttingDown)
    }
    async fn own_session(&self, _: OwnSession) -> anyhow::Result<AgentSession> {
        anyhow::bail!("no sessions here")
    }
}

const OWNER: i64 = 1;
const CHAT: i64 = -100;

struct Setup {
    feature: Allowances,
    port: Arc<Port>,
    _dir: tempfile::TempDir,
}

fn setup(defaults: AllowanceConfig) -> anyhow::Result<Setup> {
    let dir = tempfile::tempdir()?;
    let port = Arc::new(Port::default());
    let feature = Allowances {
        shared: Arc::new(Shared {
            store: SpendStore::open(&dir.path().join("spend"))?,
            limits: Limits::load(defaults, dir.path())?,
            callers: [("ops".to_owned(), MicroUsd::from_usd(0.1))].into(),
            owners: vec![OWNER],
            port: Some(port.clone()),
            runs: std::sync::Mutex::default(),
        }),
    };
    Ok(Setup {
        feature,
        port,
        _dir: dir,
    })
}

fn gate(s: &Setup, sender: Option<i64>) -> Arc<dyn SpendGate> {
    gate_for(s, sender, None)
}

/// A caller's session acts for no chat here.
fn gate_for(s: &Setup, sender: Option<i64>, caller: Option<&CallerGrant>) -> Arc<dyn SpendGate> {
    gate_in(s, sender, caller, caller.is_none())
}

/// The gate of a session of `caller` (none: the chat's own), in the chat `CHAT` when `in_chat`.
fn gate_in(s: &Setup, sender: Option<i64>, caller: Option<&CallerGrant>, in_chat: bool) -> Arc<dyn SpendGate> {
    let ws = std::path::PathBuf::from("/nonexistent");
    let place = SessionPlace {
        chat: in_chat.then_some(Target {
            chat_id: CHAT,
            thread: None,
        }),
        time_zone: chrono_tz::Europe::Berlin,
        workspace: &ws,
        caller,
    };
    let sender: Sender = Arc::new(move || sender);
    s.feature
        .spend_gate(&place, sender)
        .unwrap_or_else(|| panic!("the feature gives a gate"))
}

fn request(n: u32, usd: f64) -> SpendRequest {
    SpendRequest {
        id: format!("s:{n}"),
        purpose: SpendPurpose::Turn,
        model: "faux/m1".into(),
        input_tokens: 100,
        max_output_tokens: 100,
        estimate_usd: usd,
    }
}

fn usage(usd: f64) -> Usage {
    Usage {
        cost: Cost {
            total: usd,
            ..Default::default()
        },
        ..Default::default()
    }
}

/// Spends `usd` through `g`, then asks for a cent more: the refusal's sentence ("" if admitted).
async fn spend_then_ask(g: &dyn SpendGate, usd: f64) -> anyhow::Result<String> {
    g.admit(&request(0, usd)).await.map_err(|e| anyhow::anyhow!("{e}"))?;
    g.settle("s:0", &usage(usd)).await;
    Ok(g.admit(&request(1, 0.01))
        .await
        .err()
        .map(|e| e.message)
        .unwrap_or_default())
}

fn chat_cap(usd: f64) -> AllowanceConfig {
    AllowanceConfig {
        chat_daily: Some(MicroUsd::from_usd(usd)),
        ..Default::default()
    }
}

#[tokio::test]
async fn the_daily_cap_stops_requests_and_tells_the_person_and_the_owners_once() -> anyhow::Result<()> {
    let s = setup(chat_cap(1.0))?;
    let g = gate(&s, Some(7));
    let mut made = 0;
    for n in 0..6 {
        match g.admit(&request(n, 0.3)).await {
            Ok(()) => {
                made += 1;
                g.settle(&format!("s:{n}"), &usage(0.3)).await;
            }
            Err(refused) => {
                assert!(
                    refused
                        .message
                        .starts_with("This chat's daily allowance of $1.00 is reached"),
                    "{refused}"
                );
                assert!(refused.message.contains("(Europe/Berlin)"), "{refused}");
            }
        }
    }
    assert_eq!(made, 3);
    let offers = s.port.offers.lock().unwrap_or_else(|e| e.into_inner()).clone();
    assert_eq!(offers.len(), 1, "the owners are told once per window: {offers:?}");
    let (to, text, data) = &offers[0];
    assert_eq!(*to, OWNER);
    assert!(
        text.starts_with("Chat g100 reached its daily allowance of $1.00"),
        "{text}"
    );
    assert_eq!(data.len(), 3, "+$1, +$5, no limit: {data:?}");
    Ok(())
}

#[tokio::test]
async fn an_owners_top_up_lets_the_next_request_through_and_others_cannot_press() -> anyhow::Result<()> {
    let s = setup(chat_cap(0.5))?;
    let g = gate(&s, None);
    g.admit(&request(0, 0.5)).await.map_err(|e| anyhow::anyhow!("{e}"))?;
    g.settle("s:0", &usage(0.5)).await;
    assert!(g.admit(&request(1, 0.5)).await.is_err());
    let plus_one = {
        let offers = s.port.offers.lock().unwrap_or_else(|e| e.into_inner());
        offers[0].2[0].clone()
    };
    let data = plus_one.strip_prefix(PREFIX).unwrap_or_default().to_owned();
    let press = |from_id, owner| Press {
        target: Target {
            chat_id: OWNER,
            thread: None,
        },
        message_id: 1,
        from_id,
        owner,
        data: &data,
    };
    assert_eq!(
        s.feature.press(press(9, false)).await.as_deref(),
        Some(texts::OWNERS_ONLY)
    );
    assert!(
        g.admit(&request(2, 0.5)).await.is_err(),
        "a refused press changed nothing"
    );
    let toast = s.feature.press(press(OWNER, true)).await.unwrap_or_default();
    assert!(toast.starts_with("+$1 for chat:g100"), "{toast}");
    assert!(g.admit(&request(3, 0.5)).await.is_ok(), "the top-up lets it through");
    Ok(())
}

#[tokio::test]
async fn the_senders_own_cap_counts_across_chats() -> anyhow::Result<()> {
    let s = setup(AllowanceConfig {
        user_daily: Some(MicroUsd::from_usd(0.2)),
        ..Default::default()
    })?;
    let refused = spend_then_ask(&*gate(&s, Some(7)), 0.2).await?;
    assert!(
        refused.starts_with("Your daily allowance of $0.20 is reached"),
        "{refused}"
    );
    // A scheduled job answers no one: only the chat counts (no chat cap here).
    assert!(gate(&s, None).admit(&request(2, 0.01)).await.is_ok());
    Ok(())
}

#[tokio::test]
async fn the_chat_is_told_once_at_eighty_percent() -> anyhow::Result<()> {
    let s = setup(chat_cap(1.0))?;
    let g = gate(&s, None);
    for (n, usd) in [(0, 0.5), (1, 0.3), (2, 0.1)] {
        g.admit(&request(n, 0.0)).await.map_err(|e| anyhow::anyhow!("{e}"))?;
        g.settle(&format!("s:{n}"), &usage(usd)).await;
    }
    let notices = s.port.notices.lock().unwrap_or_else(|e| e.into_inner()).clone();
    assert_eq!(
        notices,
        vec![(
            CHAT,
            "This chat has used 80% of its daily allowance ($0.80 of $1.00).".to_owned()
        )]
    );
    Ok(())
}

#[test]
fn an_owner_changes_caps_and_others_only_see_them() -> anyhow::Result<()> {
    let s = setup(chat_cap(1.0))?;
    let zone = chrono_tz::UTC;
    let shown = s.feature.run(9, "g100", zone, "chat 5/day");
    assert!(shown.starts_with(texts::OWNERS_ONLY), "{shown}");
    assert!(shown.contains("This chat: daily $0.00 of $1.00"), "{shown}");
    let changed = s.feature.run(OWNER, "g100", zone, "chat 5/day");
    assert!(changed.contains("This chat: daily $0.00 of $5.00"), "{changed}");
    assert_eq!(s.feature.run(OWNER, "g100", zone, "chat five"), texts::USAGE);
    Ok(())
}

#[tokio::test]
async fn an_a2a_caller_has_its_own_daily_cap() -> anyhow::Result<()> {
    let s = setup(AllowanceConfig::default())?;
    let grant = CallerGrant {
        name: "ops".into(),
        bash: false,
    };
    let refused = spend_then_ask(&*gate_for(&s, None, Some(&grant)), 0.1).await?;
    assert!(
        refused.starts_with("This caller's daily allowance of $0.10 is reached"),
        "{refused}"
    );
    Ok(())
}

#[test]
fn callers_caps_come_from_their_section_and_a_bad_one_is_named() -> anyhow::Result<()> {
    let a2a: toml::Table = toml::from_str(
        "[server]\ncallers = [{ name = \"ops\", token_env = \"T\", daily_usd = 2 }, { name = \"x\", token_env = \"U\" }]",
    )?;
    assert_eq!(
        caller_caps(Some(&a2a))?,
        [("ops".to_owned(), MicroUsd(2_000_000))].into()
    );
    let bad: toml::Table = toml::from_str("[server]\ncallers = [{ name = \"ops\", daily_usd = -1 }]")?;
    let err = caller_caps(Some(&bad)).err().map(|e| e.to_string()).unwrap_or_default();
    assert!(err.contains("a2a.server.callers[0].daily_usd"), "{err}");
    Ok(())
}

#[tokio::test]
async fn a_chat_is_told_what_its_cap_refused_when_no_one_there_asked() -> anyhow::Result<()> {
    // The notices of a reached cap (the 80 % one aside).
    let notices = |s: &Setup| -> Vec<(i64, String)> {
        let all = s.port.notices.lock().unwrap_or_else(|e| e.into_inner()).clone();
        all.into_iter().filter(|(_, t)| t.contains("is reached")).collect()
    };
    // A scheduled job (no sender, the chat's own session): its jobs are skipped.
    let s = setup(chat_cap(0.1))?;
    spend_then_ask(&*gate(&s, None), 0.1).await?;
    let told = notices(&s);
    assert_eq!(told.len(), 1, "{told:?}");
    assert!(told[0].1.contains("its scheduled jobs are skipped"), "{told:?}");
    // An A2A caller acting for the chat: the chat hears which caller, not of scheduled jobs.
    let s = setup(chat_cap(0.1))?;
    let grant = CallerGrant {
        name: "carol".into(),
        bash: false,
    };
    let refused = spend_then_ask(&*gate_in(&s, None, Some(&grant), true), 0.1).await?;
    assert!(
        refused.starts_with("This chat's daily allowance of $0.10 is reached"),
        "{refused}"
    );
    let told = notices(&s);
    assert_eq!(told.len(), 1, "{told:?}");
    assert_eq!(told[0].0, CHAT);
    assert!(
        told[0]
            .1
            .starts_with("This chat's daily allowance of $0.10 is reached: the A2A caller `carol` acting for it")
            && !told[0].1.contains("scheduled jobs"),
        "{told:?}"
    );
    Ok(())
}

#[tokio::test]
async fn a_chat_is_told_which_run_its_cap_refused() -> anyhow::Result<()> {
    use super::runs::RunKind;
    let target = Target {
        chat_id: CHAT,
        thread: None,
    };
    for (kind, says) in [
        (RunKind::ScheduledJob, "its scheduled jobs are skipped"),
        (RunKind::Watcher, "a watcher's output was not given to the model"),
        (RunKind::Resumed, "the run a restart cut off was not continued"),
        (RunKind::Other, "a prompt no one here sent"),
    ] {
        let s = setup(chat_cap(0.1))?;
        let g = gate(&s, None);
        *s.feature
            .shared
            .run_cell(target)
            .lock()
            .unwrap_or_else(|e| e.into_inner()) = kind;
        spend_then_ask(&*g, 0.1).await?;
        let told: Vec<String> = s
            .port
            .notices
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .iter()
            .map(|(_, t)| t.clone())
            .filter(|t| t.contains("is reached"))
            .collect();
        assert_eq!(told.len(), 1, "{kind:?}: {told:?}");
        assert!(told[0].contains(says), "{kind:?}: {told:?}");
        if kind != RunKind::ScheduledJob {
            assert!(!told[0].contains("scheduled jobs"), "{kind:?}: {told:?}");
        }
    }
    Ok(())
}

//! The spend gate around each provider request: turns and compaction summaries are admitted
//! with their estimate and settled with what was reported; a refused turn is not made and the
//! run ends with `SessionError::Allowance`.

use crate::support::{Faux, FauxTurn, factory};
use std::sync::{Arc, Mutex};
use volcanic_abstractions::messages::Usage;
use volcanic_abstractions::spend::{SpendGate, SpendPurpose, SpendRefused, SpendRequest};
use volcanic_core::agent::{AgentSession, AgentSessionOptions, PromptInput, SessionError, SessionSelect};

/// Admits while the estimate fits what is left of `budget_usd`; records every call.
struct Budget {
    left: Mutex<f64>,
    admitted: Mutex<Vec<SpendRequest>>,
    settled: Mutex<Vec<(String, f64)>>,
}

#[async_trait::async_trait]
impl SpendGate for Budget {
    async fn admit(&self, request: &SpendRequest) -> Result<(), SpendRefused> {
        let mut left = self.left.lock().unwrap_or_else(|e| e.into_inner());
        if request.estimate_usd > *left {
            return Err(SpendRefused {
                message: "This chat's daily allowance of $0.01 is reached; it resets at midnight.".into(),
            });
        }
        *left -= request.estimate_usd;
        self.admitted
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(request.clone());
        Ok(())
    }
    async fn settle(&self, id: &str, usage: &Usage) {
        self.settled
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push((id.to_owned(), usage.cost.total));
    }
}

async fn session_with(
    budget_usd: f64,
    turns: Vec<FauxTurn>,
) -> (AgentSession, Arc<Faux>, Arc<Budget>, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("tempdir: {e}"));
    let ws = dir.path().join("ws");
    std::fs::create_dir_all(&ws).unwrap_or_else(|e| panic!("ws: {e}"));
    let faux = Faux::new(turns);
    let gate = Arc::new(Budget {
        left: Mutex::new(budget_usd),
        admitted: Mutex::default(),
        settled: Mutex::default(),
    });
    let session = factory(faux.clone(), Vec::new(), dir.path())
        .create(AgentSessionOptions {
            cwd: ws,
            session: SessionSelect::New,
            spend_gate: Some(gate.clone()),
            ..Default::default()
        })
        .await
        .unwrap_or_else(|e| panic!("session: {e}"));
    (session, faux, gate, dir)
}

#[tokio::test]
async fn a_turn_is_admitted_at_its_estimate_and_settled_at_its_reported_cost() {
    let (session, faux, gate, _dir) = session_with(1.0, vec![FauxTurn::text("hi")]).await;
    session
        .prompt(PromptInput::text("hello"))
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(faux.calls(), 1);
    let admitted = gate.admitted.lock().unwrap_or_else(|e| e.into_inner()).clone();
    assert_eq!(admitted.len(), 1);
    let a = &admitted[0];
    assert_eq!(a.purpose, SpendPurpose::Turn);
    assert_eq!(a.model, "faux/m1");
    assert_eq!(a.max_output_tokens, 4096, "the model's output limit");
    assert!(a.input_tokens > 0);
    // $1/M in, $2/M out.
    let want = (a.input_tokens as f64 + 4096.0 * 2.0) / 1e6;
    assert!((a.estimate_usd - want).abs() < 1e-12, "{} != {want}", a.estimate_usd);
    let settled = gate.settled.lock().unwrap_or_else(|e| e.into_inner()).clone();
    assert_eq!(settled.len(), 1);
    assert_eq!(settled[0].0, a.id, "settled under the id it was admitted with");
    // The faux reports `input` = context size and 10 output tokens, priced by the catalogue.
    assert!(settled[0].1 > 0.0 && settled[0].1 < a.estimate_usd, "{settled:?}");
}

#[tokio::test]
async fn a_refused_turn_is_not_made_and_the_run_ends_with_the_allowance_error() {
    let (session, faux, gate, _dir) = session_with(0.000_001, vec![FauxTurn::text("never")]).await;
    let err = session.prompt(PromptInput::text("hello")).await.err();
    match err {
        Some(SessionError::Allowance(r)) => assert!(r.message.contains("daily allowance"), "{r}"),
        other => panic!("expected the allowance error, got {other:?}"),
    }
    assert_eq!(faux.calls(), 0, "no request was made");
    assert!(gate.settled.lock().unwrap_or_else(|e| e.into_inner()).is_empty());
}

#[tokio::test]
async fn a_compaction_summary_passes_the_gate() {
    let (session, _faux, gate, _dir) = session_with(1.0, vec![FauxTurn::text("one"), FauxTurn::text("two")]).await;
    session
        .prompt(PromptInput::text("first"))
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    session
        .prompt(PromptInput::text("second"))
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    session.compact(None).await.unwrap_or_else(|e| panic!("{e}"));
    let purposes: Vec<SpendPurpose> = gate
        .admitted
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .iter()
        .map(|r| r.purpose)
        .collect();
    assert_eq!(
        purposes,
        vec![SpendPurpose::Turn, SpendPurpose::Turn, SpendPurpose::Compaction]
    );
    assert_eq!(gate.settled.lock().unwrap_or_else(|e| e.into_inner()).len(), 3);
}

//! Holding a call on the wire: a test arms a hold for the next call of a method whose
//! parameters match; that call then waits, not yet served (nothing applied, no answer), until
//! the test releases it, either served as usual or dropped: answered 500 and not applied, as
//! if the request had never reached Telegram. For crash tests: kill the bot while its message
//! is on its way (`sendMessage` received, not yet applied nor answered).

use std::sync::{Arc, Mutex, MutexGuard};

use serde_json::Value;
use tokio::sync::oneshot;
use tokio::time::Instant;

use super::params::Params;
use super::state::Shared;
use super::{ApiError, BotApiServer};

/// Chooses the calls a hold takes, from their parameters (as [`ApiCall::params`](super::ApiCall)).
type Matcher = Arc<dyn Fn(&Value) -> bool + Send + Sync>;

/// A call waiting on a hold.
#[derive(Debug, Clone, PartialEq)]
pub struct HeldCall {
    /// The method, lowercased.
    pub method: String,
    /// Its parameters, normalised as in [`ApiCall::params`](super::ApiCall::params).
    pub params: Value,
    /// When it arrived.
    pub at: Instant,
}

struct Waiting {
    call: HeldCall,
    /// `true`: serve it; `false`: drop it.
    release: oneshot::Sender<bool>,
}

#[derive(Default)]
struct HoldState {
    /// Armed holds: lowercased method and matcher; each takes one call.
    armed: Vec<(String, Matcher)>,
    waiting: Vec<Waiting>,
}

/// The holds of one server.
#[derive(Default)]
pub(crate) struct Holds {
    state: Mutex<HoldState>,
}

impl std::fmt::Debug for Holds {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let state = self.lock();
        f.debug_struct("Holds")
            .field("armed", &state.armed.len())
            .field("waiting", &state.waiting.len())
            .finish()
    }
}

impl Holds {
    fn lock(&self) -> MutexGuard<'_, HoldState> {
        self.state.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

/// Runs before a call is served: a call an armed hold takes waits here for its release.
/// `Err` (500, not applied) when the test drops it.
pub(crate) async fn pass(shared: &Shared, method: &str, params: &Params, arrived: Instant) -> Result<(), ApiError> {
    let gate = {
        let mut state = shared.holds.lock();
        if state.armed.is_empty() {
            return Ok(());
        }
        let value = params.to_value();
        let Some(index) = state
            .armed
            .iter()
            .position(|(armed, matches)| armed == method && matches(&value))
        else {
            return Ok(());
        };
        state.armed.remove(index);
        let (release, gate) = oneshot::channel();
        state.waiting.push(Waiting {
            call: HeldCall {
                method: method.to_owned(),
                params: value,
                at: arrived,
            },
            release,
        });
        gate
    };
    shared.notify();
    // A server dropped while holding serves the call.
    if gate.await.unwrap_or(true) {
        Ok(())
    } else {
        Err(ApiError::new(
            500,
            "Internal Server Error: volcanic-testkit dropped this held call (not applied)",
        ))
    }
}

impl BotApiServer {
    /// Holds the next call to `method` (any case) whose parameters `matches` (one call per
    /// hold; several holds may be armed). The held call waits, unserved, until
    /// [`release_held`](Self::release_held); [`held_calls`](Self::held_calls) lists it, and
    /// [`wait_for`](Self::wait_for) wakes when one starts waiting.
    pub fn hold_next(&self, method: &str, matches: impl Fn(&Value) -> bool + Send + Sync + 'static) {
        self.shared
            .holds
            .lock()
            .armed
            .push((method.to_ascii_lowercase(), Arc::new(matches)));
    }

    /// Removes the holds not yet used (calls already held keep waiting).
    pub fn disarm_holds(&self) {
        self.shared.holds.lock().armed.clear();
    }

    /// The calls waiting on a hold, in arrival order.
    pub fn held_calls(&self) -> Vec<HeldCall> {
        self.shared
            .holds
            .lock()
            .waiting
            .iter()
            .map(|waiting| waiting.call.clone())
            .collect()
    }

    /// Releases every held call: served as usual when `serve`, else dropped (answered 500
    /// `Internal Server Error`, nothing applied: the message is not stored). Returns how many.
    pub fn release_held(&self, serve: bool) -> usize {
        let waiting = std::mem::take(&mut self.shared.holds.lock().waiting);
        let n = waiting.len();
        for held in waiting {
            let _ = held.release.send(serve);
        }
        n
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use std::time::Duration;

    use pretty_assertions::assert_eq;
    use serde_json::json;

    use super::super::test_support::{call, server};

    #[tokio::test]
    async fn a_held_send_waits_and_is_applied_only_when_served() {
        let api = server().await;
        api.add_chat(42);
        api.hold_next("sendMessage", |params| {
            params["text"].as_str().is_some_and(|t| t.contains("hold me"))
        });
        // Another call passes the hold.
        let (status, _) = call(&api, "sendMessage", json!({"chat_id": 42, "text": "free"})).await;
        assert_eq!(status, 200);

        let dropped = tokio::spawn({
            let api = api.clone();
            async move { call(&api, "SendMessage", json!({"chat_id": 42, "text": "hold me 1"})).await }
        });
        api.wait_for(|s| s.held_calls().len() == 1, Duration::from_secs(5))
            .await
            .unwrap();
        assert_eq!(api.held_calls()[0].params["text"], "hold me 1");
        assert_eq!(api.messages(42).len(), 1, "a held message is not applied");
        assert_eq!(api.release_held(false), 1);
        let (status, body) = dropped.await.unwrap();
        assert_eq!(status, 500, "{body}");
        assert_eq!(api.messages(42).len(), 1, "a dropped message is never applied");

        // A hold takes one call; a new one, served, applies its call.
        api.hold_next("sendmessage", |_| true);
        let served = tokio::spawn({
            let api = api.clone();
            async move { call(&api, "sendMessage", json!({"chat_id": 42, "text": "hold me 2"})).await }
        });
        api.wait_for(|s| !s.held_calls().is_empty(), Duration::from_secs(5))
            .await
            .unwrap();
        assert_eq!(api.release_held(true), 1);
        assert_eq!(served.await.unwrap().0, 200);
        let texts: Vec<String> = api
            .messages(42)
            .into_iter()
            .map(|m| m.text.unwrap_or_default())
            .collect();
        assert_eq!(texts, ["free", "hold me 2"]);
        assert!(api.held_calls().is_empty());
    }
}

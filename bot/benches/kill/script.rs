//! What the users send and how the scripted model answers: each message carries a marker
//! (`M0057`); the model answers by its kind, read from the request alone (any number of chats
//! at once): a question gets `ANSWER M0057`; a command first gets a `bash` call that appends the
//! marker to the tool-run log and sleeps, then the answer; a reminder gets a `schedule` call for
//! a job a few seconds ahead whose prompt carries the job marker `J0057`, and that prompt, when
//! it fires, gets `ANSWER J0057`.

use std::collections::HashSet;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use serde_json::json;
use volcanic_testkit::model_server::{ModelServer, Transcript, Turn, WireApi};

/// What a message asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A plain question, answered with text.
    Ask,
    /// Makes the model call `bash`.
    Run,
    /// Makes the model schedule a job with the `schedule` tool.
    Plan,
}

/// One user message of the plan.
#[derive(Debug, Clone)]
pub struct Msg {
    pub n: usize,
    pub chat: i64,
    /// The user who sends it (the chat itself in a private chat, a member in a group).
    pub from: i64,
    pub kind: Kind,
    /// Sent to a chat right after a `Run` message there: queued behind that running run.
    pub follow_up: bool,
    /// Pause before sending it.
    pub gap: Duration,
}

impl Msg {
    pub fn text(&self) -> String {
        let m = marker(self.n);
        match self.kind {
            Kind::Ask => format!("question {m}: what do you make of it?"),
            Kind::Run => format!("please run the check for {m}"),
            Kind::Plan => format!("remind me in a few seconds about {m}"),
        }
    }
}

/// `M0057`: the marker of message 57 (upper case: job ids are `[a-z0-9]{6}` and never match).
pub fn marker(n: usize) -> String {
    format!("M{n:04}")
}

/// `J0057`: the marker of the job message 57 schedules.
pub fn job_marker(n: usize) -> String {
    format!("J{n:04}")
}

/// The markers in a text, in order: `(true, n)` for `M<n>`, `(false, n)` for `J<n>`.
pub fn markers_in(text: &str) -> Vec<(bool, usize)> {
    text.split(|c: char| !c.is_ascii_alphanumeric())
        .filter_map(|token| {
            let (message, digits) = match token.as_bytes().first() {
                Some(b'M') => (true, &token[1..]),
                Some(b'J') => (false, &token[1..]),
                _ => return None,
            };
            (digits.len() == 4 && digits.bytes().all(|b| b.is_ascii_digit()))
                .then(|| digits.parse().ok().map(|n| (message, n)))
                .flatten()
        })
        .collect()
}

/// The scripted model.
pub struct Script {
    pub kinds: Vec<Kind>,
    pub tool_log: PathBuf,
    /// How long each `bash` run sleeps after writing its marker.
    pub bash_sleep: Duration,
    /// How long each turn waits before its answer.
    pub delay: Duration,
    /// Gap between the answer's stream events (the text comes in pieces: drafts and previews
    /// show it growing, and a kill "during the stream" lands mid-draft).
    pub pace: Duration,
    /// Seconds ahead the jobs are scheduled (`in`).
    pub job_in_secs: u64,
    calls: AtomicUsize,
}

impl Script {
    pub fn new(
        kinds: Vec<Kind>,
        tool_log: PathBuf,
        bash_sleep: Duration,
        (delay, pace): (Duration, Duration),
        job_in_secs: u64,
    ) -> Script {
        Script {
            kinds,
            tool_log,
            bash_sleep,
            delay,
            pace,
            job_in_secs,
            calls: AtomicUsize::new(0),
        }
    }

    /// Answers every request of `model` from its content.
    pub fn install(self: &Arc<Self>, model: &ModelServer) {
        let script = Arc::clone(self);
        model.set_responder(move |api, body| Some(script.respond(api, body)));
    }

    fn respond(&self, api: WireApi, body: &serde_json::Value) -> Turn {
        let t = Transcript::of(api, body);
        // The markers this run answers, once each, in order.
        let mut seen = HashSet::new();
        let asked: Vec<(bool, usize)> = t
            .run_prompts()
            .iter()
            .flat_map(|p| markers_in(p))
            .filter(|m| seen.insert(*m))
            .collect();
        // Message markers whose tool this run already called: a `bash` command names its
        // message's marker, a job's text its job marker.
        let called: HashSet<usize> = t
            .run_calls()
            .iter()
            .flat_map(|c| markers_in(&c.arguments.to_string()))
            .map(|(_, n)| n)
            .collect();
        let mut turn = Turn::new();
        let mut calls = 0;
        for &(message, n) in &asked {
            if !message || called.contains(&n) {
                continue;
            }
            let id = format!("call_{}_{}", marker(n), self.calls.fetch_add(1, Ordering::Relaxed));
            match self.kinds.get(n) {
                Some(Kind::Run) => {
                    let command = format!(
                        "echo \"{m} $(date +%s%3N)\" >> '{log}'; sleep {secs}; echo ran {m}",
                        m = marker(n),
                        log = self.tool_log.display(),
                        secs = self.bash_sleep.as_secs_f64(),
                    );
                    turn = turn.tool_call(id, "bash", json!({ "command": command }));
                    calls += 1;
                }
                Some(Kind::Plan) => {
                    let text = format!("Scheduled check {}: answer naming this marker.", job_marker(n));
                    let args = json!({"action": "add", "in": format!("{}s", self.job_in_secs), "text": text});
                    turn = turn.tool_call(id, "schedule", args);
                    calls += 1;
                }
                Some(Kind::Ask) | None => {}
            }
        }
        if calls == 0 {
            let names: Vec<String> = asked
                .iter()
                .map(|&(message, n)| if message { marker(n) } else { job_marker(n) })
                .collect();
            let names = if names.is_empty() {
                "nothing".to_owned()
            } else {
                names.join(" ")
            };
            // Long enough to come in several pieces; the markers first, so a draft or preview
            // cut short by a kill already names them.
            turn = Turn::reply(format!(
                "ANSWER {names}. Written slowly, a few words at a time, as a model writes."
            ));
        }
        turn.delay(self.delay).pace(self.pace)
    }
}

//! The peer's task model and its JSON in both dialects: A2A 1.0 (`TASK_STATE_*`, `ROLE_*`,
//! parts `{text|raw|url|data}`, results wrapped as `{"task": …}`) and A2A 0.3 (`kind` tags,
//! lowercase states, bare results, `final` on status events). Written apart from the client on
//! purpose, from the specs, so that a test does not check the client against itself.

use base64::Engine;
use base64::engine::general_purpose::STANDARD as BASE64;
use serde_json::{Map, Value, json};

/// A wire dialect.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Wire {
    /// A2A 1.0.
    V1,
    /// A2A 0.3.
    V03,
}

/// A task's state.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PeerState {
    /// Accepted.
    Submitted,
    /// Running.
    Working,
    /// Waits for the user's answer.
    InputRequired,
    /// Done.
    Completed,
    /// Failed.
    Failed,
    /// Canceled.
    Canceled,
}

impl PeerState {
    /// Final: nothing changes it any more.
    pub fn is_final(self) -> bool {
        matches!(self, PeerState::Completed | PeerState::Failed | PeerState::Canceled)
    }

    fn name(self, wire: Wire) -> &'static str {
        match (self, wire) {
            (PeerState::Submitted, Wire::V1) => "TASK_STATE_SUBMITTED",
            (PeerState::Working, Wire::V1) => "TASK_STATE_WORKING",
            (PeerState::InputRequired, Wire::V1) => "TASK_STATE_INPUT_REQUIRED",
            (PeerState::Completed, Wire::V1) => "TASK_STATE_COMPLETED",
            (PeerState::Failed, Wire::V1) => "TASK_STATE_FAILED",
            (PeerState::Canceled, Wire::V1) => "TASK_STATE_CANCELED",
            (PeerState::Submitted, Wire::V03) => "submitted",
            (PeerState::Working, Wire::V03) => "working",
            (PeerState::InputRequired, Wire::V03) => "input-required",
            (PeerState::Completed, Wire::V03) => "completed",
            (PeerState::Failed, Wire::V03) => "failed",
            (PeerState::Canceled, Wire::V03) => "canceled",
        }
    }
}

/// A message part.
#[derive(Debug, Clone, PartialEq)]
pub enum PeerPart {
    /// Text.
    Text(String),
    /// File bytes with a name.
    File(String, Vec<u8>),
    /// Structured data.
    Data(Value),
}

impl PeerPart {
    fn json(&self, wire: Wire) -> Value {
        match (self, wire) {
            (PeerPart::Text(t), Wire::V1) => json!({"text": t}),
            (PeerPart::Text(t), Wire::V03) => json!({"kind": "text", "text": t}),
            (PeerPart::File(n, b), Wire::V1) => {
                json!({"raw": BASE64.encode(b), "filename": n, "mediaType": "text/plain"})
            }
            (PeerPart::File(n, b), Wire::V03) => {
                json!({"kind": "file", "file": {"bytes": BASE64.encode(b), "name": n, "mimeType": "text/plain"}})
            }
            (PeerPart::Data(d), Wire::V1) => json!({"data": d}),
            (PeerPart::Data(d), Wire::V03) => json!({"kind": "data", "data": d}),
        }
    }

    /// Reads a part of either dialect; `None` when it has neither shape.
    pub fn parse(v: &Value, wire: Wire) -> Option<PeerPart> {
        match wire {
            Wire::V1 => {
                if let Some(t) = v.get("text").and_then(Value::as_str) {
                    Some(PeerPart::Text(t.into()))
                } else if let Some(r) = v.get("raw").and_then(Value::as_str) {
                    let name = v.get("filename").and_then(Value::as_str).unwrap_or("file");
                    Some(PeerPart::File(name.into(), BASE64.decode(r).ok()?))
                } else {
                    v.get("data").map(|d| PeerPart::Data(d.clone()))
                }
            }
            Wire::V03 => match v.get("kind").and_then(Value::as_str)? {
                "text" => Some(PeerPart::Text(v.get("text")?.as_str()?.into())),
                "file" => {
                    let f = v.get("file")?;
                    let name = f.get("name").and_then(Value::as_str).unwrap_or("file");
                    Some(PeerPart::File(
                        name.into(),
                        BASE64.decode(f.get("bytes")?.as_str()?).ok()?,
                    ))
                }
                "data" => Some(PeerPart::Data(v.get("data")?.clone())),
                _ => None,
            },
        }
    }
}

/// A message of the task's history.
#[derive(Debug, Clone, PartialEq)]
pub struct PeerMessage {
    /// `true`: from the agent.
    pub agent: bool,
    /// Its parts.
    pub parts: Vec<PeerPart>,
}

/// A task of the peer.
#[derive(Debug, Clone)]
pub struct PeerTask {
    /// Its id.
    pub id: String,
    /// Its conversation.
    pub context_id: String,
    /// Its state.
    pub state: PeerState,
    /// The status message (a question, a failure), if any.
    pub status_text: Option<String>,
    /// Every message, oldest first.
    pub history: Vec<PeerMessage>,
    /// Artifacts: name and parts.
    pub artifacts: Vec<(String, Vec<PeerPart>)>,
}

fn message_json(m: &PeerMessage, task: &PeerTask, n: usize, wire: Wire) -> Value {
    let parts: Vec<Value> = m.parts.iter().map(|p| p.json(wire)).collect();
    let role = match (m.agent, wire) {
        (true, Wire::V1) => "ROLE_AGENT",
        (false, Wire::V1) => "ROLE_USER",
        (true, Wire::V03) => "agent",
        (false, Wire::V03) => "user",
    };
    let mut v = json!({"messageId": format!("{}-m{n}", task.id), "role": role, "parts": parts,
        "taskId": task.id, "contextId": task.context_id});
    if wire == Wire::V03 {
        v["kind"] = json!("message");
    }
    v
}

impl PeerTask {
    /// Its status object.
    pub fn status_json(&self, wire: Wire) -> Value {
        let mut s = json!({"state": self.state.name(wire), "timestamp": "2026-12-01T00:00:00Z"});
        if let Some(t) = &self.status_text {
            let m = PeerMessage {
                agent: true,
                parts: vec![PeerPart::Text(t.clone())],
            };
            s["message"] = message_json(&m, self, 999, wire);
        }
        s
    }

    fn artifact_json(&self, i: usize, wire: Wire) -> Value {
        let (name, parts) = &self.artifacts[i];
        json!({"artifactId": format!("{}-a{i}", self.id), "name": name,
            "parts": parts.iter().map(|p| p.json(wire)).collect::<Vec<_>>()})
    }

    /// The task object with the last `history` messages.
    pub fn json(&self, wire: Wire, history: usize) -> Value {
        let skip = self.history.len().saturating_sub(history);
        let mut v = json!({
            "id": self.id, "contextId": self.context_id, "status": self.status_json(wire),
            "history": self.history.iter().enumerate().skip(skip)
                .map(|(n, m)| message_json(m, self, n, wire)).collect::<Vec<_>>(),
        });
        if !self.artifacts.is_empty() {
            v["artifacts"] = (0..self.artifacts.len()).map(|i| self.artifact_json(i, wire)).collect();
        }
        if wire == Wire::V03 {
            v["kind"] = json!("task");
        }
        v
    }

    /// A send's result: `{"task": …}` (1.0) or the bare task (0.3).
    pub fn result(&self, wire: Wire) -> Value {
        match wire {
            Wire::V1 => json!({"task": self.json(wire, 10)}),
            Wire::V03 => self.json(wire, 10),
        }
    }

    /// A stream event carrying the whole task.
    pub fn task_event(&self, wire: Wire) -> Value {
        self.result(wire)
    }

    /// A status-update event (`final` in 0.3 when the state is final or input-required).
    pub fn status_event(&self, wire: Wire) -> Value {
        let mut e = Map::new();
        e.insert("taskId".into(), json!(self.id));
        e.insert("contextId".into(), json!(self.context_id));
        e.insert("status".into(), self.status_json(wire));
        match wire {
            Wire::V1 => json!({"statusUpdate": Value::Object(e)}),
            Wire::V03 => {
                e.insert("kind".into(), json!("status-update"));
                let last = self.state.is_final() || self.state == PeerState::InputRequired;
                e.insert("final".into(), json!(last));
                Value::Object(e)
            }
        }
    }

    /// An artifact-update event for artifact `i`.
    pub fn artifact_event(&self, i: usize, wire: Wire) -> Value {
        let mut e = json!({"taskId": self.id, "contextId": self.context_id,
            "artifact": self.artifact_json(i, wire), "lastChunk": true});
        match wire {
            Wire::V1 => json!({"artifactUpdate": e}),
            Wire::V03 => {
                e["kind"] = json!("artifact-update");
                e
            }
        }
    }
}

/// A direct message answer (no task): `{"message": …}` (1.0) or the bare message (0.3).
pub fn direct_message(text: &str, context_id: &str, wire: Wire) -> Value {
    let m = match wire {
        Wire::V1 => json!({"messageId": "direct-1", "role": "ROLE_AGENT", "contextId": context_id,
            "parts": [{"text": text}]}),
        Wire::V03 => json!({"kind": "message", "messageId": "direct-1", "role": "agent",
            "contextId": context_id, "parts": [{"kind": "text", "text": text}]}),
    };
    match wire {
        Wire::V1 => json!({"message": m}),
        Wire::V03 => m,
    }
}

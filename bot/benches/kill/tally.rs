//! Counting what the chats saw, what ran, and what is left on disk, and printing it as a table.
//!
//! Every count is per message marker (`M0057`) or job marker (`J0057`), from the messages the
//! chats show at the end ([`shown`]: each by the `sendMessage` or `editMessageText` answered
//! `ok` that last set its text; an answer is a message starting `ANSWER`; a notice is a message
//! with a `retry:<update_id>` button), the tool-run log and the jobs files. A group's preview
//! still carrying its Stop button at the end is stale.
//! A pressed Retry starts a new "segment" of its message: one answer and one tool run are
//! allowed per segment.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use volcanic_testkit::bot_api::{ApiCall, BotApiServer};

use crate::drive::{KillAt, Records, Run, retry_data, tool_runs};
use crate::judge::{Ms, Seen, judge};
use crate::script::{Kind, markers_in};

/// A job found in a workspace's `jobs.json`.
#[derive(Debug, Clone)]
pub struct JobSeen {
    pub id: String,
    /// The message whose reminder it is (its prompt names `J<n>`).
    pub n: Option<usize>,
    pub created_ms: Ms,
    pub enabled: bool,
    pub next_run_ms: Option<Ms>,
    /// It has a run record.
    pub ran: bool,
}

/// The callback data of a preview's Stop button starts so (`live::preview::STOP_PREFIX`).
const STOP_PREFIX: &str = "live-stop:";

/// Whether a keyboard (`reply_markup`) carries a preview's Stop button.
pub fn has_stop_button(markup: &serde_json::Value) -> bool {
    markup["inline_keyboard"]
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|row| row.as_array().into_iter().flatten())
        .any(|b| b["callback_data"].as_str().is_some_and(|d| d.starts_with(STOP_PREFIX)))
}

/// The bot's messages as the chats show them at the end, in time order: for each message the
/// `ok` call that last set its text (`sendMessage`, or `editMessageText`: a group's preview
/// edited into the answer); deleted messages left out.
pub fn shown(tg: &BotApiServer) -> Vec<ApiCall> {
    let key = |c: &ApiCall, id: Option<&serde_json::Value>| Some((c.chat_id()?, id?.as_i64()?));
    let deleted: std::collections::HashSet<(i64, i64)> = tg
        .calls("deleteMessage")
        .iter()
        .filter(|c| c.is_ok())
        .filter_map(|c| key(c, c.param("message_id")))
        .collect();
    let mut last: HashMap<(i64, i64), ApiCall> = HashMap::new();
    let sends = tg.calls("sendMessage").into_iter().filter(ApiCall::is_ok);
    let edits = tg.calls("editMessageText").into_iter().filter(ApiCall::is_ok);
    for call in sends.chain(edits) {
        let id = match call.method.as_str() {
            "sendmessage" => call.result().and_then(|r| r.get("message_id")).cloned(),
            _ => call.param("message_id").cloned(),
        };
        let Some(k) = key(&call, id.as_ref()) else { continue };
        if !deleted.contains(&k) && last.get(&k).is_none_or(|c| c.at <= call.at) {
            last.insert(k, call);
        }
    }
    let mut out: Vec<ApiCall> = last.into_values().collect();
    out.sort_by_key(|c| c.at);
    out
}

/// Every `bash` or `schedule` tool call persisted in a session file under `state` (the bot's
/// transcripts), as (message n, unix ms of the assistant message): the model asked for the
/// message's tool and the bot kept the request, so a kill may have fallen between its durable
/// `tool` mark and the tool's effect (a `bash` command's marker names the message, `M<n>`; a
/// `schedule` call's text its job, `J<n>`).
pub fn tool_calls(state: &Path) -> Vec<(usize, Ms)> {
    let mut out = Vec::new();
    let mut dirs = vec![state.to_path_buf()];
    while let Some(dir) = dirs.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            if path.is_dir() {
                dirs.push(path);
                continue;
            }
            if path.extension().is_none_or(|e| e != "jsonl") {
                continue;
            }
            let text = String::from_utf8_lossy(&std::fs::read(&path).unwrap_or_default()).into_owned();
            for line in text.lines() {
                let Ok(v) = serde_json::from_str::<serde_json::Value>(line) else {
                    continue;
                };
                let message = &v["message"];
                if v["type"] != "message" || message["role"] != "assistant" {
                    continue;
                }
                let Some(at) = message["timestamp"].as_i64() else {
                    continue;
                };
                for block in message["content"].as_array().map(Vec::as_slice).unwrap_or_default() {
                    if block["type"] != "toolCall" {
                        continue;
                    }
                    for (_, n) in markers_in(&block["arguments"].to_string()) {
                        out.push((n, at));
                    }
                }
            }
        }
    }
    out
}

/// Whether the bot's log says that a chunk of update `id`'s answer was on its way to Telegram
/// when the bot stopped (`recovery`: "counted as shown … ids=[…]").
fn counted_as_shown(log: &str, id: i64) -> bool {
    log.lines().filter(|l| l.contains("counted as shown")).any(|l| {
        l.split("ids=[")
            .nth(1)
            .and_then(|rest| rest.split(']').next())
            .is_some_and(|ids| ids.split(',').any(|x| x.trim().parse() == Ok(id)))
    })
}

/// Every job of every workspace (`<ws>/<chat>/.volcanic/scheduler/jobs.json`).
pub fn read_jobs(workspaces: &Path) -> Vec<JobSeen> {
    let mut out = Vec::new();
    let Ok(dirs) = std::fs::read_dir(workspaces) else {
        return out;
    };
    for dir in dirs.flatten() {
        let path = dir.path().join(".volcanic").join("scheduler").join("jobs.json");
        let Ok(text) = std::fs::read_to_string(&path) else {
            continue;
        };
        let Ok(file) = serde_json::from_str::<serde_json::Value>(&text) else {
            continue;
        };
        for job in file["jobs"].as_array().map(Vec::as_slice).unwrap_or_default() {
            let ms = |v: &serde_json::Value| {
                v.as_str()
                    .and_then(|t| chrono::DateTime::parse_from_rfc3339(t).ok())
                    .map(|t| t.timestamp_millis())
            };
            out.push(JobSeen {
                id: job["id"].as_str().unwrap_or_default().to_owned(),
                n: markers_in(&job["kind"].to_string())
                    .into_iter()
                    .find(|(message, _)| !message)
                    .map(|(_, n)| n),
                created_ms: ms(&job["created"]).unwrap_or(0),
                enabled: job["enabled"].as_bool().unwrap_or(false),
                next_run_ms: ms(&job["next_run"]),
                ran: !job["last_run"].is_null(),
            });
        }
    }
    out
}

/// The files a crash may have damaged: `*.corrupt-*` anywhere in the state and workspaces
/// dirs, `.jsonl` files under the state dir with a line that is not JSON; also `*.torn-*`
/// files (a torn last line set aside: expected after a kill, listed for information).
#[derive(Debug, Default)]
pub struct Files {
    pub corrupt: Vec<PathBuf>,
    pub bad_lines: Vec<(PathBuf, usize)>,
    pub torn: Vec<PathBuf>,
}

pub fn check_files(state: &Path, workspaces: &Path) -> Files {
    let mut files = Files::default();
    let mut all = Vec::new();
    walk(state, &mut all);
    let state_files = all.len();
    walk(workspaces, &mut all);
    for (i, path) in all.iter().enumerate() {
        let name = path.file_name().and_then(|n| n.to_str()).unwrap_or_default();
        if name.contains(".corrupt-") {
            files.corrupt.push(path.clone());
        }
        if name.contains(".torn-") {
            files.torn.push(path.clone());
        }
        if i < state_files && path.extension().is_some_and(|e| e == "jsonl") {
            let bytes = std::fs::read(path).unwrap_or_default();
            let text = String::from_utf8_lossy(&bytes);
            for (line_no, line) in text.lines().enumerate() {
                if serde_json::from_str::<serde_json::Value>(line).is_err() {
                    files.bad_lines.push((path.clone(), line_no + 1));
                }
            }
        }
    }
    files
}

fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    for e in entries.flatten() {
        let p = e.path();
        if p.is_dir() {
            walk(&p, out);
        } else {
            out.push(p);
        }
    }
}

/// The figures of a run.
#[derive(Debug, Default)]
pub struct Figures {
    pub messages: usize,
    pub chats: usize,
    pub by_kind: [usize; 3],
    pub groups: usize,
    pub follow_ups: usize,
    /// `sendMessageDraft` calls (private chats).
    pub drafts: usize,
    /// Previews sent (a group's `sendMessage` with a Stop button) and `editMessageText` calls.
    pub previews: usize,
    pub edits: usize,
    /// `setMessageReaction` calls.
    pub reactions: usize,
    pub kills: Vec<(KillAt, usize)>,
    pub missed_points: usize,
    pub starts: usize,
    pub died: usize,
    pub answers: usize,
    /// Markers named in answers (an answer to follow-ups queued together names each).
    pub answered: usize,
    pub notices: usize,
    pub presses: usize,
    pub retries_answered: usize,
    /// Messages told they were interrupted after they were answered (information).
    pub notices_after_answer: usize,
    pub tool_runs: usize,
    pub jobs: usize,
    pub jobs_fired: usize,
    pub model_requests: usize,
    pub model_rejected: usize,
    pub torn: usize,
    pub settle_secs: f64,
    pub settled: bool,
    pub exit: Option<i32>,
    // The bad counts.
    pub lost: Vec<String>,
    pub retries_lost: Vec<String>,
    pub twice: Vec<String>,
    pub reruns: Vec<String>,
    pub wrong_notices: Vec<String>,
    pub corrupt: Vec<String>,
    /// Previews still showing their Stop button at the end.
    pub stale: Vec<String>,
}

impl Figures {
    /// The sum of the bad counts.
    pub fn bad(&self) -> usize {
        self.lost.len()
            + self.retries_lost.len()
            + self.twice.len()
            + self.reruns.len()
            + self.wrong_notices.len()
            + self.corrupt.len()
            + self.stale.len()
    }
}

/// Unix ms of a tokio instant, by the run's anchor.
fn ms_of(rec: &Records, at: tokio::time::Instant) -> Ms {
    let (anchor_at, anchor_sys) = rec.anchor;
    let anchor_ms = anchor_sys
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as Ms)
        .unwrap_or(0);
    if at >= anchor_at {
        anchor_ms + at.duration_since(anchor_at).as_millis() as Ms
    } else {
        anchor_ms - anchor_at.duration_since(at).as_millis() as Ms
    }
}

/// Writes what the doubles recorded into `dir` (kept runs), one JSON object a line, times in
/// unix ms like `tool-runs.log`: `telegram-calls.jsonl` (every Bot API call but `getUpdates`
/// params), `model-requests.jsonl` (each request's run prompts and calls), `events.jsonl`
/// (messages sent with their update id, kills, presses).
pub fn dump(run: &Run, dir: &Path) -> std::io::Result<()> {
    use std::io::Write as _;
    let rec = &run.rec;
    let mut out = std::io::BufWriter::new(std::fs::File::create(dir.join("telegram-calls.jsonl"))?);
    for call in run.tg.sent() {
        let line = serde_json::json!({
            "ms": ms_of(rec, call.at),
            "method": call.method,
            "params": if call.method == "getupdates" { serde_json::Value::Null } else { call.params.clone() },
            "result": call.result().map(|r| r.get("message_id").cloned().unwrap_or_else(|| r.clone())),
            "error": call.error().map(ToString::to_string),
        });
        writeln!(out, "{line}")?;
    }
    let mut out = std::io::BufWriter::new(std::fs::File::create(dir.join("model-requests.jsonl"))?);
    for r in run.model.requests() {
        let t = r.transcript();
        let line = serde_json::json!({
            "ms": ms_of(rec, r.at),
            "prompts": t.run_prompts(),
            "calls": t.run_calls().iter().map(|c| c.arguments.clone()).collect::<Vec<_>>(),
            "ends_with_tool_result": t.ends_with_tool_result(),
            "rejected": r.rejection.as_ref().map(|x| x.message.clone()),
        });
        writeln!(out, "{line}")?;
    }
    let mut out = std::io::BufWriter::new(std::fs::File::create(dir.join("events.jsonl"))?);
    let update_of: HashMap<usize, i64> = rec.msg_of_update.iter().map(|(u, n)| (*n, *u)).collect();
    for m in &rec.sent {
        let line = serde_json::json!({"sent": crate::script::marker(m.n), "update_id": update_of.get(&m.n),
            "chat": m.chat, "kind": format!("{:?}", m.kind), "follow_up": m.follow_up});
        writeln!(out, "{line}")?;
    }
    for (at, when) in &rec.kill_log {
        writeln!(
            out,
            "{}",
            serde_json::json!({"kill": format!("{at:?}"), "ms": ms_of(rec, *when)})
        )?;
    }
    for p in &rec.presses {
        writeln!(
            out,
            "{}",
            serde_json::json!({"press": crate::script::marker(p.n), "ms": ms_of(rec, p.at)})
        )?;
    }
    out.flush()
}

pub fn tally(run: &Run) -> Figures {
    let rec: &Records = &run.rec;
    let ms_of = |at: tokio::time::Instant| ms_of(rec, at);
    let sends = shown(&run.tg);
    let jobs = read_jobs(&run.env.workspaces());
    let runs = tool_runs(&run.env.tool_log());
    let calls = tool_calls(&run.env.state());
    let bot_log = std::fs::read_to_string(run.env.bot_log()).unwrap_or_default();
    let mut seen: HashMap<usize, Seen> = rec.sent.iter().map(|m| (m.n, Seen::new(m.kind))).collect();
    let mut job_answers: HashMap<usize, usize> = HashMap::new();
    let mut job_notices: HashMap<usize, usize> = HashMap::new();
    let job_of_id: HashMap<&str, usize> = jobs.iter().filter_map(|j| j.n.map(|n| (j.id.as_str(), n))).collect();
    let mut f = Figures::default();
    for call in &sends {
        let text = call.text().unwrap_or_default();
        let at = ms_of(call.at);
        if text.starts_with("ANSWER") {
            f.answers += 1;
            for (message, n) in markers_in(text) {
                f.answered += 1;
                if message {
                    if let Some(s) = seen.get_mut(&n) {
                        s.answers.push(at);
                    }
                } else {
                    *job_answers.entry(n).or_default() += 1;
                }
            }
        } else if let Some(data) = retry_data(&call.params) {
            f.notices += 1;
            let n = data
                .strip_prefix("retry:")
                .and_then(|id| id.parse::<i64>().ok())
                .and_then(|id| rec.msg_of_update.get(&id));
            if let Some(s) = n.and_then(|n| seen.get_mut(n)) {
                s.notices.push(at);
            }
        } else {
            // Any other message naming a job (its marker or id) tells the chat about it.
            let tokens: Vec<&str> = text.split(|c: char| !c.is_ascii_alphanumeric()).collect();
            let mut named: Vec<usize> = markers_in(text)
                .into_iter()
                .filter(|(message, _)| !message)
                .map(|(_, n)| n)
                .collect();
            named.extend(tokens.iter().filter_map(|t| job_of_id.get(t).copied()));
            named.dedup();
            for n in named {
                *job_notices.entry(n).or_default() += 1;
            }
        }
    }
    for p in &rec.presses {
        if let Some(s) = seen.get_mut(&p.n) {
            s.presses.push(ms_of(p.at));
        }
    }
    for (n, at) in &runs {
        if let Some(s) = seen.get_mut(n).filter(|s| s.kind == Kind::Run) {
            s.tools.push(*at);
        }
    }
    for j in &jobs {
        if let Some(s) = j.n.and_then(|n| seen.get_mut(&n)).filter(|s| s.kind == Kind::Plan) {
            s.tools.push(j.created_ms);
        }
    }
    for (n, at) in &calls {
        if let Some(s) = seen.get_mut(n) {
            s.asked.push(*at);
        }
    }
    for m in &rec.sent {
        let s = &seen[&m.n];
        let v = judge(s);
        let name = crate::script::marker(m.n);
        let detail = || {
            format!(
                "{name} ({:?}: {} answers, {} notices, {} presses, {} tool runs)",
                s.kind,
                s.answers.len(),
                s.notices.len(),
                s.presses.len(),
                s.tools.len()
            )
        };
        if v.lost {
            // What the chat was told instead (an error notice is neither answer nor notice).
            let told: Vec<String> = sends
                .iter()
                .filter(|c| c.params["chat_id"].as_i64() == Some(m.chat))
                .filter_map(|c| c.text())
                .filter(|t| !t.starts_with("ANSWER") && !t.contains(&name))
                .map(|t| t.chars().take(80).collect())
                .collect();
            let last: Vec<&String> = told.iter().rev().take(3).collect();
            // The documented limit (docs/exactly-once.md): a chunk whose request was on its way
            // at a kill is counted as shown; lost only if the kill came before Telegram had it.
            let on_the_wire = rec
                .msg_of_update
                .iter()
                .filter(|(_, n)| **n == m.n)
                .any(|(id, _)| counted_as_shown(&bot_log, *id));
            let why = if on_the_wire {
                "; a chunk of its answer was on its way at a kill and counted as shown, but never reached the double"
            } else {
                ""
            };
            f.lost
                .push(format!("{} (the chat's last other texts: {last:?}){why}", detail()));
        }
        if v.retry_lost {
            f.retries_lost.push(detail());
        }
        if v.twice {
            f.twice.push(detail());
        }
        if v.rerun {
            f.reruns.push(detail());
        }
        for _ in 0..v.wrong_notices {
            f.wrong_notices.push(detail());
        }
        f.retries_answered += v.retries_answered;
        f.notices_after_answer += usize::from(v.notice_after_answer);
    }
    let mut jobs_per_marker: HashMap<usize, usize> = HashMap::new();
    for j in &jobs {
        if let Some(n) = j.n {
            *jobs_per_marker.entry(n).or_default() += 1;
        }
    }
    for (&n, &count) in &jobs_per_marker {
        let answers = job_answers.get(&n).copied().unwrap_or(0);
        let notices = job_notices.get(&n).copied().unwrap_or(0);
        let name = crate::script::job_marker(n);
        if answers == 0 && notices == 0 {
            f.lost.push(format!("{name} (job)"));
        }
        if answers > count {
            f.twice.push(format!("{name} (job, {answers} answers)"));
        }
    }
    let files = check_files(&run.env.state(), &run.env.workspaces());
    f.corrupt.extend(files.corrupt.iter().map(|p| p.display().to_string()));
    f.corrupt.extend(
        files
            .bad_lines
            .iter()
            .map(|(p, line)| format!("{} line {line}", p.display())),
    );
    f.torn = files.torn.len();
    for group in crate::drive::group_ids(run.sizes.groups) {
        for m in run.tg.messages(group) {
            if m.reply_markup.as_ref().is_some_and(has_stop_button) {
                f.stale
                    .push(format!("group {group} message {}: {:?}", m.message_id, m.visible_text));
            }
        }
    }
    let ok = |method: &str| run.tg.calls(method).iter().filter(|c| c.is_ok()).count();
    f.drafts = ok("sendMessageDraft");
    f.previews = run
        .tg
        .calls("sendMessage")
        .iter()
        .filter(|c| c.is_ok() && c.param("reply_markup").is_some_and(has_stop_button))
        .count();
    f.edits = ok("editMessageText");
    f.reactions = ok("setMessageReaction");

    f.messages = rec.sent.len();
    f.chats = run.sizes.chats;
    f.groups = run.sizes.groups;
    for m in &rec.sent {
        f.by_kind[m.kind as usize] += 1;
    }
    f.follow_ups = rec.sent.iter().filter(|m| m.follow_up).count();
    f.kills = KillAt::ALL
        .iter()
        .map(|k| (*k, rec.kills.get(k).copied().unwrap_or(0)))
        .collect();
    f.missed_points = rec.missed.values().sum();
    f.starts = rec.starts;
    f.died = rec.died;
    f.presses = rec.presses.len();
    f.tool_runs = runs.len();
    f.jobs = jobs.iter().filter(|j| j.n.is_some()).count();
    f.jobs_fired = jobs
        .iter()
        .filter(|j| j.ran || j.n.is_some_and(|n| job_answers.contains_key(&n)))
        .count();
    let requests = run.model.requests();
    f.model_requests = requests.len();
    f.model_rejected = requests.iter().filter(|r| r.is_rejected()).count();
    f.settle_secs = rec.settle.as_secs_f64();
    f.settled = rec.settled;
    f.exit = rec.exit;
    f
}

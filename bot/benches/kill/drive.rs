//! The run: users send their messages in batches; during each batch the bot is killed at a
//! point of one kind (chosen by the seeded RNG), then restarted; Retry buttons are pressed as
//! they appear; at the end the bot runs without kills until everything settles and is stopped
//! with SIGTERM.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use rand::rngs::StdRng;
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use serde_json::Value;
use tokio::time::Instant;
use volcanic_testkit::bot_api::{BotApiServer, updates};
use volcanic_testkit::model_server::ModelServer;

use crate::proc::{Bot, Env, TOKEN};
use crate::script::{Kind, Msg, Script};

/// The sizes and timings of a run.
#[derive(Debug, Clone)]
pub struct Sizes {
    pub messages: usize,
    /// Private chats (one user each).
    pub chats: usize,
    /// Group chats (every user a member; a message there mentions the bot).
    pub groups: usize,
    pub kills: usize,
    /// Each model turn waits this long before answering.
    pub delay: Duration,
    /// Then its events come this far apart.
    pub pace: Duration,
    pub bash_sleep: Duration,
    pub job_in_secs: u64,
    /// Chance that a Retry button is pressed.
    pub press: f64,
    /// Quiet time (no call, request or tool run) after which the end counts as settled.
    pub quiet: Duration,
    /// Longest wait for the end to settle.
    pub settle_max: Duration,
    /// Longest wait for one kill point.
    pub point_timeout: Duration,
}

/// Where a kill lands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum KillAt {
    /// A model request admitted, its answer not finished (mostly mid-draft: text shown).
    Stream,
    /// A `bash` run wrote its marker and sleeps.
    Tool,
    /// A `getUpdates` call just returned a non-empty batch.
    Updates,
    /// A `sendMessage` with an answer reached the double, held there unapplied.
    Send,
}

impl KillAt {
    pub const ALL: [KillAt; 4] = [KillAt::Stream, KillAt::Tool, KillAt::Updates, KillAt::Send];

    pub fn name(self) -> &'static str {
        match self {
            KillAt::Stream => "during the model's stream",
            KillAt::Tool => "during a bash tool",
            KillAt::Updates => "right after getUpdates returned updates",
            KillAt::Send => "during sending (answer held by the double)",
        }
    }
}

/// A pressed Retry button.
#[derive(Debug, Clone)]
pub struct Press {
    pub n: usize,
    pub at: Instant,
}

/// What the run did, for the tally.
pub struct Records {
    /// The messages sent, in order.
    pub sent: Vec<Msg>,
    /// Update id → message number.
    pub msg_of_update: HashMap<i64, usize>,
    pub presses: Vec<Press>,
    pub kills: BTreeMap<KillAt, usize>,
    /// Each kill, when.
    pub kill_log: Vec<(KillAt, Instant)>,
    /// Kill points waited for in vain (the kind is tried again in a later batch).
    pub missed: BTreeMap<KillAt, usize>,
    pub starts: usize,
    /// Times the bot was found dead without a kill (a panic, a fatal error).
    pub died: usize,
    /// A moment on both clocks, to compare the double's times with the tool log's.
    pub anchor: (Instant, SystemTime),
    pub settle: Duration,
    pub settled: bool,
    /// The exit code of the final SIGTERM (`None`: it did not exit in time).
    pub exit: Option<i32>,
}

/// Everything a run holds.
pub struct Run {
    pub sizes: Sizes,
    pub env: Env,
    pub tg: BotApiServer,
    pub model: ModelServer,
    pub rec: Records,
    rng: StdRng,
    bot: Option<Bot>,
    /// Notices already considered for a press: `(chat, message_id)`.
    notices_seen: HashSet<(i64, i64)>,
    /// The plan, with a reserve; `next` is the first not sent.
    plan: Vec<Msg>,
    next: usize,
    /// Model requests counted so far.
    model_seen: usize,
}

/// The users: one private chat each.
pub fn chat_ids(n: usize) -> Vec<i64> {
    (0..n as i64).map(|i| 700_001 + i).collect()
}

/// The groups.
pub fn group_ids(n: usize) -> Vec<i64> {
    (0..n as i64).map(|i| -100_700_001 - i).collect()
}

/// The messages, deterministic for a seed: random chats and kinds (45 % questions, 40 %
/// commands, 15 % reminders); after a question or a command, 40 % of the time one or two
/// follow-ups go to the same chat 50-250 ms later (queued behind that run: its model turn alone
/// takes 300 ms). A message to a group comes from a random user.
pub fn plan(rng: &mut StdRng, count: usize, users: &[i64], groups: &[i64]) -> Vec<Msg> {
    let chats: Vec<i64> = users.iter().chain(groups).copied().collect();
    let mut msgs: Vec<Msg> = Vec::with_capacity(count);
    let mut follow = 0;
    for n in 0..count {
        let kind = match rng.random_range(0..100) {
            0..45 => Kind::Ask,
            45..85 => Kind::Run,
            _ => Kind::Plan,
        };
        let prev = msgs.last();
        let follow_up = follow > 0 && prev.is_some();
        let (chat, from, gap) = match prev {
            Some(p) if follow_up => (p.chat, p.from, Duration::from_millis(rng.random_range(50..250))),
            _ => {
                let chat = chats[rng.random_range(0..chats.len())];
                let from = if chat < 0 {
                    users[rng.random_range(0..users.len())]
                } else {
                    chat
                };
                (chat, from, Duration::from_millis(rng.random_range(100..600)))
            }
        };
        follow = if follow_up {
            follow - 1
        } else if kind != Kind::Plan && rng.random_bool(0.4) {
            rng.random_range(1..=2)
        } else {
            0
        };
        msgs.push(Msg {
            n,
            chat,
            from,
            kind,
            follow_up,
            gap,
        });
    }
    msgs
}

impl Run {
    pub async fn start(sizes: Sizes, seed: u64) -> Run {
        let mut rng = StdRng::seed_from_u64(seed);
        let chats = chat_ids(sizes.chats);
        let groups = group_ids(sizes.groups);
        // A reserve beyond `messages` for the batches of kill points tried again.
        let msgs = plan(&mut rng, sizes.messages + 4 * sizes.kills, &chats, &groups);
        let model = ModelServer::start().await.unwrap();
        let tg = BotApiServer::start(TOKEN).await.unwrap();
        let env = Env::new(&model.url(), &tg.url(), &chats, &groups);
        let kinds = msgs.iter().map(|m| m.kind).collect();
        let script = Arc::new(Script::new(
            kinds,
            env.tool_log(),
            sizes.bash_sleep,
            (sizes.delay, sizes.pace),
            sizes.job_in_secs,
        ));
        script.install(&model);
        let rec = Records {
            sent: Vec::new(),
            msg_of_update: HashMap::new(),
            presses: Vec::new(),
            kills: BTreeMap::new(),
            kill_log: Vec::new(),
            missed: BTreeMap::new(),
            starts: 0,
            died: 0,
            anchor: (Instant::now(), SystemTime::now()),
            settle: Duration::ZERO,
            settled: false,
            exit: None,
        };
        let mut run = Run {
            sizes,
            env,
            tg,
            model,
            rec,
            rng,
            bot: None,
            notices_seen: HashSet::new(),
            plan: msgs,
            next: 0,
            model_seen: 0,
        };
        run.start_bot();
        run
    }

    fn start_bot(&mut self) {
        self.rec.starts += 1;
        self.bot = Some(Bot::start(&self.env, self.rec.starts));
    }

    /// The kill points, balanced over the kinds and shuffled; `kills / 4` batches each at least.
    fn kill_order(&mut self) -> Vec<KillAt> {
        let mut order: Vec<KillAt> = (0..self.sizes.kills).map(|i| KillAt::ALL[i % 4]).collect();
        order.shuffle(&mut self.rng);
        order
    }

    /// Sends the plan in batches, one kill point per batch; a point not reached is tried again
    /// in a later batch (after the plan's batches, in batches of 4 more messages, at most
    /// `kills` of them).
    pub async fn drive(&mut self) {
        let mut order: std::collections::VecDeque<KillAt> = self.kill_order().into();
        let batches = self.sizes.kills.max(1);
        let per = self.sizes.messages / batches;
        let longer = self.sizes.messages % batches;
        for i in 0.. {
            let size = if i < batches {
                per + usize::from(i < longer)
            } else if order.is_empty() || i >= batches + self.sizes.kills {
                break;
            } else {
                4
            };
            let end = (self.next + size).min(self.plan.len());
            let batch: Vec<Msg> = self.plan[self.next..end].to_vec();
            self.next = end;
            let point = order.pop_front();
            if let Some(missed) = self.batch(batch, point).await {
                *self.rec.missed.entry(missed).or_default() += 1;
                order.push_back(missed);
            }
        }
    }

    /// One batch: its messages are sent (in the background) while the run waits for the kill
    /// point, kills the bot there and restarts it. Returns the point if it was not reached.
    async fn batch(&mut self, batch: Vec<Msg>, point: Option<KillAt>) -> Option<KillAt> {
        if point == Some(KillAt::Send) {
            // An answer, not a group's preview (which the bot learns the id of from the reply only).
            self.tg.hold_next("sendMessage", |p| {
                p["text"].as_str().is_some_and(|t| t.contains("ANSWER"))
                    && !crate::tally::has_stop_button(&p["reply_markup"])
            });
        }
        let pusher = {
            let tg = self.tg.clone();
            tokio::spawn(async move {
                let mut pushed = Vec::new();
                let mention = format!("@{}", tg.bot_username());
                for m in batch {
                    tokio::time::sleep(m.gap).await;
                    let update = if m.chat < 0 {
                        let text = format!("{mention} {}", m.text());
                        tg.push_update(updates::group_message(m.chat, m.from, &text, None))
                    } else {
                        tg.push_update(updates::text_message(m.chat, m.from, &m.text()))
                    };
                    pushed.push((m, update["update_id"].as_i64().unwrap()));
                }
                pushed
            })
        };
        let missed = match point {
            Some(at) => {
                let reached = self.reach(at).await;
                if reached {
                    self.kill();
                    *self.rec.kills.entry(at).or_default() += 1;
                    self.rec.kill_log.push((at, Instant::now()));
                }
                if at == KillAt::Send {
                    self.tg.disarm_holds();
                    // Killed with the answer on the wire: Telegram had the whole request and
                    // applies it (a server does not undo a request whose client went away); the
                    // bot never read the reply. Not reached: nothing was held.
                    self.tg.release_held(true);
                }
                (!reached).then_some(at)
            }
            None => None,
        };
        for (m, update_id) in pusher.await.unwrap() {
            self.rec.msg_of_update.insert(update_id, m.n);
            self.rec.sent.push(m);
        }
        if self.bot.as_mut().is_some_and(|bot| !bot.alive()) {
            self.rec.died += 1;
            self.bot = None;
        }
        if self.bot.is_none() {
            tokio::time::sleep(Duration::from_millis(self.rng.random_range(0..400))).await;
            self.start_bot();
        }
        // The restart's notices come first; pressed then, most retried runs finish before the
        // next kill point, and those pressed at the end of the pause meet it.
        tokio::time::sleep(Duration::from_millis(self.rng.random_range(300..800))).await;
        self.press_notices();
        tokio::time::sleep(Duration::from_millis(self.rng.random_range(1000..3000))).await;
        self.press_notices();
        missed
    }

    /// The number of model requests so far (only the new ones are copied).
    fn model_count(&mut self) -> usize {
        self.model_seen += self.model.requests_since(self.model_seen).len();
        self.model_seen
    }

    fn kill(&mut self) {
        if let Some(mut bot) = self.bot.take() {
            bot.kill9();
        }
    }

    /// Waits for a kill point of this kind (up to `point_timeout`); `true` when the bot is
    /// there now.
    async fn reach(&mut self, at: KillAt) -> bool {
        let deadline = Instant::now() + self.sizes.point_timeout;
        match at {
            KillAt::Stream => self.reach_stream(deadline).await,
            KillAt::Tool => {
                let before = tool_runs(&self.env.tool_log()).len();
                while tool_runs(&self.env.tool_log()).len() <= before {
                    if Instant::now() >= deadline {
                        return false;
                    }
                    tokio::time::sleep(Duration::from_millis(10)).await;
                }
                // Somewhere in the first 60 % of the sleep that follows the marker.
                let into = self.sizes.bash_sleep.mul_f64(self.rng.random_range(0.0..0.6));
                tokio::time::sleep(into).await;
                true
            }
            KillAt::Updates => {
                let from = self.tg.get_updates_calls().len();
                let returned_updates = |tg: &BotApiServer| {
                    tg.get_updates_calls()
                        .get(from..)
                        .unwrap_or_default()
                        .iter()
                        .any(|c| matches!(&c.outcome, Some(Ok(ids)) if !ids.is_empty()))
                };
                let left = deadline.saturating_duration_since(Instant::now());
                self.tg.wait_for(returned_updates, left).await.is_ok()
            }
            KillAt::Send => {
                let left = deadline.saturating_duration_since(Instant::now());
                self.tg.wait_for(|tg| !tg.held_calls().is_empty(), left).await.is_ok()
            }
        }
    }

    /// A model request admitted after now, killed at a random moment from the second half of
    /// its delay to the middle of its paced stream, mostly after its first text (checked: a
    /// late wake-up waits for another request).
    async fn reach_stream(&mut self, deadline: Instant) -> bool {
        let mut from = self.model_count();
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() || self.model.wait_for_request_count(from + 1, left).await.is_err() {
                return false;
            }
            let new = self.model.requests_since(from);
            from += new.len();
            self.model_seen = from;
            let Some(admitted) = new.iter().find(|r| r.turn_index.is_some()) else {
                continue;
            };
            let start = admitted.at + self.sizes.delay.mul_f64(0.5);
            let window = self.sizes.delay.mul_f64(0.5) + self.sizes.pace * 4;
            tokio::time::sleep_until(start + window.mul_f64(self.rng.random_range(0.0..1.0))).await;
            if Instant::now() < start + window {
                return true;
            }
        }
    }

    /// Presses Retry on new notices, each with the chance `press`.
    fn press_notices(&mut self) {
        for call in self.tg.calls("sendMessage") {
            let Some(data) = retry_data(&call.params) else {
                continue;
            };
            let (Some(chat), Some(message_id)) = (call.chat_id(), call.result().and_then(|r| r["message_id"].as_i64()))
            else {
                continue;
            };
            if !self.notices_seen.insert((chat, message_id)) {
                continue;
            }
            let n = data
                .strip_prefix("retry:")
                .and_then(|id| id.parse::<i64>().ok())
                .and_then(|id| self.rec.msg_of_update.get(&id).copied());
            let Some(n) = n else { continue };
            if self.rng.random_bool(self.sizes.press) {
                // The asker presses (in a private chat, the chat itself).
                let from = self.rec.sent.iter().find(|m| m.n == n).map_or(chat, |m| m.from);
                let press = self
                    .tg
                    .push_update(updates::callback_query(from, message_id, chat, &data));
                // The press is an update of its own: a notice about its retried run names it.
                if let Some(id) = press["update_id"].as_i64() {
                    self.rec.msg_of_update.insert(id, n);
                }
                self.rec.presses.push(Press { n, at: Instant::now() });
            }
        }
    }

    /// Runs on without kills, pressing Retry as before, until no job is due and nothing has
    /// happened for `quiet` with every message answered or reported (or for three times
    /// `quiet` with some not: they are lost), at most `settle_max`; then stops the bot with
    /// SIGTERM.
    pub async fn finish(&mut self) {
        let started = Instant::now();
        let mut last = (usize::MAX, usize::MAX, usize::MAX);
        let mut quiet_since = Instant::now();
        loop {
            self.press_notices();
            tokio::time::sleep(Duration::from_millis(500)).await;
            let now = (
                self.tg.sent().len(),
                self.model_count(),
                tool_runs(&self.env.tool_log()).len(),
            );
            if now != last {
                last = now;
                quiet_since = Instant::now();
            }
            let jobs_due = crate::tally::read_jobs(&self.env.workspaces())
                .iter()
                .any(|j| j.enabled && j.next_run_ms.is_some());
            let quiet = quiet_since.elapsed();
            let enough = if self.all_told() {
                self.sizes.quiet
            } else {
                self.sizes.quiet * 3
            };
            if quiet >= enough && !jobs_due {
                self.rec.settled = true;
                break;
            }
            if started.elapsed() >= self.sizes.settle_max {
                break;
            }
        }
        self.rec.settle = started.elapsed();
        if let Some(bot) = self.bot.take() {
            self.rec.exit = bot.terminate(Duration::from_secs(30));
        }
    }

    /// Whether every message sent has an answer or a notice so far.
    fn all_told(&self) -> bool {
        let mut told = HashSet::new();
        for call in &crate::tally::shown(&self.tg) {
            let text = call.text().unwrap_or_default();
            if text.starts_with("ANSWER") {
                told.extend(crate::script::markers_in(text).into_iter().filter(|m| m.0).map(|m| m.1));
            } else if let Some(n) = retry_data(&call.params)
                .and_then(|d| d.strip_prefix("retry:").and_then(|id| id.parse::<i64>().ok()))
                .and_then(|id| self.rec.msg_of_update.get(&id))
            {
                told.insert(*n);
            }
        }
        self.rec.sent.iter().all(|m| told.contains(&m.n))
    }
}

/// The `retry:<update_id>` callback data of a message's inline keyboard, if any.
pub fn retry_data(params: &Value) -> Option<String> {
    params["reply_markup"]["inline_keyboard"]
        .as_array()?
        .iter()
        .flat_map(|row| row.as_array().map(Vec::as_slice).unwrap_or_default())
        .find_map(|b| b["callback_data"].as_str().filter(|d| d.starts_with("retry:")))
        .map(str::to_owned)
}

/// The tool-run log: `(message number, unix ms)` per run, in order.
pub fn tool_runs(path: &std::path::Path) -> Vec<(usize, i64)> {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    text.lines()
        .filter_map(|line| {
            let (marker, ms) = line.split_once(' ')?;
            let n = marker.strip_prefix('M')?.parse().ok()?;
            Some((n, ms.trim().parse().ok()?))
        })
        .collect()
}

//! [`SkillHookRunner`]: one per session; discovers the skills, runs their hooks in the background
//! and hands their outputs to the next run.

use super::exec::{HookReport, run_hook};
use super::protect::{ProtectedHit, ProtectedPaths};
use std::collections::{BTreeMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;
use tokio::sync::watch;
use tokio::task::AbortHandle;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;
use volcanic_abstractions::extensions::ExtensionContext;
use volcanic_abstractions::processes::SecretRedactor;
use volcanic_abstractions::skills::{SKILLS_DIR, Skill, SkillFiles, SkillHookKind};

/// How long past a hook's deadline a run still waits for its report (the hook is killed at the
/// deadline; this covers the kill and the last read), in milliseconds.
pub const REPORT_GRACE_MS: u64 = 250;

/// What a session's runner needs.
pub struct SkillHookConfig {
    /// The session's working directory (`VOLCANIC_WORKSPACE`; `protected-paths` are relative to it).
    pub workspace: PathBuf,
    /// Skills folders, the one that wins a name clash first (the workspace's `skills/`, then the
    /// Volcanic home's).
    pub skill_dirs: Vec<PathBuf>,
    /// Whether hooks run (`skill_hooks` in the config). Skills are listed and `protected-paths`
    /// guard either way.
    pub hooks_enabled: bool,
    /// Redacts hook output (the process policy's redactor).
    pub redactor: Arc<dyn SecretRedactor>,
}

impl SkillHookConfig {
    /// The usual folders: `<workspace>/skills`, then `<home>/skills` when there is a home.
    pub fn skill_dirs(workspace: &Path, home: Option<&Path>) -> Vec<PathBuf> {
        let mut dirs = vec![workspace.join(SKILLS_DIR)];
        dirs.extend(home.map(|h| h.join(SKILLS_DIR)));
        dirs
    }
}

/// Runs the hooks skills declare in `SKILL.md` for one session and guards their
/// `protected-paths` (spec: architecture.md, "Skill hooks").
///
/// - [`start_session_hooks`](Self::start_session_hooks) rediscovers the skills and starts every
///   `session-start` hook in the background, stopping those of an earlier start; their outputs
///   become [`session_context`](Self::session_context).
/// - [`start_turn_end_hooks`](Self::start_turn_end_hooks) starts the `turn-end` hooks after a
///   run; their outputs (and errors, timeouts) become [`take_turn_end_notice`](Self::take_turn_end_notice).
/// - [`wait`](Self::wait), at the top of a run, waits for running hooks, each until its deadline
///   (start + timeout) and [`REPORT_GRACE_MS`] at most.
///
/// Nothing here returns an error: a failing hook becomes text for the model and a log line.
pub struct SkillHookRunner {
    config: SkillHookConfig,
    shared: Arc<Mutex<Shared>>,
}

/// What the skill files looked like: each `SKILL.md` found with its modification time and size.
type Fingerprint = Vec<(PathBuf, Option<std::time::SystemTime>, u64)>;

#[derive(Default)]
struct Shared {
    skills: Arc<Vec<Skill>>,
    protected: Arc<ProtectedPaths>,
    /// The skill files [`skills`](Self::skills) was read from (`None`: read again next time).
    fingerprint: Option<Fingerprint>,
    /// Warnings already logged (each once per session).
    warned: HashSet<String>,
    /// Bumped by every start of the session-start hooks; older reports are dropped.
    generation: u64,
    /// Bumped when the session moves to another conversation (`/new`, a switch): turn-end
    /// reports of the earlier one are dropped.
    conversation: u64,
    session_start: Vec<RunningHook>,
    turn_end: Vec<RunningHook>,
    /// Session-start outputs by skill name.
    context: BTreeMap<String, String>,
    /// Turn-end outputs `(skill, text)` not yet handed to a run.
    notices: Vec<(String, String)>,
}

/// A running (or finished) hook.
struct RunningHook {
    deadline: Instant,
    done: watch::Receiver<bool>,
    task: AbortHandle,
}

impl Drop for SkillHookRunner {
    fn drop(&mut self) {
        // Session-start output is of no use without the session; turn-end hooks may be writing
        // files and run on to their deadline.
        for running in &self.lock().session_start {
            running.task.abort();
        }
    }
}

impl SkillHookRunner {
    /// A runner; nothing is discovered or started until the first call.
    pub fn new(config: SkillHookConfig) -> Self {
        SkillHookRunner {
            config,
            shared: Arc::default(),
        }
    }

    /// Whether hooks run.
    pub fn hooks_enabled(&self) -> bool {
        self.config.hooks_enabled
    }

    fn lock(&self) -> MutexGuard<'_, Shared> {
        self.shared.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Discovers the skills again (the runner keeps the result for hooks and the guard) and logs
    /// each problem once per session. Returns the skills, sorted by name. Called at the top of
    /// every run, so it is cheap when nothing changed: the folders are listed and each `SKILL.md`
    /// is looked at (modification time and size); the files are read and parsed again only when
    /// that changed (an edit keeping the size within one tick of the file system's clock, a few
    /// milliseconds, is missed until the next change).
    pub fn refresh(&self) -> Arc<Vec<Skill>> {
        let print = fingerprint(&self.config.skill_dirs);
        {
            let shared = self.lock();
            if print.is_some() && shared.fingerprint == print {
                return shared.skills.clone();
            }
        }
        let (skills, warnings) = SkillFiles::discover(&self.config.skill_dirs);
        let skills = Arc::new(skills);
        let protected = Arc::new(ProtectedPaths::new(&skills));
        let mut shared = self.lock();
        for w in warnings {
            let line = w.to_string();
            if shared.warned.insert(line) {
                tracing::warn!(file = %w.file.display(), skipped = w.skipped, "SKILL.md: {}", w.problem);
            }
        }
        shared.skills = skills.clone();
        shared.protected = protected;
        shared.fingerprint = print;
        skills
    }

    /// The skills found by the last [`refresh`](Self::refresh).
    pub fn skills(&self) -> Arc<Vec<Skill>> {
        self.lock().skills.clone()
    }

    /// Rediscovers the skills, stops the session-start hooks of an earlier start (killing their
    /// processes), forgets their outputs and starts every `session-start` hook in the background.
    /// `ctx` is the session's context (processes are prepared through it). Call at session
    /// creation, after `/new`, a switch, a resume and every compaction. With hooks off, only
    /// rediscovers.
    pub fn start_session_hooks(&self, ctx: Arc<dyn ExtensionContext>) {
        let skills = self.refresh();
        let mut shared = self.lock();
        shared.generation += 1;
        for running in shared.session_start.drain(..) {
            running.task.abort();
        }
        shared.context.clear();
        if !self.config.hooks_enabled {
            return;
        }
        let generation = shared.generation;
        drop(shared);
        self.spawn_all(&ctx, &skills, SkillHookKind::SessionStart, generation);
    }

    /// Starts every `turn-end` hook in the background (after `agent_end`; never awaited there).
    pub fn start_turn_end_hooks(&self, ctx: Arc<dyn ExtensionContext>) {
        if !self.config.hooks_enabled {
            return;
        }
        let (skills, conversation) = {
            let mut shared = self.lock();
            shared.turn_end.retain(|s| !*s.done.borrow());
            (shared.skills.clone(), shared.conversation)
        };
        self.spawn_all(&ctx, &skills, SkillHookKind::TurnEnd, conversation);
    }

    /// The session moved to another conversation (`/new`, a switch): turn-end notices of the
    /// earlier one, handed out or still running, never reach the new one.
    pub fn new_conversation(&self) {
        let mut shared = self.lock();
        shared.conversation += 1;
        shared.notices.clear();
    }

    /// Waits for running turn-end hooks, each until its deadline plus [`REPORT_GRACE_MS`] at
    /// most (before a session is disposed: they may be writing files).
    pub async fn wait_turn_end(&self) {
        let pending: Vec<(Instant, watch::Receiver<bool>)> = {
            let shared = self.lock();
            shared
                .turn_end
                .iter()
                .filter(|s| !*s.done.borrow())
                .map(|s| (s.deadline, s.done.clone()))
                .collect()
        };
        let grace = Duration::from_millis(REPORT_GRACE_MS);
        for (deadline, mut done) in pending {
            let _ = tokio::time::timeout_at(deadline + grace, done.wait_for(|d| *d)).await;
        }
    }

    /// `generation`: the session-start generation, or for turn-end hooks the conversation.
    fn spawn_all(&self, ctx: &Arc<dyn ExtensionContext>, skills: &[Skill], kind: SkillHookKind, generation: u64) {
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            tracing::warn!("skill hooks not started: no async runtime");
            return;
        };
        for skill in skills {
            let Some(hook) = skill.hooks.get(kind).cloned() else {
                continue;
            };
            let deadline = Instant::now() + hook.timeout;
            let (done_tx, done) = watch::channel(false);
            let (ctx, skill, redactor) = (ctx.clone(), skill.clone(), self.config.redactor.clone());
            let shared = Arc::downgrade(&self.shared);
            let task = runtime.spawn(async move {
                let report = run_hook(&ctx, &skill, kind, &hook, deadline, &*redactor).await;
                log_report(&skill.name, kind, &report);
                if let (Some(shared), Some(text)) = (shared.upgrade(), report.text(kind)) {
                    let mut shared = shared.lock().unwrap_or_else(|e| e.into_inner());
                    match kind {
                        SkillHookKind::SessionStart if shared.generation == generation => {
                            shared.context.insert(skill.name.clone(), text);
                        }
                        SkillHookKind::SessionStart => {}
                        SkillHookKind::TurnEnd if shared.conversation == generation => {
                            shared.notices.push((skill.name.clone(), text));
                        }
                        SkillHookKind::TurnEnd => {}
                    }
                }
                done_tx.send_replace(true);
            });
            let running = RunningHook {
                deadline,
                done,
                task: task.abort_handle(),
            };
            let mut shared = self.lock();
            match kind {
                SkillHookKind::SessionStart if shared.generation != generation => running.task.abort(),
                SkillHookKind::SessionStart => shared.session_start.push(running),
                SkillHookKind::TurnEnd => shared.turn_end.push(running),
            }
        }
    }

    /// Waits for the running session-start hooks and the previous run's turn-end hooks, each
    /// until its deadline plus [`REPORT_GRACE_MS`] at most; returns early when `cancel` fires.
    pub async fn wait(&self, cancel: &CancellationToken) {
        let pending: Vec<(Instant, watch::Receiver<bool>)> = {
            let shared = self.lock();
            shared
                .session_start
                .iter()
                .chain(shared.turn_end.iter())
                .filter(|s| !*s.done.borrow())
                .map(|s| (s.deadline, s.done.clone()))
                .collect()
        };
        let grace = Duration::from_millis(REPORT_GRACE_MS);
        for (deadline, mut done) in pending {
            tokio::select! {
                // An `Err` (the task was aborted) counts as done.
                _ = tokio::time::timeout_at(deadline + grace, done.wait_for(|d| *d)) => {}
                () = cancel.cancelled() => return,
            }
        }
        self.lock().turn_end.retain(|s| !*s.done.borrow());
    }

    /// Outputs of the finished session-start hooks `(skill, text)`, by skill name; a hook that
    /// succeeded without output has none.
    pub fn session_context(&self) -> Vec<(String, String)> {
        self.lock()
            .context
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect()
    }

    /// The turn-end outputs not yet handed out, as one notice for the model (`None` when there
    /// are none); each skill's part in a `<skill_turn_end name="...">` block.
    pub fn take_turn_end_notice(&self) -> Option<String> {
        let notices = std::mem::take(&mut self.lock().notices);
        if notices.is_empty() {
            return None;
        }
        let mut out = String::from("Your skills' turn-end hooks ran after the previous answer:\n");
        for (skill, text) in notices {
            out.push_str(&format!(
                "\n<skill_turn_end name=\"{}\">\n{text}\n</skill_turn_end>\n",
                escape_attr(&skill)
            ));
        }
        Some(out.trim_end().to_owned())
    }

    /// The skill whose `protected-paths` cover `target` (absolute), per the last
    /// [`refresh`](Self::refresh).
    pub fn protected(&self, target: &Path) -> Option<ProtectedHit> {
        let protected = self.lock().protected.clone();
        protected.check(&self.config.workspace, target)
    }
}

fn log_report(skill: &str, kind: SkillHookKind, report: &HookReport) {
    use super::exec::HookStatus;
    match &report.status {
        HookStatus::Exited(0) => tracing::debug!(skill, hook = %kind, "skill hook finished"),
        HookStatus::Exited(code) => tracing::warn!(skill, hook = %kind, code, "skill hook failed"),
        HookStatus::Signaled(signal) => tracing::warn!(skill, hook = %kind, signal, "skill hook killed"),
        HookStatus::TimedOut(t) => {
            tracing::warn!(skill, hook = %kind, timeout_secs = t.as_secs_f64(), "skill hook timed out")
        }
        HookStatus::Failed(e) => tracing::warn!(skill, hook = %kind, "skill hook could not run: {e}"),
    }
}

/// Escapes text for a double-quoted attribute.
pub(crate) fn escape_attr(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('"', "&quot;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

/// The `SKILL.md` files under `dirs` (in non-hidden sub-folders, as discovery finds them) with
/// their modification times and sizes; `None` when a folder cannot be listed (then nothing is
/// cached).
fn fingerprint(dirs: &[PathBuf]) -> Option<Fingerprint> {
    let mut out = Vec::new();
    for dir in dirs {
        let entries = match std::fs::read_dir(dir) {
            Ok(entries) => entries,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
            Err(_) => return None,
        };
        for entry in entries {
            let entry = entry.ok()?;
            if entry.file_name().to_string_lossy().starts_with('.') {
                continue;
            }
            let file = entry.path().join(volcanic_abstractions::skills::SKILL_FILE);
            if let Ok(meta) = std::fs::metadata(&file)
                && meta.is_file()
            {
                out.push((file, meta.modified().ok(), meta.len()));
            }
        }
    }
    out.sort();
    Some(out)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn write_skill(root: &Path, name: &str, description: &str) {
        let dir = root.join(name);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(
            dir.join("SKILL.md"),
            format!("---\nname: {name}\ndescription: {description}\n---\nBody.\n"),
        )
        .unwrap();
    }

    fn runner(dirs: Vec<PathBuf>) -> SkillHookRunner {
        let policy = crate::processes::ProcessSpawnPolicy::new(Default::default());
        SkillHookRunner::new(SkillHookConfig {
            workspace: PathBuf::from("/w"),
            skill_dirs: dirs,
            hooks_enabled: false,
            redactor: volcanic_abstractions::processes::ProcessSpawnPolicy::redactor(&policy),
        })
    }

    fn listed(skills: &[Skill]) -> Vec<(String, String)> {
        skills.iter().map(|s| (s.name.clone(), s.description.clone())).collect()
    }

    #[test]
    fn refresh_reuses_unchanged_skills_and_sees_every_change() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("skills");
        write_skill(&root, "alpha", "First.");
        let r = runner(vec![root.clone(), dir.path().join("missing")]);
        let first = r.refresh();
        assert_eq!(listed(&first), [("alpha".into(), "First.".into())]);
        // Nothing changed: the same list, not read again.
        assert!(Arc::ptr_eq(&first, &r.refresh()));
        // An edit (another size), a new skill, a removed one.
        write_skill(&root, "alpha", "First, edited.");
        assert_eq!(listed(&r.refresh()), [("alpha".into(), "First, edited.".into())]);
        write_skill(&root, "beta", "Second.");
        assert_eq!(r.refresh().len(), 2);
        std::fs::remove_dir_all(root.join("alpha")).unwrap();
        assert_eq!(listed(&r.refresh()), [("beta".into(), "Second.".into())]);
        // A hidden folder is not a skill, and does not count as a change.
        let before = r.refresh();
        write_skill(&root, ".hidden", "Hidden.");
        assert!(Arc::ptr_eq(&before, &r.refresh()));
    }
}

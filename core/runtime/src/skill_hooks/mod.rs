//! The skill-hooks slice: the `session-start` and `turn-end` hooks skills declare in their
//! `SKILL.md`, and the `protected-paths` guard on `write`/`edit` (spec: architecture.md, "Skill
//! hooks"; the format is in [`volcanic_abstractions::skills`] and `docs/skills.md`).
//!
//! Entry type: [`SkillHookRunner`], one per `AgentSession`. Skills come from the workspace's
//! `skills/` and the Volcanic home's `skills/` (the workspace wins a name clash); they are
//! rediscovered at every session (re)start and at the top of every run, and problems are logged
//! once per session.
//!
//! A hook runs as `sh -c <command>` through the session's `prepare_process` (purpose
//! `SkillHook`: the policy's environment filtering, `TZ`, host hooks and the extensions'
//! `process_spawn` apply), from the skill's folder, with `VOLCANIC_WORKSPACE` (the session's
//! working directory) and `VOLCANIC_SKILL_DIR`. Like `bash`: environment cleared and set
//! exactly, stdin `/dev/null`, its own process group, the whole group killed at the deadline
//! (start + timeout). Stdout and stderr share one pipe; the output is redacted and cut to
//! [`MAX_HOOK_OUTPUT_BYTES`] (the text says so when cut).
//!
//! Invariants:
//! - nothing a hook does fails a run: errors and timeouts become text for the model and a log line;
//! - a run waits for a hook at most until the hook's deadline plus [`REPORT_GRACE_MS`];
//! - a restart of the session-start hooks kills those still running and drops their outputs;
//! - with hooks off (`skill_hooks = false`) no hook runs, but skills are still listed and
//!   `protected-paths` still guard: they are a guard, not a hook.

mod exec;
mod protect;
mod runner;

pub use exec::{ENV_SKILL_DIR, ENV_WORKSPACE, MAX_HOOK_OUTPUT_BYTES};
pub use protect::ProtectedHit;
pub(crate) use protect::normalize;
pub use runner::{REPORT_GRACE_MS, SkillHookConfig, SkillHookRunner};

//! Where the session meets its [`SkillHookRunner`](crate::skill_hooks::SkillHookRunner): the
//! hook (re)starts, the wait at the top of a run, the turn-end hooks after `agent_end`, and the
//! `protected-paths` check before `write`/`edit` run.

use super::inner::Inner;
use crate::models::now_ms;
use serde_json::Value;
use tokio_util::sync::CancellationToken;
use volcanic_abstractions::extensions::events::SystemPromptOptions;
use volcanic_abstractions::messages::{CustomMessage, Message, UserBody};

/// `custom_type` of the message carrying turn-end hook outputs (it follows the next prompt).
pub const TURN_END_NOTICE_TYPE: &str = "skill_turn_end";

impl Inner {
    /// (Re)starts the skills' `session-start` hooks in the background: stops those still running
    /// from an earlier start and forgets their outputs; the next run waits for the new ones
    /// (bounded by each hook's timeout). Called after `session_start` (creation, resume, `/new`,
    /// a switch) and after every compaction.
    pub(crate) fn restart_session_hooks(&self) {
        self.skill_hooks.start_session_hooks(self.ctx());
    }
}

/// What the skills bring to one run.
pub(crate) struct RunSkills {
    skills: Vec<(String, String, String)>,
    context: Vec<(String, String)>,
    notice: Option<CustomMessage>,
}

impl RunSkills {
    /// Puts the skills list and the session-start outputs into the system prompt options.
    pub fn apply(&self, options: &mut SystemPromptOptions) {
        options.skills = self.skills.clone();
        options.skill_context = self.context.clone();
    }

    /// Puts the turn-end notice right after the prompt (the first pending message).
    pub fn add_notice(self, pending: &mut Vec<Message>) {
        if let Some(notice) = self.notice {
            let at = pending.len().min(1);
            pending.insert(at, Message::Custom(notice));
        }
    }
}

/// Top of a run: waits for running session-start hooks and the previous run's turn-end hooks
/// (each until its deadline at most; `cancel` stops the wait), rediscovers the skills and
/// collects what the run shows the model.
pub(crate) async fn before_run(inner: &Inner, cancel: &CancellationToken) -> RunSkills {
    let runner = &inner.skill_hooks;
    runner.wait(cancel).await;
    let skills = runner
        .refresh()
        .iter()
        .map(|s| (s.name.clone(), s.description.clone(), s.file.display().to_string()))
        .collect();
    let notice = runner.take_turn_end_notice().map(|text| CustomMessage {
        custom_type: TURN_END_NOTICE_TYPE.to_owned(),
        content: UserBody::Text(text),
        display: false,
        details: None,
        timestamp: now_ms(),
    });
    RunSkills {
        skills,
        context: runner.session_context(),
        notice,
    }
}

/// After `agent_end`: starts the turn-end hooks in the background.
pub(crate) fn after_run(inner: &Inner) {
    inner.skill_hooks.start_turn_end_hooks(inner.ctx());
}

/// The refusal for a `write` or `edit` call whose `path` a skill protects, for the model.
pub(crate) fn protected_refusal(inner: &Inner, tool: &str, args: &Value) -> Option<String> {
    if tool != "write" && tool != "edit" {
        return None;
    }
    let path = args.get("path")?.as_str()?;
    let target = crate::tools::resolve_path(&inner.cwd, path);
    let hit = inner.skill_hooks.protected(&target)?;
    Some(format!(
        "Refused: `{}` is protected by the skill `{}` (pattern `{}` in the protected-paths of {}), \
         so {tool} may not change it. Follow that skill's instructions for how it is maintained.",
        hit.relative.display(),
        hit.skill,
        hit.pattern,
        hit.file.display()
    ))
}

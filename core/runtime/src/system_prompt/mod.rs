//! The system-prompt slice: base prompt, tools section (from each tool's prompt snippet),
//! guidelines, project context files (`AGENTS.md` from the working directory upward, plus a
//! global one), skills, and the environment lines (`Current date`, `Time zone`, `Working
//! directory`).
//!
//! The prompt carries the date only (no clock time) and is rendered per run, so a zone change
//! applies from the next run and the cached prompt prefix changes at most daily.

use chrono::{DateTime, Utc};
use chrono_tz::Tz;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use volcanic_abstractions::extensions::events::SystemPromptOptions;
use volcanic_abstractions::tools::Tool;

/// File name of project context files.
pub const CONTEXT_FILE: &str = "AGENTS.md";

/// The built-in base prompt.
pub const BASE_PROMPT: &str = "You are Volcanic, an assistant that works for its user by reading \
files, running commands, editing code and writing files in its workspace. Be concise and direct. \
Use the tools to look things up instead of guessing; when a task is done, say briefly what you did.";

/// Builds a session's system prompt.
#[derive(Debug, Clone)]
pub struct SystemPromptBuilder {
    cwd: PathBuf,
    stop_at: Option<PathBuf>,
    global_dir: Option<PathBuf>,
}

impl SystemPromptBuilder {
    /// `cwd`: the session's working directory; context files are looked up from there upward,
    /// stopping after `stop_at` (the workspaces root for the bot; the filesystem root when
    /// `None`); `global_dir` holds a global `AGENTS.md` (the Volcanic home).
    pub fn new(cwd: impl Into<PathBuf>, stop_at: Option<PathBuf>, global_dir: Option<PathBuf>) -> Self {
        SystemPromptBuilder {
            cwd: cwd.into(),
            stop_at,
            global_dir,
        }
    }

    /// `AGENTS.md` files: the global one first, then from the outermost directory down to `cwd`.
    /// Unreadable files are skipped with a warning.
    pub fn context_files(&self) -> Vec<(String, String)> {
        let mut found = Vec::new();
        let mut dir: Option<&Path> = Some(&self.cwd);
        while let Some(d) = dir {
            let f = d.join(CONTEXT_FILE);
            if f.is_file() {
                found.push(f);
            }
            if self.stop_at.as_deref().is_some_and(|s| s == d) {
                break;
            }
            dir = d.parent();
        }
        if let Some(g) = &self.global_dir {
            let f = g.join(CONTEXT_FILE);
            if f.is_file() && !found.contains(&f) {
                found.push(f);
            }
        }
        found.reverse();
        found
            .into_iter()
            .filter_map(|p| match std::fs::read_to_string(&p) {
                Ok(text) => Some((p.display().to_string(), text)),
                Err(e) => {
                    tracing::warn!(path = %p.display(), "cannot read context file: {e}");
                    None
                }
            })
            .collect()
    }

    /// The options for a run: tools section and guidelines from the active tools, context files.
    pub fn options(&self, tools: &[Arc<dyn Tool>]) -> SystemPromptOptions {
        let mut guidelines: Vec<String> = Vec::new();
        for t in tools {
            for g in t.prompt_guidelines() {
                if !guidelines.contains(&g) {
                    guidelines.push(g);
                }
            }
        }
        SystemPromptOptions {
            base_prompt: None,
            sections: Vec::new(),
            tools: tools
                .iter()
                .map(|t| {
                    let snippet = t.prompt_snippet().unwrap_or_else(|| first_line(t.description()));
                    (t.name().to_owned(), snippet)
                })
                .collect(),
            guidelines,
            context_files: self.context_files(),
            skills: Vec::new(),
            skill_context: Vec::new(),
        }
    }

    /// Renders the prompt. `tz`: the session's zone (UTC when `None`).
    pub fn render(&self, options: &SystemPromptOptions, now: DateTime<Utc>, tz: Option<Tz>) -> String {
        let mut out = String::new();
        out.push_str(options.base_prompt.as_deref().unwrap_or(BASE_PROMPT));
        out.push_str("\n\n");
        if !options.tools.is_empty() {
            out.push_str("Available tools:\n");
            for (name, snippet) in &options.tools {
                out.push_str(&format!("- {name}: {snippet}\n"));
            }
            out.push('\n');
        }
        if !options.guidelines.is_empty() {
            out.push_str("Guidelines:\n");
            for g in &options.guidelines {
                out.push_str(&format!("- {g}\n"));
            }
            out.push('\n');
        }
        for (title, body) in &options.sections {
            out.push_str(&format!("# {title}\n\n{body}\n\n"));
        }
        if !options.context_files.is_empty() {
            out.push_str("# Project Context\n\nProject-specific instructions and guidelines:\n\n");
            for (path, text) in &options.context_files {
                out.push_str(&format!("## {path}\n\n{}\n\n", text.trim_end()));
            }
        }
        if !options.skills.is_empty() {
            out.push_str("# Skills\n\nRead a skill's file when the task matches its description:\n");
            for (name, description, path) in &options.skills {
                let description = description.split_whitespace().collect::<Vec<_>>().join(" ");
                out.push_str(&format!("- {name}: {description} ({path})\n"));
            }
            out.push('\n');
        }
        if !options.skill_context.is_empty() {
            out.push_str("# Skill Session Context\n\nWhat the skills' session-start hooks reported:\n\n");
            for (name, text) in &options.skill_context {
                out.push_str(&format!(
                    "<skill_session_context name=\"{}\">\n{}\n</skill_session_context>\n\n",
                    escape_attr(name),
                    text.trim_end()
                ));
            }
        }
        let zone = tz.unwrap_or(chrono_tz::UTC);
        let local = now.with_timezone(&zone);
        out.push_str(&format!("Current date: {}\n", local.format("%A, %Y-%m-%d")));
        out.push_str(&format!("Time zone: {}\n", zone.name()));
        out.push_str(&format!("Current working directory: {}", self.cwd.display()));
        out
    }
}

/// Escapes text for a double-quoted attribute.
fn escape_attr(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('"', "&quot;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

fn first_line(s: &str) -> String {
    s.lines().next().unwrap_or("").to_owned()
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    #[test]
    fn context_files_from_outer_to_inner_stop_at_root() {
        let root = tempfile::tempdir().unwrap();
        let ws = root.path().join("ws");
        let inner = ws.join("proj");
        std::fs::create_dir_all(&inner).unwrap();
        std::fs::write(root.path().join(CONTEXT_FILE), "outside").unwrap();
        std::fs::write(ws.join(CONTEXT_FILE), "ws rules").unwrap();
        std::fs::write(inner.join(CONTEXT_FILE), "proj rules").unwrap();
        let b = SystemPromptBuilder::new(&inner, Some(ws.clone()), None);
        let texts: Vec<String> = b.context_files().into_iter().map(|(_, t)| t).collect();
        assert_eq!(texts, vec!["ws rules", "proj rules"]);
    }

    #[test]
    fn date_line_follows_the_zone() {
        let b = SystemPromptBuilder::new("/tmp", None, None);
        // 23:30 UTC on 2026-03-01 is already 2026-03-02 in Tokyo.
        let now = Utc.with_ymd_and_hms(2026, 3, 1, 23, 30, 0).unwrap();
        let p = b.render(&SystemPromptOptions::default(), now, Some(chrono_tz::Asia::Tokyo));
        assert!(p.contains("Current date: Monday, 2026-03-02"), "{p}");
        assert!(p.contains("Time zone: Asia/Tokyo"));
        let p = b.render(&SystemPromptOptions::default(), now, None);
        assert!(p.contains("Current date: Sunday, 2026-03-01"), "{p}");
    }

    #[test]
    fn tools_and_overrides_render() {
        let b = SystemPromptBuilder::new("/tmp", None, None);
        let mut o = SystemPromptOptions {
            base_prompt: Some("BASE".into()),
            ..Default::default()
        };
        o.tools.push(("bash".into(), "run commands".into()));
        o.guidelines.push("be careful".into());
        let p = b.render(&o, Utc::now(), None);
        assert!(p.starts_with("BASE\n\nAvailable tools:\n- bash: run commands\n"));
        assert!(p.contains("Guidelines:\n- be careful\n"));
    }

    #[test]
    fn skills_are_listed_and_hook_context_rendered_per_skill() {
        let b = SystemPromptBuilder::new("/ws", None, None);
        let o = SystemPromptOptions {
            skills: vec![
                (
                    "calendar".into(),
                    "Reads the\n  calendar.".into(),
                    "/home/skills/calendar/SKILL.md".into(),
                ),
                (
                    "notes".into(),
                    "Keeps notes.".into(),
                    "/ws/skills/notes/SKILL.md".into(),
                ),
            ],
            skill_context: vec![
                ("notes".into(), "3 notes, newest: a.md\n".into()),
                ("q\"x".into(), "hi".into()),
            ],
            ..Default::default()
        };
        let p = b.render(&o, Utc::now(), None);
        assert!(
            p.contains(
                "# Skills\n\nRead a skill's file when the task matches its description:\n\
                 - calendar: Reads the calendar. (/home/skills/calendar/SKILL.md)\n\
                 - notes: Keeps notes. (/ws/skills/notes/SKILL.md)\n\n"
            ),
            "{p}"
        );
        assert!(
            p.contains("<skill_session_context name=\"notes\">\n3 notes, newest: a.md\n</skill_session_context>\n"),
            "{p}"
        );
        assert!(p.contains("<skill_session_context name=\"q&quot;x\">\nhi\n"), "{p}");
        let empty = b.render(&SystemPromptOptions::default(), Utc::now(), None);
        assert!(!empty.contains("# Skills") && !empty.contains("skill_session_context"));
    }
}

//! Skills: `SKILL.md` files a session lists in its system prompt, and the hooks and protected
//! paths they may declare (spec: architecture.md, "Skill hooks").
//!
//! Layout, like pi's and Claude Code's: `<skills folder>/<dir>/SKILL.md`, one level deep. The
//! file opens with YAML frontmatter between two `---` lines:
//!
//! ```text
//! ---
//! name: notes                  # required, at most 64 characters, one line
//! description: Keeps notes.    # required, at most 1024 characters
//! hooks:                       # optional
//!   session-start:
//!     command: ./context.sh    # run with `sh -c` from the skill's folder
//!     timeout: 5               # seconds, default 10, at most 300
//!   turn-end: ./reindex.sh     # short form: the command, default timeout
//! protected-paths:             # optional: globs relative to the workspace
//!   - notes/index.md
//!   - "archive/**"
//! ---
//! ```
//!
//! Other top-level keys are ignored (other tools' skills carry their own). An unknown hook name
//! is ignored with a warning; anything else wrong makes the file invalid, and
//! [`SkillFiles::discover`] skips it with a [`SkillWarning`] naming the file and the problem.
//! Globs use `/` as separator: `*` stays within one path segment, `**` crosses segments.

use globset::GlobBuilder;
use serde::Deserialize;
use std::collections::HashSet;
use std::fmt;
use std::path::{Component, Path, PathBuf};
use std::time::Duration;

/// File name of a skill.
pub const SKILL_FILE: &str = "SKILL.md";
/// Name of the skills folder in a workspace and in the Volcanic home.
pub const SKILLS_DIR: &str = "skills";
/// Longest `name`, in characters.
pub const MAX_NAME_CHARS: usize = 64;
/// Longest `description`, in characters.
pub const MAX_DESCRIPTION_CHARS: usize = 1024;
/// A hook's timeout when it gives none, in seconds.
pub const DEFAULT_HOOK_TIMEOUT_SECS: u64 = 10;
/// The longest timeout a hook may ask for, in seconds.
pub const MAX_HOOK_TIMEOUT_SECS: u64 = 300;

/// One valid skill.
#[derive(Debug, Clone, PartialEq)]
pub struct Skill {
    /// `name` from the frontmatter (trimmed).
    pub name: String,
    /// `description` from the frontmatter (trimmed).
    pub description: String,
    /// The `SKILL.md` file.
    pub file: PathBuf,
    /// The skill's folder (the parent of `file`): hooks run there.
    pub dir: PathBuf,
    /// Declared hooks.
    pub hooks: SkillHooks,
    /// `protected-paths` globs, relative to the workspace (a leading `./` removed).
    pub protected_paths: Vec<String>,
}

/// The hooks a skill declares.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SkillHooks {
    /// Runs in the background when a session starts (also after `/new`, a switch, a resume and
    /// every compaction); its output enters the system prompt.
    pub session_start: Option<HookCommand>,
    /// Runs in the background after each run; its output follows the next prompt.
    pub turn_end: Option<HookCommand>,
}

impl SkillHooks {
    /// The hook of `kind`, if declared.
    pub fn get(&self, kind: SkillHookKind) -> Option<&HookCommand> {
        match kind {
            SkillHookKind::SessionStart => self.session_start.as_ref(),
            SkillHookKind::TurnEnd => self.turn_end.as_ref(),
        }
    }
}

/// A hook's command and time limit.
#[derive(Debug, Clone, PartialEq)]
pub struct HookCommand {
    /// Shell command, run as `sh -c command` from the skill's folder.
    pub command: String,
    /// Killed (its whole process group) after this long; more than zero, at most
    /// [`MAX_HOOK_TIMEOUT_SECS`].
    pub timeout: Duration,
}

/// The two hook kinds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SkillHookKind {
    /// `session-start`.
    SessionStart,
    /// `turn-end`.
    TurnEnd,
}

impl SkillHookKind {
    /// The frontmatter key (`session-start`, `turn-end`).
    pub const fn key(self) -> &'static str {
        match self {
            SkillHookKind::SessionStart => "session-start",
            SkillHookKind::TurnEnd => "turn-end",
        }
    }

    fn from_key(key: &str) -> Option<Self> {
        match key {
            "session-start" => Some(SkillHookKind::SessionStart),
            "turn-end" => Some(SkillHookKind::TurnEnd),
            _ => None,
        }
    }
}

impl fmt::Display for SkillHookKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.key())
    }
}

/// Why a `SKILL.md` is invalid.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SkillFileError {
    /// The file could not be read.
    #[error("cannot read the file: {0}")]
    Read(String),
    /// No `---` frontmatter at the start, or it is never closed.
    #[error("no frontmatter: the file must start with a `---` line, then YAML, then another `---` line")]
    NoFrontmatter,
    /// The frontmatter is not valid YAML, or a key has the wrong type.
    #[error("bad YAML in the frontmatter: {0}")]
    Yaml(String),
    /// A required key is missing or empty.
    #[error("`{0}` is missing or empty")]
    Missing(&'static str),
    /// `name` is longer than [`MAX_NAME_CHARS`].
    #[error("`name` has {0} characters; at most 64 are allowed")]
    NameTooLong(usize),
    /// `name` has a line break or another control character.
    #[error("`name` must be one line without control characters")]
    BadName,
    /// `description` is longer than [`MAX_DESCRIPTION_CHARS`].
    #[error("`description` has {0} characters; at most 1024 are allowed")]
    DescriptionTooLong(usize),
    /// A `session-start` or `turn-end` entry is wrong.
    #[error("hook `{hook}`: {problem}")]
    Hook {
        /// `session-start` or `turn-end`.
        hook: &'static str,
        /// What is wrong.
        problem: String,
    },
    /// A `protected-paths` entry is wrong.
    #[error("protected path `{pattern}`: {problem}")]
    ProtectedPath {
        /// The entry as written.
        pattern: String,
        /// What is wrong.
        problem: String,
    },
}

/// A problem found while discovering skills: an invalid file (skipped) or a part of a valid one
/// that is ignored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SkillWarning {
    /// The `SKILL.md` (or the skills folder that could not be read).
    pub file: PathBuf,
    /// What is wrong.
    pub problem: String,
    /// Whether the whole skill was skipped (otherwise only the named part is ignored).
    pub skipped: bool,
}

impl fmt::Display for SkillWarning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let what = if self.skipped { "skill skipped" } else { "ignored" };
        write!(f, "{}: {} ({what})", self.file.display(), self.problem)
    }
}

/// A parsed `SKILL.md`: the skill and the parts of it that were ignored (unknown hook names).
#[derive(Debug, Clone, PartialEq)]
pub struct ParsedSkill {
    /// The skill.
    pub skill: Skill,
    /// One line per ignored part.
    pub ignored: Vec<String>,
}

#[derive(Deserialize)]
struct RawFrontmatter {
    name: Option<String>,
    description: Option<String>,
    hooks: Option<serde_yaml_ng::Mapping>,
    #[serde(rename = "protected-paths")]
    protected_paths: Option<Vec<String>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawHook {
    command: Option<String>,
    timeout: Option<f64>,
}

/// Reads and finds `SKILL.md` files.
#[derive(Debug, Clone, Copy, Default)]
pub struct SkillFiles;

impl SkillFiles {
    /// Parses the text of `file` (a `SKILL.md`; its parent is the skill's folder).
    pub fn parse(file: &Path, text: &str) -> Result<ParsedSkill, SkillFileError> {
        let yaml = frontmatter(text).ok_or(SkillFileError::NoFrontmatter)?;
        let raw: RawFrontmatter = if yaml.trim().is_empty() {
            return Err(SkillFileError::Missing("name"));
        } else {
            serde_yaml_ng::from_str(yaml).map_err(|e| SkillFileError::Yaml(e.to_string()))?
        };
        let name = raw.name.as_deref().map(str::trim).unwrap_or_default();
        if name.is_empty() {
            return Err(SkillFileError::Missing("name"));
        }
        if name.chars().any(char::is_control) {
            return Err(SkillFileError::BadName);
        }
        let chars = name.chars().count();
        if chars > MAX_NAME_CHARS {
            return Err(SkillFileError::NameTooLong(chars));
        }
        let description = raw.description.as_deref().map(str::trim).unwrap_or_default();
        if description.is_empty() {
            return Err(SkillFileError::Missing("description"));
        }
        let chars = description.chars().count();
        if chars > MAX_DESCRIPTION_CHARS {
            return Err(SkillFileError::DescriptionTooLong(chars));
        }
        let mut ignored = Vec::new();
        let hooks = match raw.hooks {
            Some(map) => parse_hooks(map, &mut ignored)?,
            None => SkillHooks::default(),
        };
        let protected_paths = raw
            .protected_paths
            .unwrap_or_default()
            .iter()
            .map(|p| protected_pattern(p))
            .collect::<Result<Vec<_>, _>>()?;
        let dir = file.parent().map(Path::to_path_buf).unwrap_or_default();
        Ok(ParsedSkill {
            skill: Skill {
                name: name.to_owned(),
                description: description.to_owned(),
                file: file.to_path_buf(),
                dir,
                hooks,
                protected_paths,
            },
            ignored,
        })
    }

    /// Reads and parses `file`.
    pub fn load(file: &Path) -> Result<ParsedSkill, SkillFileError> {
        let text = std::fs::read_to_string(file).map_err(|e| SkillFileError::Read(e.to_string()))?;
        Self::parse(file, &text)
    }

    /// Finds the skills in `dirs` (each holding `<dir>/SKILL.md` one level down), earlier folders
    /// first: a skill whose name an earlier folder already has is left out (pass the workspace's
    /// `skills/` before the home's, so the workspace wins). Within one folder, sub-folders are read
    /// in name order and a repeated name is skipped with a warning. Missing folders, hidden
    /// sub-folders and sub-folders without a `SKILL.md` are passed over silently. The result is
    /// sorted by name.
    pub fn discover(dirs: &[PathBuf]) -> (Vec<Skill>, Vec<SkillWarning>) {
        let mut skills: Vec<Skill> = Vec::new();
        let mut warnings = Vec::new();
        let mut earlier: HashSet<String> = HashSet::new();
        for dir in dirs {
            let mut here: Vec<Skill> = Vec::new();
            for file in skill_files(dir, &mut warnings) {
                match Self::load(&file) {
                    Ok(parsed) => {
                        warnings.extend(parsed.ignored.into_iter().map(|problem| SkillWarning {
                            file: file.clone(),
                            problem,
                            skipped: false,
                        }));
                        let skill = parsed.skill;
                        if let Some(first) = here.iter().find(|s| s.name == skill.name) {
                            warnings.push(SkillWarning {
                                problem: format!(
                                    "the name `{}` is already used by {}",
                                    skill.name,
                                    first.file.display()
                                ),
                                file,
                                skipped: true,
                            });
                        } else if !earlier.contains(&skill.name) {
                            here.push(skill);
                        }
                    }
                    Err(e) => warnings.push(SkillWarning {
                        file,
                        problem: e.to_string(),
                        skipped: true,
                    }),
                }
            }
            earlier.extend(here.iter().map(|s| s.name.clone()));
            skills.append(&mut here);
        }
        skills.sort_by(|a, b| a.name.cmp(&b.name));
        (skills, warnings)
    }
}

/// The `SKILL.md` files one level below `dir`, in name order.
fn skill_files(dir: &Path, warnings: &mut Vec<SkillWarning>) -> Vec<PathBuf> {
    let entries = match std::fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Vec::new(),
        Err(e) => {
            warnings.push(SkillWarning {
                file: dir.to_path_buf(),
                problem: format!("cannot read the skills folder: {e}"),
                skipped: true,
            });
            return Vec::new();
        }
    };
    let mut files: Vec<PathBuf> = entries
        .filter_map(Result::ok)
        .filter(|e| !e.file_name().to_string_lossy().starts_with('.'))
        .map(|e| e.path().join(SKILL_FILE))
        .filter(|f| f.is_file())
        .collect();
    files.sort();
    files
}

/// The YAML between the opening `---` line and the next `---` (or `...`) line.
fn frontmatter(text: &str) -> Option<&str> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let (first, rest) = text.split_once('\n')?;
    if first.trim_end() != "---" {
        return None;
    }
    let mut offset = 0;
    for line in rest.split_inclusive('\n') {
        let bare = line.trim_end();
        if bare == "---" || bare == "..." {
            return Some(&rest[..offset]);
        }
        offset += line.len();
    }
    None
}

fn parse_hooks(map: serde_yaml_ng::Mapping, ignored: &mut Vec<String>) -> Result<SkillHooks, SkillFileError> {
    let mut hooks = SkillHooks::default();
    for (key, value) in map {
        let Some(key) = key.as_str() else {
            ignored.push(format!("hook name {key:?} is not a string"));
            continue;
        };
        let Some(kind) = SkillHookKind::from_key(key) else {
            ignored.push(format!("unknown hook `{key}` (known: `session-start`, `turn-end`)"));
            continue;
        };
        let command = hook_command(kind, value)?;
        match kind {
            SkillHookKind::SessionStart => hooks.session_start = Some(command),
            SkillHookKind::TurnEnd => hooks.turn_end = Some(command),
        }
    }
    Ok(hooks)
}

fn hook_command(kind: SkillHookKind, value: serde_yaml_ng::Value) -> Result<HookCommand, SkillFileError> {
    let problem = |problem: String| SkillFileError::Hook {
        hook: kind.key(),
        problem,
    };
    let raw = match value {
        serde_yaml_ng::Value::String(command) => RawHook {
            command: Some(command),
            timeout: None,
        },
        other => serde_yaml_ng::from_value::<RawHook>(other).map_err(|e| problem(e.to_string()))?,
    };
    let command = raw.command.as_deref().map(str::trim).unwrap_or_default();
    if command.is_empty() {
        return Err(problem("`command` is missing or empty".to_owned()));
    }
    let timeout = match raw.timeout {
        None => Duration::from_secs(DEFAULT_HOOK_TIMEOUT_SECS),
        Some(t) if t > 0.0 && t <= MAX_HOOK_TIMEOUT_SECS as f64 => Duration::from_secs_f64(t),
        Some(t) => {
            return Err(problem(format!(
                "`timeout` must be more than 0 and at most {MAX_HOOK_TIMEOUT_SECS} seconds (default \
                 {DEFAULT_HOOK_TIMEOUT_SECS}), not {t}"
            )));
        }
    };
    Ok(HookCommand {
        command: command.to_owned(),
        timeout,
    })
}

fn protected_pattern(pattern: &str) -> Result<String, SkillFileError> {
    let problem = |problem: &str| SkillFileError::ProtectedPath {
        pattern: pattern.to_owned(),
        problem: problem.to_owned(),
    };
    let mut p = pattern.trim();
    while let Some(rest) = p.strip_prefix("./") {
        p = rest;
    }
    if p.is_empty() {
        return Err(problem("empty pattern"));
    }
    if p.starts_with('/') || p.starts_with('~') {
        return Err(problem("must be relative to the workspace"));
    }
    if Path::new(p).components().any(|c| matches!(c, Component::ParentDir)) {
        return Err(problem("must stay inside the workspace (no `..`)"));
    }
    GlobBuilder::new(p)
        .literal_separator(true)
        .build()
        .map_err(|e| problem(&e.kind().to_string()))?;
    Ok(p.to_owned())
}

#[cfg(test)]
#[path = "skills_tests.rs"]
mod tests;

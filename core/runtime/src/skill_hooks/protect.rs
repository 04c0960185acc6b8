//! The `protected-paths` guard: which skill, if any, protects a path `write` or `edit` is about to
//! change.
//!
//! A target is checked under two readings, and refused when either matches: the lexical one
//! (`.` and `..` folded, relative to the workspace as written) and the real one (the longest
//! existing prefix with its symlinks resolved, the rest appended), so neither `notes/../notes/x`
//! nor a symlink into a protected folder gets through. Paths outside the workspace never match.

use globset::{GlobBuilder, GlobSet, GlobSetBuilder};
use std::path::{Component, Path, PathBuf};
use volcanic_abstractions::skills::Skill;

/// A refused target: the skill and the pattern that protect it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProtectedHit {
    /// The skill's name.
    pub skill: String,
    /// The matching `protected-paths` pattern.
    pub pattern: String,
    /// The skill's `SKILL.md`.
    pub file: PathBuf,
    /// The target relative to the workspace.
    pub relative: PathBuf,
}

/// The compiled patterns of a set of skills.
#[derive(Debug, Clone, Default)]
pub(crate) struct ProtectedPaths {
    set: GlobSet,
    /// Per glob in `set`: (skill, pattern, SKILL.md).
    owners: Vec<(String, String, PathBuf)>,
}

impl ProtectedPaths {
    /// Compiles every skill's patterns (already validated when the skill was parsed; one that
    /// still fails to compile is logged and left out).
    pub fn new(skills: &[Skill]) -> Self {
        let mut builder = GlobSetBuilder::new();
        let mut owners = Vec::new();
        for skill in skills {
            for pattern in &skill.protected_paths {
                match GlobBuilder::new(pattern).literal_separator(true).build() {
                    Ok(glob) => {
                        builder.add(glob);
                        owners.push((skill.name.clone(), pattern.clone(), skill.file.clone()));
                    }
                    Err(e) => tracing::warn!(skill = %skill.name, %pattern, "protected path ignored: {e}"),
                }
            }
        }
        let set = match builder.build() {
            Ok(set) => set,
            Err(e) => {
                tracing::warn!("protected paths ignored: {e}");
                owners.clear();
                GlobSet::empty()
            }
        };
        ProtectedPaths { set, owners }
    }

    /// Whether no pattern is known.
    pub fn is_empty(&self) -> bool {
        self.owners.is_empty()
    }

    /// The skill protecting `target` (absolute), with `workspace` the session's working
    /// directory.
    pub fn check(&self, workspace: &Path, target: &Path) -> Option<ProtectedHit> {
        if self.is_empty() {
            return None;
        }
        let workspaces = [normalize(workspace), real_path(workspace)];
        let targets = [normalize(target), real_path(target)];
        for t in &targets {
            for w in &workspaces {
                let Ok(relative) = t.strip_prefix(w) else { continue };
                if let Some(&i) = self.set.matches(relative).first() {
                    let (skill, pattern, file) = self.owners.get(i)?.clone();
                    return Some(ProtectedHit {
                        skill,
                        pattern,
                        file,
                        relative: relative.to_path_buf(),
                    });
                }
            }
        }
        None
    }
}

/// `.` dropped and `..` folded, without touching the filesystem.
pub(crate) fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in path.components() {
        match c {
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            other => out.push(other),
        }
    }
    out
}

/// The longest existing prefix of `path` resolved by the filesystem (symlinks, and `..` after
/// them, as the OS follows them), the rest folded lexically and appended.
fn real_path(path: &Path) -> PathBuf {
    let components: Vec<Component<'_>> = path.components().collect();
    for split in (1..=components.len()).rev() {
        let prefix: PathBuf = components[..split].iter().collect();
        if let Ok(real) = prefix.canonicalize() {
            let rest: PathBuf = components[split..].iter().collect();
            return normalize(&real.join(rest));
        }
    }
    normalize(path)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;
    use volcanic_abstractions::skills::SkillHooks;

    fn skill(name: &str, patterns: &[&str]) -> Skill {
        Skill {
            name: name.into(),
            description: "d".into(),
            file: PathBuf::from(format!("/skills/{name}/SKILL.md")),
            dir: PathBuf::from(format!("/skills/{name}")),
            hooks: SkillHooks::default(),
            protected_paths: patterns.iter().map(|p| (*p).to_owned()).collect(),
        }
    }

    fn hit(p: &ProtectedPaths, ws: &Path, target: &str) -> Option<(String, String)> {
        p.check(ws, &ws.join(target)).map(|h| (h.skill, h.pattern))
    }

    #[test]
    fn patterns_match_relative_to_the_workspace() {
        let dir = tempfile::tempdir().unwrap();
        let ws = dir.path().join("ws");
        std::fs::create_dir_all(ws.join("notes")).unwrap();
        let p = ProtectedPaths::new(&[
            skill("notes", &["notes/index.md", "archive/**"]),
            skill("logs", &["*.log"]),
        ]);
        let some = |s: &str, pat: &str| Some((s.to_owned(), pat.to_owned()));
        assert_eq!(hit(&p, &ws, "notes/index.md"), some("notes", "notes/index.md"));
        assert_eq!(
            hit(&p, &ws, "./notes/../notes/index.md"),
            some("notes", "notes/index.md")
        );
        assert_eq!(hit(&p, &ws, "archive/2024/jan.md"), some("notes", "archive/**"));
        assert_eq!(hit(&p, &ws, "new/../archive/x"), some("notes", "archive/**"));
        assert_eq!(hit(&p, &ws, "run.log"), some("logs", "*.log"));
        // `*` stays within a segment; other files are free.
        assert_eq!(hit(&p, &ws, "sub/run.log"), None);
        assert_eq!(hit(&p, &ws, "notes/other.md"), None);
        assert_eq!(hit(&p, &ws, "notes/index.md.bak"), None);
        // Outside the workspace nothing matches, even with the same relative shape.
        assert_eq!(p.check(&ws, &dir.path().join("notes/index.md")), None);
        assert_eq!(hit(&p, &ws, "../notes/index.md"), None);
    }

    #[test]
    fn symlinks_are_resolved() {
        let dir = tempfile::tempdir().unwrap();
        let ws = dir.path().join("ws");
        std::fs::create_dir_all(ws.join("archive")).unwrap();
        std::fs::create_dir_all(ws.join("notes")).unwrap();
        std::fs::write(ws.join("notes/index.md"), "x").unwrap();
        std::os::unix::fs::symlink(ws.join("archive"), ws.join("shortcut")).unwrap();
        std::os::unix::fs::symlink(ws.join("notes/index.md"), ws.join("link.md")).unwrap();
        let p = ProtectedPaths::new(&[skill("notes", &["notes/index.md", "archive/**"])]);
        assert_eq!(hit(&p, &ws, "shortcut/new.md").unwrap().1, "archive/**");
        assert_eq!(hit(&p, &ws, "link.md").unwrap().1, "notes/index.md");
        // A workspace reached through a symlink is the same workspace.
        let alias = dir.path().join("alias");
        std::os::unix::fs::symlink(&ws, &alias).unwrap();
        assert_eq!(hit(&p, &alias, "notes/index.md").unwrap().1, "notes/index.md");
        assert_eq!(p.check(&alias, &ws.join("notes/index.md")).unwrap().skill, "notes");
    }

    #[test]
    fn no_patterns_match_nothing() {
        let p = ProtectedPaths::new(&[skill("plain", &[])]);
        assert!(p.is_empty());
        assert_eq!(p.check(Path::new("/ws"), Path::new("/ws/anything")), None);
    }
}

#![allow(clippy::unwrap_used, clippy::expect_used)]

use super::*;
use pretty_assertions::assert_eq;

fn parse(text: &str) -> Result<ParsedSkill, SkillFileError> {
    SkillFiles::parse(Path::new("/skills/notes/SKILL.md"), text)
}

fn write_skill(root: &Path, dir: &str, text: &str) -> PathBuf {
    let d = root.join(dir);
    std::fs::create_dir_all(&d).unwrap();
    let f = d.join(SKILL_FILE);
    std::fs::write(&f, text).unwrap();
    f
}

fn md(name: &str, description: &str) -> String {
    format!("---\nname: {name}\ndescription: {description}\n---\n# Body\n")
}

#[test]
fn the_readme_example_parses_in_full() {
    let text = "---\nname: notes\ndescription: Keeps the chat's notes in notes/ and knows their index.\n\
        license: MIT\nhooks:\n  session-start:\n    command: ./context.sh      # run with `sh -c`\n    timeout: 5\n\
        \x20 turn-end:\n    command: ./reindex.sh\n    timeout: 30\nprotected-paths:\n  - notes/index.md\n  - \"archive/**\"\n\
        ---\n\nBody text.\n";
    let parsed = parse(text).unwrap();
    assert_eq!(parsed.ignored, Vec::<String>::new());
    assert_eq!(
        parsed.skill,
        Skill {
            name: "notes".into(),
            description: "Keeps the chat's notes in notes/ and knows their index.".into(),
            file: "/skills/notes/SKILL.md".into(),
            dir: "/skills/notes".into(),
            hooks: SkillHooks {
                session_start: Some(HookCommand {
                    command: "./context.sh".into(),
                    timeout: Duration::from_secs(5),
                }),
                turn_end: Some(HookCommand {
                    command: "./reindex.sh".into(),
                    timeout: Duration::from_secs(30),
                }),
            },
            protected_paths: vec!["notes/index.md".into(), "archive/**".into()],
        }
    );
}

#[test]
fn short_hook_form_gets_the_default_timeout_and_unknown_hooks_are_ignored() {
    let text = "---\nname: n\ndescription: d\nhooks:\n  turn-end: echo hi\n  PreToolUse:\n    - matcher: x\n---\n";
    let parsed = parse(text).unwrap();
    assert_eq!(
        parsed.skill.hooks,
        SkillHooks {
            session_start: None,
            turn_end: Some(HookCommand {
                command: "echo hi".into(),
                timeout: Duration::from_secs(DEFAULT_HOOK_TIMEOUT_SECS),
            }),
        }
    );
    assert_eq!(parsed.ignored.len(), 1);
    assert!(parsed.ignored[0].contains("PreToolUse"), "{:?}", parsed.ignored);
}

#[test]
fn crlf_bom_and_dots_terminator_are_accepted() {
    let parsed = parse("\u{feff}---\r\nname: n\r\ndescription: d\r\n...\r\nbody").unwrap();
    assert_eq!(
        (parsed.skill.name.as_str(), parsed.skill.description.as_str()),
        ("n", "d")
    );
}

#[test]
fn limits_are_inclusive() {
    let name = "n".repeat(MAX_NAME_CHARS);
    let description = "é".repeat(MAX_DESCRIPTION_CHARS);
    let parsed = parse(&md(&name, &description)).unwrap();
    assert_eq!(parsed.skill.name, name);
    assert_eq!(parsed.skill.description.chars().count(), MAX_DESCRIPTION_CHARS);
    assert_eq!(
        parse(&md(&"n".repeat(65), "d")).unwrap_err(),
        SkillFileError::NameTooLong(65)
    );
    assert_eq!(
        parse(&md("n", &"d".repeat(1025))).unwrap_err(),
        SkillFileError::DescriptionTooLong(1025)
    );
}

#[test]
fn each_invalid_file_names_its_problem() {
    let cases: Vec<(&str, SkillFileError)> = vec![
        ("# no frontmatter\nname: x\n", SkillFileError::NoFrontmatter),
        ("---\nname: x\ndescription: y\n", SkillFileError::NoFrontmatter),
        ("---\n---\n", SkillFileError::Missing("name")),
        ("---\ndescription: y\n---\n", SkillFileError::Missing("name")),
        (
            "---\nname: \"  \"\ndescription: y\n---\n",
            SkillFileError::Missing("name"),
        ),
        ("---\nname: x\n---\n", SkillFileError::Missing("description")),
        ("---\nname: \"a\\nb\"\ndescription: y\n---\n", SkillFileError::BadName),
    ];
    for (text, want) in cases {
        assert_eq!(parse(text).unwrap_err(), want, "{text:?}");
    }
    let yaml = |text: &str| match parse(text).unwrap_err() {
        SkillFileError::Yaml(m) => m,
        other => panic!("{text:?}: expected a YAML error, got {other:?}"),
    };
    assert!(!yaml("---\nname: [unclosed\ndescription: y\n---\n").is_empty());
    assert!(yaml("---\nname: [a, b]\ndescription: y\n---\n").contains("name"));
    assert!(!yaml("---\n- just\n- a list\n---\n").is_empty());
}

#[test]
fn bad_hooks_and_patterns_make_the_file_invalid() {
    let hook = |body: &str| parse(&format!("---\nname: n\ndescription: d\nhooks:\n{body}---\n"));
    let problem = |r: Result<ParsedSkill, SkillFileError>| match r.unwrap_err() {
        SkillFileError::Hook { hook, problem } => format!("{hook}: {problem}"),
        other => panic!("expected a hook error, got {other:?}"),
    };
    assert!(problem(hook("  session-start:\n    timeout: 5\n")).starts_with("session-start: `command`"));
    assert!(problem(hook("  turn-end:\n")).starts_with("turn-end:"));
    assert!(problem(hook("  turn-end:\n    command: x\n    timeout: 0\n")).contains("not 0"));
    assert!(problem(hook("  turn-end:\n    command: x\n    timeout: 301\n")).contains("at most 300"));
    assert!(problem(hook("  turn-end:\n    command: x\n    cmd: y\n")).contains("cmd"));
    assert_eq!(
        hook("  turn-end:\n    command: x\n    timeout: 300\n")
            .unwrap()
            .skill
            .hooks
            .turn_end
            .unwrap()
            .timeout,
        Duration::from_secs(300)
    );
    assert_eq!(
        hook("  turn-end:\n    command: x\n    timeout: 0.5\n")
            .unwrap()
            .skill
            .hooks
            .turn_end
            .unwrap()
            .timeout,
        Duration::from_millis(500)
    );

    let paths = |list: &str| parse(&format!("---\nname: n\ndescription: d\nprotected-paths: {list}\n---\n"));
    for bad in [
        "[\"/etc/passwd\"]",
        "[\"../outside\"]",
        "[\"a/[b\"]",
        "[\"\"]",
        "[\"~/x\"]",
    ] {
        assert!(
            matches!(paths(bad).unwrap_err(), SkillFileError::ProtectedPath { .. }),
            "{bad}"
        );
    }
    assert!(matches!(paths("notes/index.md").unwrap_err(), SkillFileError::Yaml(_)));
    assert_eq!(
        paths("[\"./notes/*.md\", \"a/**\"]").unwrap().skill.protected_paths,
        vec!["notes/*.md".to_owned(), "a/**".to_owned()]
    );
}

#[test]
fn discovery_prefers_earlier_folders_and_reports_invalid_files() {
    let root = tempfile::tempdir().unwrap();
    let ws = root.path().join("ws-skills");
    let home = root.path().join("home-skills");
    write_skill(&ws, "notes", &md("notes", "workspace notes"));
    write_skill(&home, "notes", &md("notes", "global notes"));
    write_skill(&home, "calendar", &md("calendar", "global calendar"));
    let broken = write_skill(&ws, "broken", "no frontmatter here");
    let twin = write_skill(&ws, "zz-notes-copy", &md("notes", "a second notes skill"));
    write_skill(&ws, ".hidden", &md("hidden", "never listed"));
    std::fs::create_dir_all(ws.join("empty-folder")).unwrap();
    std::fs::write(ws.join("SKILL.md"), md("top", "not one level down")).unwrap();

    let (skills, warnings) = SkillFiles::discover(&[ws.clone(), home.clone(), root.path().join("missing")]);
    let listed: Vec<(&str, &str)> = skills
        .iter()
        .map(|s| (s.name.as_str(), s.description.as_str()))
        .collect();
    assert_eq!(
        listed,
        vec![("calendar", "global calendar"), ("notes", "workspace notes")]
    );
    assert_eq!(skills[1].dir, ws.join("notes"));
    let reported: Vec<(PathBuf, bool)> = warnings.iter().map(|w| (w.file.clone(), w.skipped)).collect();
    assert_eq!(reported, vec![(broken, true), (twin, true)]);
    assert!(warnings[0].to_string().contains("no frontmatter"), "{}", warnings[0]);
    assert!(warnings[1].problem.contains("already used"), "{}", warnings[1]);
}

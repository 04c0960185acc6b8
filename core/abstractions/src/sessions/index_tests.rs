#![allow(clippy::unwrap_used)]

use super::*;
use pretty_assertions::assert_eq;

fn chain(index: &mut SessionIndex, ids: &[&str]) {
    let mut parent = None;
    for id in ids {
        index.push(id, parent, EntryTag::Message, Some(RoleTag::User));
        parent = Some(*id);
    }
}

#[test]
fn ids_parents_and_paths() {
    let mut index = SessionIndex::new();
    chain(&mut index, &["aaaaaaaa", "bbbbbbbb", "cccccccc"]);
    // A fork from the first entry, with a long id and a short one.
    index.push(
        "0199a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b",
        Some("aaaaaaaa"),
        EntryTag::Label,
        None,
    );
    index.push("x", Some("0199a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b"), EntryTag::Other, None);
    index.finish();

    assert_eq!(index.len(), 5);
    assert_eq!(index.last(), Some(4));
    assert_eq!(index.id(3), "0199a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b");
    assert_eq!(index.id(4), "x");
    assert_eq!(index.id(9), "");
    assert_eq!(index.position("cccccccc"), Some(2));
    assert_eq!(index.position("x"), Some(4));
    assert_eq!(index.position("nope"), None);
    assert_eq!(
        index.meta(1),
        Some(EntryMeta {
            tag: EntryTag::Message,
            role: Some(RoleTag::User),
            parent: Some(0)
        })
    );
    assert_eq!(index.meta(0).unwrap().parent, None);
    assert_eq!(index.path_to(2), vec![0, 1, 2]);
    assert_eq!(index.path_to(4), vec![0, 3, 4]);
    assert_eq!(index.path_to(99), Vec::<EntryPos>::new());
    assert_eq!(index.children(0).collect::<Vec<_>>(), vec![1, 3]);
    assert_eq!(index.positions_of(EntryTag::Label).collect::<Vec<_>>(), vec![3]);
}

#[test]
fn forward_parents_are_linked_by_finish_and_missing_ones_make_roots() {
    let mut index = SessionIndex::new();
    index.push("child", Some("parent"), EntryTag::Message, None);
    index.push("orphan", Some("gone"), EntryTag::Message, None);
    index.push("parent", None, EntryTag::Message, None);
    assert_eq!(index.parent(0), None);
    index.finish();
    assert_eq!(index.parent(0), Some(2));
    assert_eq!(index.parent(1), None);
    assert_eq!(index.path_to(0), vec![2, 0]);
}

#[test]
fn a_cycle_in_a_broken_file_ends_the_walk() {
    let mut index = SessionIndex::new();
    index.push("a", Some("b"), EntryTag::Message, None);
    index.push("b", Some("a"), EntryTag::Message, None);
    index.finish();
    assert!(index.path_to(1).len() <= 3);
}

#[test]
fn with_duplicate_ids_the_later_entry_wins_a_lookup() {
    let mut index = SessionIndex::with_capacity(4);
    index.push("dup00000", None, EntryTag::Message, None);
    index.push("child000", Some("dup00000"), EntryTag::Message, None);
    index.push("dup00000", None, EntryTag::Custom, None);
    assert_eq!(index.position("dup00000"), Some(2));
    assert_eq!(index.parent(1), Some(0));
}

#[test]
fn tags_from_names_and_entries() {
    for (name, tag) in [
        ("message", EntryTag::Message),
        ("model_change", EntryTag::ModelChange),
        ("thinking_level_change", EntryTag::ThinkingLevelChange),
        ("compaction", EntryTag::Compaction),
        ("branch_summary", EntryTag::BranchSummary),
        ("custom", EntryTag::Custom),
        ("custom_message", EntryTag::CustomMessage),
        ("label", EntryTag::Label),
        ("session_info", EntryTag::SessionInfo),
        ("usage", EntryTag::Other),
    ] {
        assert_eq!(EntryTag::from_type_name(name.as_bytes()), tag);
    }
    assert_eq!(RoleTag::from_role_name(b"hookMessage"), RoleTag::Custom);
    assert_eq!(RoleTag::from_role_name(b"system"), RoleTag::Other);
    let unknown = EntryKind::Unknown {
        entry_type: "message".into(),
        raw: serde_json::json!({}),
    };
    assert_eq!(EntryTag::of(&unknown), EntryTag::Message);
    assert_eq!(RoleTag::of_entry(&unknown), Some(RoleTag::Other));
    assert_eq!(RoleTag::of_entry(&EntryKind::SessionInfo { name: None }), None);
}

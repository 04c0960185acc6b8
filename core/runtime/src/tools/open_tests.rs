#![allow(clippy::unwrap_used)]

use super::*;
use std::io::{Read, Write};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

/// A workspace (the boundary's one writable folder) and a secret beside it.
struct Place {
    _dir: tempfile::TempDir,
    ws: PathBuf,
    outside: PathBuf,
    boundary: FileBoundary,
}

const SECRET: &str = "outside-secret";

fn place() -> Place {
    let dir = tempfile::tempdir().unwrap();
    let root = std::fs::canonicalize(dir.path()).unwrap();
    let (ws, outside) = (root.join("ws"), root.join("outside"));
    std::fs::create_dir_all(ws.join("sub")).unwrap();
    std::fs::create_dir_all(&outside).unwrap();
    std::fs::write(outside.join("f"), SECRET).unwrap();
    std::fs::write(ws.join("f"), "mine").unwrap();
    std::fs::write(ws.join("sub/f"), "mine too").unwrap();
    let boundary = FileBoundary {
        write: vec![ws.clone()],
        ..FileBoundary::default()
    };
    Place {
        _dir: dir,
        ws,
        outside,
        boundary,
    }
}

fn read(file: Result<File, ToolError>) -> Result<String, String> {
    let mut text = String::new();
    file.map_err(|e| e.to_string())?.read_to_string(&mut text).unwrap();
    Ok(text)
}

#[test]
fn files_and_links_inside_open_and_links_out_are_refused() {
    let p = place();
    let b = Some(&p.boundary);
    assert_eq!(
        read(open_within(b, &p.ws.join("f"), Access::Read, "f")),
        Ok("mine".into())
    );
    std::os::unix::fs::symlink("sub/f", p.ws.join("inner")).unwrap();
    assert_eq!(
        read(open_within(b, &p.ws.join("inner"), Access::Read, "inner")),
        Ok("mine too".into())
    );
    std::os::unix::fs::symlink(p.outside.join("f"), p.ws.join("out")).unwrap();
    let e = read(open_within(b, &p.ws.join("out"), Access::Read, "out")).unwrap_err();
    assert!(e.contains("outside what this chat's sandbox may read"), "{e}");
    let mut f = open_within(b, &p.ws.join("new/deep/g"), Access::Write, "new/deep/g").unwrap();
    f.write_all(b"made").unwrap();
    assert_eq!(std::fs::read_to_string(p.ws.join("new/deep/g")).unwrap(), "made");
    assert!(open_within(b, &p.outside.join("f"), Access::ReadWrite, "f").is_err());
}

#[test]
fn a_link_swapped_in_between_the_check_and_the_open_is_refused() {
    let p = place();
    let b = Some(&p.boundary);
    // The file itself becomes a link out after the check.
    check_reach(b, &p.ws.join("f"), false).unwrap();
    std::fs::remove_file(p.ws.join("f")).unwrap();
    std::os::unix::fs::symlink(p.outside.join("f"), p.ws.join("f")).unwrap();
    let e = read(open_pinned(&p.boundary, &p.ws.join("f"), Access::Read, "f")).unwrap_err();
    assert!(e.contains("resolves to"), "{e}");
    // Its folder becomes a link out after the check: nothing is written outside.
    check_reach(b, &p.ws.join("sub/f"), true).unwrap();
    std::fs::remove_dir_all(p.ws.join("sub")).unwrap();
    std::os::unix::fs::symlink(&p.outside, p.ws.join("sub")).unwrap();
    let e = open_pinned(&p.boundary, &p.ws.join("sub/f"), Access::ReadWrite, "sub/f").unwrap_err();
    assert!(e.to_string().contains("resolves to"), "{e}");
    assert_eq!(std::fs::read_to_string(p.outside.join("f")).unwrap(), SECRET);
    // Missing folders of a new file are not made through the swapped link, not even empty ones.
    check_reach(b, &p.ws.join("sub/new/g"), true).unwrap_err();
    let e = open_pinned(&p.boundary, &p.ws.join("sub/new/g"), Access::Write, "sub/new/g").unwrap_err();
    assert!(e.to_string().contains("denied"), "{e}");
    assert!(!p.outside.join("new").exists());
}

#[test]
fn a_link_swapped_back_and_forth_while_reading_never_yields_the_secret() {
    let p = place();
    let link = p.ws.join("racy");
    let stop = Arc::new(AtomicBool::new(false));
    let swapper = {
        let (stop, link, ws, outside) = (stop.clone(), link.clone(), p.ws.clone(), p.outside.clone());
        std::thread::spawn(move || {
            let tmp = ws.join("racy.tmp");
            while !stop.load(Ordering::Relaxed) {
                for target in [ws.join("f"), outside.join("f")] {
                    let _ = std::fs::remove_file(&tmp);
                    std::os::unix::fs::symlink(&target, &tmp).unwrap();
                    std::fs::rename(&tmp, &link).unwrap();
                }
            }
        })
    };
    let mut opened = 0;
    for _ in 0..3000 {
        if let Ok(text) = read(open_within(Some(&p.boundary), &link, Access::Read, "racy")) {
            assert_eq!(text, "mine");
            opened += 1;
        }
    }
    stop.store(true, Ordering::Relaxed);
    swapper.join().unwrap();
    assert!(opened > 0, "the link never opened while pointing inside");
}

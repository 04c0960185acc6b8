//! Where the pinned third-party test peers live: `.testdeps/` at the repository root, filled by
//! `./scripts/test.sh` (npm packages in `node_modules/`, Python packages in `venv/`).
//!
//! A test that needs a peer asks here and fails with the reason when the peer is missing, so a
//! test never skips silently.

use std::path::{Path, PathBuf};

/// The repository root (this crate lives in `tests/`).
pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// `.testdeps/<relative>`, or an error saying how to install it when it does not exist.
pub fn path(relative: &str) -> Result<PathBuf, String> {
    let p = repo_root().join(".testdeps").join(relative);
    if p.exists() {
        Ok(p)
    } else {
        Err(format!(
            "test peer missing: {} does not exist; run ./scripts/test.sh once (it installs the pinned peers)",
            p.display()
        ))
    }
}

/// The test venv's Python 3 (`.testdeps/venv/bin/python`), which has the packages pinned in
/// `.testdeps/requirements.txt` (`a2a-sdk`, `uvicorn`, `mcp`).
pub fn python() -> Result<PathBuf, String> {
    path("venv/bin/python")
}

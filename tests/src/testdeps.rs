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

/// `@modelcontextprotocol/server-everything`'s entry point (an MCP server for the MCP tests),
/// relative to `.testdeps/`.
pub const SERVER_EVERYTHING: &str = "node_modules/@modelcontextprotocol/server-everything/dist/index.js";

/// [`SERVER_EVERYTHING`] as a path; panics with how to install it when missing (a test that
/// needs it fails with the reason).
pub fn server_everything() -> PathBuf {
    path(SERVER_EVERYTHING).unwrap_or_else(|e| panic!("{e}"))
}

/// The test venv's Python 3 (`.testdeps/venv/bin/python`), which has the packages pinned in
/// `.testdeps/requirements.txt` (`a2a-sdk`, `uvicorn`, `mcp`).
pub fn python() -> Result<PathBuf, String> {
    path("venv/bin/python")
}

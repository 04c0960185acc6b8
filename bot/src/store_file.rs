//! Small JSON state files in `state_dir`: atomic writes, and a corrupt file set aside (never
//! overwritten) with a warning.

use serde::Serialize;
use serde::de::DeserializeOwned;
use std::io::Write;
use std::path::{Path, PathBuf};

/// Writes `bytes` to `path` atomically: a temp file in the same folder, fsync, rename, fsync of
/// the folder. A crash leaves either the old or the new file, never a torn one.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let dir = path.parent().unwrap_or_else(|| Path::new("."));
    std::fs::create_dir_all(dir)?;
    let mut tmp = tempfile::NamedTempFile::new_in(dir)?;
    tmp.write_all(bytes)?;
    tmp.as_file().sync_all()?;
    tmp.persist(path).map_err(|e| e.error)?;
    if let Ok(d) = std::fs::File::open(dir) {
        let _ = d.sync_all();
    }
    Ok(())
}

/// Writes `value` as pretty JSON, atomically.
pub fn save_json<T: Serialize>(path: &Path, value: &T) -> std::io::Result<()> {
    let bytes = serde_json::to_vec_pretty(value).map_err(std::io::Error::other)?;
    write_atomic(path, &bytes)
}

/// What [`load_json`] found.
#[derive(Debug)]
pub enum Loaded<T> {
    /// No file yet.
    Missing,
    /// The parsed file.
    Ok(T),
    /// The file did not parse; it was renamed to this path (nothing lost) and a warning logged.
    SetAside(PathBuf),
}

/// Where a corrupt `path` is set aside: `<path>.corrupt-<unix time>` (`-<n>` added when that
/// name is taken, so an earlier copy is never overwritten).
pub fn corrupt_path(path: &Path) -> PathBuf {
    let stamp = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    let first = PathBuf::from(format!("{}.corrupt-{stamp}", path.display()));
    std::iter::once(first.clone())
        .chain((1..100).map(|n| PathBuf::from(format!("{}-{n}", first.display()))))
        .find(|p| !p.exists())
        .unwrap_or(first)
}

/// Reads JSON from `path`. A file that does not parse is renamed to `<path>.corrupt-<unix time>`
/// and reported, never overwritten.
pub fn load_json<T: DeserializeOwned>(path: &Path) -> std::io::Result<Loaded<T>> {
    let bytes = match std::fs::read(path) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Loaded::Missing),
        Err(e) => return Err(e),
    };
    match serde_json::from_slice(&bytes) {
        Ok(v) => Ok(Loaded::Ok(v)),
        Err(e) => {
            let aside = corrupt_path(path);
            std::fs::rename(path, &aside)?;
            tracing::warn!(
                file = %path.display(),
                moved_to = %aside.display(),
                "state file is not valid JSON ({e}); set aside, starting empty"
            );
            Ok(Loaded::SetAside(aside))
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    #[test]
    fn corrupt_file_is_set_aside_not_overwritten() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("chat-settings.json");
        std::fs::write(&p, b"{ not json").unwrap();
        let Loaded::SetAside(aside) = load_json::<BTreeMap<String, String>>(&p).unwrap() else {
            panic!()
        };
        assert_eq!(std::fs::read(&aside).unwrap(), b"{ not json");
        assert!(!p.exists());
        save_json(&p, &BTreeMap::from([("a".to_owned(), "b".to_owned())])).unwrap();
        let Loaded::Ok(m) = load_json::<BTreeMap<String, String>>(&p).unwrap() else {
            panic!()
        };
        assert_eq!(m["a"], "b");
    }
}

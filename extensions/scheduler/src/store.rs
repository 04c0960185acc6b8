//! `<workspace>/.volcanic/scheduler/jobs.json`: read, and written atomically (temp file, fsync,
//! rename, fsync of the folder). A file that cannot be read as jobs is set aside, never
//! overwritten.

use crate::job::{JobsFile, SCHEMA_VERSION};
use std::io::Write;
use std::path::{Path, PathBuf};

/// The jobs file of a workspace.
pub fn jobs_path(workspace: &Path) -> PathBuf {
    workspace.join(".volcanic").join("scheduler").join("jobs.json")
}

/// What reading a jobs file found.
#[derive(Debug)]
pub enum Loaded {
    /// No file: no jobs.
    Missing,
    /// The jobs.
    Ok(JobsFile),
    /// Not readable as jobs (bad JSON, an unknown schema version): moved to `aside`.
    SetAside {
        /// Where the file now is.
        aside: PathBuf,
        /// What was wrong.
        reason: String,
    },
}

/// Errors reading or writing a jobs file.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// An I/O failure, with the file.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The failure.
        source: std::io::Error,
    },
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> StoreError + '_ {
    move |source| StoreError::Io {
        path: path.to_owned(),
        source,
    }
}

/// Reads the jobs file at `path`; a corrupt one is renamed to `jobs.json.corrupt-<UTC time>`.
pub fn load(path: &Path) -> Result<Loaded, StoreError> {
    let bytes = match std::fs::read(path) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Loaded::Missing),
        Err(e) => return Err(io(path)(e)),
    };
    let reason = match serde_json::from_slice::<JobsFile>(&bytes) {
        Ok(f) if f.version == SCHEMA_VERSION => return Ok(Loaded::Ok(f)),
        Ok(f) => format!(
            "schema version {} (this build reads {SCHEMA_VERSION}){}",
            f.version,
            if f.version > SCHEMA_VERSION {
                "; a newer Volcanic wrote it"
            } else {
                ""
            }
        ),
        Err(e) => format!("not valid jobs JSON: {e}"),
    };
    let stamp = chrono::Utc::now().format("%Y%m%dT%H%M%S%.3fZ");
    let mut aside = path.with_file_name(format!("jobs.json.corrupt-{stamp}"));
    let mut n = 1;
    while aside.exists() {
        n += 1;
        aside = path.with_file_name(format!("jobs.json.corrupt-{stamp}-{n}"));
    }
    std::fs::rename(path, &aside).map_err(io(path))?;
    Ok(Loaded::SetAside { aside, reason })
}

/// Writes `file` to `path` atomically and durably.
pub fn save(path: &Path, file: &JobsFile) -> Result<(), StoreError> {
    let dir = path.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir).map_err(io(dir))?;
    let bytes = serde_json::to_vec_pretty(file).map_err(|e| io(path)(std::io::Error::other(e)))?;
    let tmp = path.with_extension(format!("json.tmp-{}", std::process::id()));
    let written = (|| {
        let mut f = std::fs::File::create(&tmp)?;
        f.write_all(&bytes)?;
        f.sync_all()?;
        std::fs::rename(&tmp, path)?;
        std::fs::File::open(dir)?.sync_all()
    })();
    if written.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    written.map_err(io(path))
}

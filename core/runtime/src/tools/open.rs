//! Opening a tool's file inside the sandbox's boundary without a check-then-open race: the
//! folder is pinned by a descriptor (`O_PATH`) whose real path is read back from
//! `/proc/self/fd/<n>` and checked, and the file is opened by name inside that pinned folder with
//! `O_NOFOLLOW`, so a symbolic link (or a folder) swapped in after [`check_reach`] cannot lead
//! out. A symbolic link that is legitimately there is followed by hand and its target checked
//! the same way; a regular file with other hard links is refused after opening (`fstat`).

use super::io_error;
use super::paths::check_reach;
use crate::skill_hooks::normalize;
use nix::libc;
use std::ffi::OsStr;
use std::fs::{File, OpenOptions};
use std::os::fd::AsRawFd;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use volcanic_abstractions::extensions::ExtensionContext;
use volcanic_abstractions::processes::FileBoundary;
use volcanic_abstractions::tools::ToolError;

/// Symbolic links followed by hand before giving up (the kernel's own limit is 40).
const MAX_LINKS: usize = 16;

/// How a tool opens its file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    /// Read only.
    Read,
    /// Write, created (with its missing folders) when absent; not truncated (the caller does,
    /// through the descriptor).
    Write,
    /// Read and write an existing file.
    ReadWrite,
}

impl Access {
    fn writes(self) -> bool {
        self != Access::Read
    }

    fn options(self) -> OpenOptions {
        let mut o = OpenOptions::new();
        match self {
            Access::Read => o.read(true),
            Access::Write => o.write(true).create(true),
            Access::ReadWrite => o.read(true).write(true),
        };
        o
    }
}

/// Opens `path` (absolute) for `access`, refusing what lies outside `boundary` at the moment of
/// opening (`None`: no boundary, a plain open). `shown` is the path as the model wrote it, for
/// error messages. Errors: the refusal (what was refused and why) or the I/O error in words.
pub fn open_within(
    boundary: Option<&FileBoundary>,
    path: &Path,
    access: Access,
    shown: &str,
) -> Result<File, ToolError> {
    check_reach(boundary, path, access.writes())?;
    let Some(boundary) = boundary else {
        if access == Access::Write
            && let Some(parent) = path.parent()
        {
            std::fs::create_dir_all(parent).map_err(|e| io_error("write", shown, &e))?;
        }
        return access
            .options()
            .open(path)
            .map_err(|e| io_error(verb(access), shown, &e));
    };
    open_pinned(boundary, path, access, shown)
}

/// The tool argument `path` (as the model wrote it) resolved against the session's working
/// directory ([`resolve_path`](super::resolve_path)) and opened for `access` within the
/// session's file boundary ([`open_within`]).
pub(crate) fn open_argument(ctx: &dyn ExtensionContext, path: &str, access: Access) -> Result<File, ToolError> {
    let absolute = super::resolve_path(&ctx.cwd(), path);
    open_within(ctx.file_boundary().as_ref(), &absolute, access, path)
}

/// Everything in `file`, from its start.
pub async fn read_to_end(file: File) -> std::io::Result<Vec<u8>> {
    use tokio::io::AsyncReadExt;
    let mut bytes = Vec::new();
    tokio::fs::File::from_std(file).read_to_end(&mut bytes).await?;
    Ok(bytes)
}

/// Replaces what `file` holds with `content` (truncated through the descriptor, then written
/// from the start).
pub async fn replace_content(file: File, content: &[u8]) -> std::io::Result<()> {
    use tokio::io::{AsyncSeekExt, AsyncWriteExt};
    let mut file = tokio::fs::File::from_std(file);
    file.set_len(0).await?;
    file.rewind().await?;
    file.write_all(content).await?;
    file.flush().await
}

/// The opening half of [`open_within`] (after its check), split out so a test can swap a link
/// in between.
pub(crate) fn open_pinned(
    boundary: &FileBoundary,
    path: &Path,
    access: Access,
    shown: &str,
) -> Result<File, ToolError> {
    let refused = |why: String| {
        ToolError::msg(format!(
            "{} is outside what this chat's sandbox may {}: {why} (docs/sandbox.md)",
            path.display(),
            if access.writes() { "write" } else { "read" }
        ))
    };
    let mut target = path.to_owned();
    for _ in 0..MAX_LINKS {
        let (Some(parent), Some(name)) = (target.parent(), target.file_name()) else {
            return Err(refused("it is not a file".into()));
        };
        let may_create = |real: &Path| boundary.allows(real, true);
        let create = (access == Access::Write).then_some(&may_create as &dyn Fn(&Path) -> bool);
        let folder = pin_folder(parent, create).map_err(|e| io_error(verb(access), shown, &e))?;
        let real_folder = std::fs::read_link(fd_path(&folder)).map_err(|e| io_error(verb(access), shown, &e))?;
        let real = real_folder.join(name);
        if !boundary.allows(&real, access.writes()) {
            return Err(refused(format!("it resolves to {}", real.display())));
        }
        let mut options = access.options();
        options.custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC);
        match options.open(fd_path(&folder).join(name)) {
            Ok(file) => return checked(file, &real, refused),
            // A symbolic link: follow it by hand from the pinned folder, checking its target.
            Err(e) if e.raw_os_error() == Some(libc::ELOOP) => {
                let link =
                    std::fs::read_link(fd_path(&folder).join(name)).map_err(|e| io_error(verb(access), shown, &e))?;
                target = normalize(&real_folder.join(link));
            }
            Err(e) => return Err(io_error(verb(access), shown, &e)),
        }
    }
    Err(refused("too many symbolic links".into()))
}

/// `file` at its real path `real`, unless it is a regular file with other hard links.
fn checked(file: File, real: &Path, refused: impl Fn(String) -> ToolError) -> Result<File, ToolError> {
    let meta = file
        .metadata()
        .map_err(|e| refused(format!("cannot inspect {}: {e}", real.display())))?;
    if meta.is_file() && meta.nlink() > 1 {
        return Err(refused("the file has other hard links".into()));
    }
    Ok(file)
}

/// An `O_PATH` descriptor of the folder `dir` (symbolic links in it followed: the caller checks
/// where it ended up). With `create`, missing folders are made one by one inside the pinned
/// existing one, never through a link, and only where `create` allows the pinned folder's real
/// path (nothing is made outside the boundary, even empty).
fn pin_folder(dir: &Path, create: Option<&dyn Fn(&Path) -> bool>) -> std::io::Result<File> {
    let open = |p: &Path, flags: libc::c_int| {
        OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_PATH | libc::O_DIRECTORY | libc::O_CLOEXEC | flags)
            .open(p)
    };
    let Some(may_create) = create else {
        return open(dir, 0);
    };
    let mut existing = dir;
    let mut missing: Vec<&OsStr> = Vec::new();
    let mut folder = loop {
        match open(existing, 0) {
            Ok(f) => break f,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => match (existing.parent(), existing.file_name()) {
                (Some(parent), Some(name)) => {
                    missing.push(name);
                    existing = parent;
                }
                _ => return Err(e),
            },
            Err(e) => return Err(e),
        }
    };
    for name in missing.into_iter().rev() {
        let real = std::fs::read_link(fd_path(&folder))?;
        if !may_create(&real.join(name)) {
            return Err(std::io::Error::new(
                std::io::ErrorKind::PermissionDenied,
                format!("{} is outside the sandbox's boundary", real.display()),
            ));
        }
        let inside = fd_path(&folder).join(name);
        match std::fs::create_dir(&inside) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
            Err(e) => return Err(e),
        }
        folder = open(&inside, libc::O_NOFOLLOW)?;
    }
    Ok(folder)
}

/// `/proc/self/fd/<n>` of `file`: opening a name beneath it looks the name up in that very folder.
fn fd_path(file: &File) -> PathBuf {
    PathBuf::from(format!("/proc/self/fd/{}", file.as_raw_fd()))
}

fn verb(access: Access) -> &'static str {
    match access {
        Access::Read => "read",
        Access::Write | Access::ReadWrite => "write",
    }
}

#[cfg(test)]
#[path = "open_tests.rs"]
mod tests;

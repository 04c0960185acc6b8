//! Where a chat's received files go: `inbox/` of its workspace, under the sender's file name
//! (sanitised) or one made from the kind and the local time, never replacing a file.

use crate::telegram::inbound::update::{InMedia, MediaKind};
use chrono::TimeZone;
use std::path::{Path, PathBuf};
use tokio::io::AsyncWriteExt;

/// Longest file name kept in `inbox/` (bytes).
const MAX_NAME_BYTES: usize = 200;

/// The name a received file gets in `inbox/` (before making it unique): the sender's file name,
/// sanitised, or `<kind>-<local date and time>.<ext>`; a voice note is always `voice-<date>.ogg`,
/// a video note `video-note-<date>.mp4` (neither has a name of its own).
pub(crate) fn file_name(media: &InMedia, date: i64, tz: chrono_tz::Tz, image_type: Option<&str>) -> String {
    let given = match media.kind {
        MediaKind::Photo | MediaKind::Voice | MediaKind::VideoNote => None,
        MediaKind::Document | MediaKind::Audio | MediaKind::Video => media.file_name.as_deref().and_then(sanitize),
    };
    if let Some(name) = given {
        return name;
    }
    let stamp = tz
        .timestamp_opt(date, 0)
        .single()
        .map_or_else(|| date.to_string(), |t| t.format("%Y-%m-%d-%H%M%S").to_string());
    let mime = image_type.or(media.mime_type.as_deref());
    let (prefix, ext) = match media.kind {
        MediaKind::Photo => ("photo", extension(mime).unwrap_or("jpg")),
        MediaKind::Voice => ("voice", "ogg"),
        MediaKind::Audio => ("audio", extension(mime).unwrap_or("mp3")),
        MediaKind::Video => ("video", extension(mime).unwrap_or("mp4")),
        MediaKind::VideoNote => ("video-note", "mp4"),
        MediaKind::Document => ("file", extension(mime).unwrap_or("bin")),
    };
    format!("{prefix}-{stamp}.{ext}")
}

/// The usual extension of a MIME type, for the common ones.
fn extension(mime: Option<&str>) -> Option<&'static str> {
    Some(match mime? {
        "image/jpeg" => "jpg",
        "image/png" => "png",
        "image/gif" => "gif",
        "image/webp" => "webp",
        "audio/ogg" => "ogg",
        "audio/mpeg" => "mp3",
        "audio/mp4" | "audio/x-m4a" => "m4a",
        "video/mp4" => "mp4",
        "video/quicktime" => "mov",
        "application/pdf" => "pdf",
        "application/zip" => "zip",
        "text/plain" => "txt",
        _ => return None,
    })
}

/// A file name safe to create in `inbox/`: no `/` or `\` or control characters (each becomes
/// `_`), no leading dots, dashes or spaces, at most [`MAX_NAME_BYTES`] (the extension kept).
/// `None` when nothing is left.
pub fn sanitize(name: &str) -> Option<String> {
    let cleaned: String = name
        .chars()
        .map(|c| {
            if matches!(c, '/' | '\\') || c.is_control() {
                '_'
            } else {
                c
            }
        })
        .collect();
    let cleaned = cleaned.trim_start_matches(['.', '-', ' ']).trim_end();
    if cleaned.is_empty() {
        return None;
    }
    if cleaned.len() <= MAX_NAME_BYTES {
        return Some(cleaned.to_owned());
    }
    let (stem, ext) = match cleaned.rsplit_once('.') {
        Some((stem, ext)) if !stem.is_empty() && ext.len() <= 16 => (stem, format!(".{ext}")),
        _ => (cleaned, String::new()),
    };
    let mut keep = MAX_NAME_BYTES - ext.len();
    while !stem.is_char_boundary(keep) {
        keep -= 1;
    }
    Some(format!("{}{ext}", &stem[..keep]))
}

/// `name` with `-n` before its extension: `report.pdf` → `report-2.pdf`.
fn numbered(name: &str, n: u32) -> String {
    match name.rsplit_once('.') {
        Some((stem, ext)) if !stem.is_empty() && !ext.is_empty() => format!("{stem}-{n}.{ext}"),
        _ => format!("{name}-{n}"),
    }
}

/// Claims `len` bytes for `f` before anything is written, so a full disk fails at once (ENOSPC,
/// waited out as a [shortage](crate::telegram::inbound::shortage)) rather than half-way through
/// the file. A file system that cannot reserve (or an empty file) is just written.
fn reserve(f: &tokio::fs::File, len: usize) -> std::io::Result<()> {
    use nix::errno::Errno;
    let Ok(len) = i64::try_from(len) else { return Ok(()) };
    match nix::fcntl::posix_fallocate(f, 0, len) {
        Err(e @ (Errno::ENOSPC | Errno::EDQUOT)) => Err(std::io::Error::from(e)),
        Ok(()) | Err(_) => Ok(()),
    }
}

/// Writes `bytes` to a new file in `dir` named `name`, or `name` numbered when that exists;
/// never replaces a file. Returns its path.
pub(crate) async fn save_unique(dir: &Path, name: &str, bytes: &[u8]) -> std::io::Result<PathBuf> {
    for n in 1..=1000 {
        let candidate = if n == 1 { name.to_owned() } else { numbered(name, n) };
        let path = dir.join(&candidate);
        let opened = tokio::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&path)
            .await;
        match opened {
            Ok(mut f) => {
                let written = match reserve(&f, bytes.len()) {
                    Ok(()) => f.write_all(bytes).await.and(f.flush().await),
                    Err(e) => Err(e),
                };
                if let Err(e) = written {
                    // Nothing half-written stays: the retry saves the file anew under its name.
                    let _ = tokio::fs::remove_file(&path).await;
                    return Err(e);
                }
                return Ok(path);
            }
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
            Err(e) => return Err(e),
        }
    }
    Err(std::io::Error::other(format!("too many files named like {name}")))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    fn media(kind: MediaKind, name: Option<&str>, mime: Option<&str>) -> InMedia {
        InMedia {
            kind,
            file_id: "f".into(),
            file_size: None,
            file_name: name.map(str::to_owned),
            mime_type: mime.map(str::to_owned),
            duration: None,
        }
    }

    #[test]
    fn names_are_sanitised() {
        let cases = [
            ("report.pdf", Some("report.pdf")),
            ("../../etc/passwd", Some("_.._etc_passwd")),
            (".bashrc", Some("bashrc")),
            ("-rf", Some("rf")),
            ("a\\b/c\nd.txt", Some("a_b_c_d.txt")),
            ("...", None),
            ("  ", None),
            ("Отчёт 2026.docx", Some("Отчёт 2026.docx")),
        ];
        for (input, want) in cases {
            assert_eq!(sanitize(input).as_deref(), want, "{input:?}");
        }
        let long = format!("{}.pdf", "é".repeat(150));
        let short = sanitize(&long).unwrap();
        assert!(short.len() <= MAX_NAME_BYTES && short.ends_with(".pdf"), "{short}");
    }

    #[test]
    fn generated_names_carry_the_local_date() {
        let date = 1_767_225_600; // 2026-01-01 00:00 UTC
        let berlin = chrono_tz::Europe::Berlin;
        let voice = media(MediaKind::Voice, None, Some("audio/ogg"));
        assert_eq!(file_name(&voice, date, berlin, None), "voice-2026-01-01-010000.ogg");
        let photo = media(MediaKind::Photo, None, None);
        assert_eq!(
            file_name(&photo, date, chrono_tz::UTC, Some("image/png")),
            "photo-2026-01-01-000000.png"
        );
        let doc = media(MediaKind::Document, Some("notes.txt"), Some("text/plain"));
        assert_eq!(file_name(&doc, date, berlin, None), "notes.txt");
        let nameless = media(MediaKind::Document, None, Some("application/pdf"));
        assert_eq!(file_name(&nameless, date, berlin, None), "file-2026-01-01-010000.pdf");
    }

    #[tokio::test]
    async fn saving_never_replaces_a_file() {
        let dir = tempfile::tempdir().unwrap();
        let a = save_unique(dir.path(), "report.pdf", b"one").await.unwrap();
        let b = save_unique(dir.path(), "report.pdf", b"two").await.unwrap();
        let c = save_unique(dir.path(), "README", b"three").await.unwrap();
        let d = save_unique(dir.path(), "README", b"four").await.unwrap();
        let names: Vec<String> = [&a, &b, &c, &d]
            .iter()
            .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
            .collect();
        assert_eq!(names, ["report.pdf", "report-2.pdf", "README", "README-2"]);
        assert_eq!(std::fs::read(&a).unwrap(), b"one");
        assert_eq!(std::fs::read(&b).unwrap(), b"two");
    }
}

//! The `bash` tool's output buffer: keeps the whole output in memory while it is small, then
//! spills it to a temp file (`<temp dir>/volcanic-bash-<random>.log`, mode 0600) and keeps only a
//! rolling tail, so a command printing gigabytes costs bounded memory.

use super::truncate::{Truncation, truncate_tail};
use std::path::PathBuf;
use tokio::io::AsyncWriteExt;

/// Collects a command's merged stdout and stderr.
pub(crate) struct OutputAccumulator {
    /// Every byte until the output spills, then the last `2 × spill_bytes` bytes or so.
    buffer: Vec<u8>,
    /// Set once the output spilled (or was saved at the end because it was truncated).
    file: Option<(PathBuf, tokio::fs::File)>,
    /// Creating or writing the temp file failed: stop trying, keep the tail only.
    file_failed: bool,
    /// Whether `buffer` lost its beginning.
    spilled: bool,
    total_bytes: usize,
    newlines: usize,
    last_byte: Option<u8>,
    max_lines: usize,
    max_bytes: usize,
}

impl OutputAccumulator {
    /// An empty buffer truncating to `max_lines` lines / `max_bytes` bytes.
    pub(crate) fn new(max_lines: usize, max_bytes: usize) -> Self {
        OutputAccumulator {
            buffer: Vec::new(),
            file: None,
            file_failed: false,
            spilled: false,
            total_bytes: 0,
            newlines: 0,
            last_byte: None,
            max_lines,
            max_bytes,
        }
    }

    fn spill_bytes(&self) -> usize {
        self.max_bytes.saturating_mul(2).max(1)
    }

    /// Appends a chunk of output.
    pub(crate) async fn push(&mut self, chunk: &[u8]) {
        if chunk.is_empty() {
            return;
        }
        self.total_bytes += chunk.len();
        self.newlines += memchr::memchr_iter(b'\n', chunk).count();
        self.last_byte = chunk.last().copied();
        if self.file.is_some() {
            self.write_to_file(chunk).await;
        }
        self.buffer.extend_from_slice(chunk);
        if self.buffer.len() > self.spill_bytes() && self.file.is_none() && !self.file_failed {
            self.open_file().await;
            let all = std::mem::take(&mut self.buffer);
            self.write_to_file(&all).await;
            self.buffer = all;
        }
        if self.buffer.len() > 2 * self.spill_bytes() {
            let cut = self.buffer.len() - self.spill_bytes();
            self.buffer.drain(..cut);
            self.spilled = true;
        }
    }

    /// The current tail, truncated (totals count the whole output; one trailing newline is not
    /// counted as an extra line).
    pub(crate) fn snapshot(&self) -> Truncation {
        let mut start = 0;
        if self.spilled {
            while start < self.buffer.len() && (self.buffer[start] & 0xC0) == 0x80 {
                start += 1;
            }
        }
        let text = String::from_utf8_lossy(&self.buffer[start..]);
        let text = text.strip_suffix('\n').unwrap_or(&text);
        let mut truncation = truncate_tail(text, self.max_lines, self.max_bytes);
        if self.spilled {
            let trailing = usize::from(self.last_byte == Some(b'\n'));
            truncation.total_bytes = self.total_bytes - trailing;
            truncation.total_lines = self.newlines - trailing + 1;
        }
        truncation
    }

    /// The final truncation and, when the output was truncated, the file holding all of it.
    pub(crate) async fn finish(mut self) -> (Truncation, Option<PathBuf>) {
        let truncation = self.snapshot();
        if !truncation.truncated {
            if let Some((path, _)) = self.file.take() {
                let _ = tokio::fs::remove_file(path).await;
            }
            return (truncation, None);
        }
        if self.file.is_none() && !self.file_failed && !self.spilled {
            self.open_file().await;
            let all = std::mem::take(&mut self.buffer);
            self.write_to_file(&all).await;
        }
        let path = match self.file.take() {
            Some((path, mut file)) if !self.file_failed => match file.flush().await {
                Ok(()) => Some(path),
                Err(error) => {
                    tracing::warn!(%error, path = %path.display(), "could not save the full bash output");
                    None
                }
            },
            Some(_) | None => None,
        };
        (truncation, path)
    }

    async fn open_file(&mut self) {
        let path = std::env::temp_dir().join(format!("volcanic-bash-{}.log", uuid::Uuid::new_v4().simple()));
        let mut options = tokio::fs::OpenOptions::new();
        options.write(true).create_new(true);
        #[cfg(unix)]
        options.mode(0o600);
        match options.open(&path).await {
            Ok(file) => self.file = Some((path, file)),
            Err(error) => {
                tracing::warn!(%error, path = %path.display(), "could not create the bash output file");
                self.file_failed = true;
            }
        }
    }

    async fn write_to_file(&mut self, bytes: &[u8]) {
        let Some((path, file)) = self.file.as_mut() else {
            return;
        };
        if let Err(error) = file.write_all(bytes).await {
            tracing::warn!(%error, path = %path.display(), "could not write the bash output file");
            self.file_failed = true;
        }
    }
}

//! `ChatChannel` on Telegram: the `send` tool's texts (rendered Markdown), files (sendDocument)
//! and photos (sendPhoto) into the chat or topic.

use crate::features::port::Target;
use crate::telegram::outbound::api::Tg;
use crate::telegram::outbound::render::markdown_chunks;
use async_trait::async_trait;
use std::os::fd::AsRawFd;
use std::sync::Arc;
use volcanic_abstractions::ui::{ChannelError, ChatChannel};

/// Bot API upload limit for files sent by bots (bytes).
pub const MAX_UPLOAD_BYTES: u64 = 50 * 1024 * 1024;

/// The channel of one chat (or topic).
#[derive(Debug)]
pub struct TelegramChannel {
    /// Outgoing API.
    pub tg: Arc<Tg>,
    /// Where things go.
    pub target: Target,
}

#[async_trait]
impl ChatChannel for TelegramChannel {
    async fn send_text(&self, text: &str) -> Result<(), ChannelError> {
        for chunk in markdown_chunks(text) {
            self.tg
                .send_html(self.target, &chunk.html, &chunk.source, None)
                .await
                .map_err(|e| ChannelError(format!("Telegram refused the message: {e}")))?;
        }
        Ok(())
    }

    async fn send_file(
        &self,
        file: std::fs::File,
        name: &str,
        caption: Option<&str>,
        as_photo: bool,
    ) -> Result<(), ChannelError> {
        let size = file
            .metadata()
            .map_err(|e| ChannelError(format!("cannot read {name}: {e}")))?
            .len();
        if size > MAX_UPLOAD_BYTES {
            return Err(ChannelError(format!(
                "{name} is {size} bytes; Telegram accepts at most {MAX_UPLOAD_BYTES} bytes from bots"
            )));
        }
        // The upload reads the open file through its descriptor (`/proc/self/fd/<n>` opens the
        // same inode, each retry from the start), never the path the tool was given: the file
        // checked is the file sent. `file` stays open until the upload is done.
        let through = std::path::PathBuf::from(format!("/proc/self/fd/{}", file.as_raw_fd()));
        let sent = self.tg.send_file(self.target, &through, name, caption, as_photo).await;
        drop(file);
        sent.map_err(|e| ChannelError(format!("Telegram refused the file: {e}")))
    }
}

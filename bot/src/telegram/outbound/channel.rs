//! `ChatChannel` on Telegram: the `send` tool's texts (rendered Markdown), files (sendDocument)
//! and photos (sendPhoto) into the chat or topic.

use crate::features::port::Target;
use crate::telegram::outbound::api::Tg;
use crate::telegram::outbound::render::markdown_chunks;
use async_trait::async_trait;
use std::path::Path;
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

    async fn send_file(&self, path: &Path, caption: Option<&str>, as_photo: bool) -> Result<(), ChannelError> {
        let size = std::fs::metadata(path)
            .map_err(|e| ChannelError(format!("cannot read {}: {e}", path.display())))?
            .len();
        if size > MAX_UPLOAD_BYTES {
            return Err(ChannelError(format!(
                "{} is {size} bytes; Telegram accepts at most {MAX_UPLOAD_BYTES} bytes from bots",
                path.display()
            )));
        }
        self.tg
            .send_file(self.target, path, caption, as_photo)
            .await
            .map_err(|e| ChannelError(format!("Telegram refused the file: {e}")))
    }
}

//! The delivery task's side of a group's answer preview ([`live::preview`](crate::telegram::outbound::live::preview)): sending and
//! editing it as the answer grows, turning it into the answer's first chunk, and deleting one
//! that has nothing more to show.

use super::Delivery;
use super::progress::progress_text;
use crate::telegram::inbound::journal::Answering;
use crate::telegram::outbound::api::{DraftSent, DraftText};
use crate::telegram::outbound::live::draft::{DraftStream, Shown};
use crate::telegram::outbound::live::preview::stop_button;
use crate::telegram::outbound::live::reaction::Outcome;
use crate::telegram::outbound::render::markdown_chunks;
use std::sync::atomic::Ordering;

/// The preview of the answer being written.
#[derive(Debug, Default)]
pub(super) struct Preview {
    /// Its message, once sent.
    id: Option<i32>,
    /// What it shows (HTML or the progress line), to skip edits that change nothing.
    shown: String,
    /// Who asked (the Stop button's owner), 0 when unknown.
    asker: i64,
}

impl Delivery {
    /// Shows what `stream` has now in the preview (sends it first if there is none yet).
    pub(super) async fn flush_preview(&self, stream: &mut DraftStream, preview: &mut Preview) {
        let shown = stream.shown(progress_text);
        let (text, key) = match &shown {
            // A group is not sent "Thinking…": the typing action says it.
            Shown::Thinking => {
                stream.sent(false);
                return;
            }
            Shown::Progress(line) => (DraftText::Plain(line), line.clone()),
            Shown::Text(chunk) => (
                DraftText::Html {
                    html: &chunk.html,
                    plain: &chunk.source,
                },
                chunk.html.clone(),
            ),
        };
        let with_text = matches!(shown, Shown::Text(_));
        if key != preview.shown {
            match preview.id {
                None => {
                    preview.asker = stream
                        .answers()
                        .ids
                        .first()
                        .and_then(|u| self.ledger.sender_of(*u))
                        .unwrap_or_default();
                    if let Some(id) = self.tg.send_preview(self.to, text, &stop_button(preview.asker)).await {
                        self.marks.set(self.to, id);
                        self.preview.store(i64::from(id), Ordering::SeqCst);
                        preview.id = Some(id);
                        preview.shown = key;
                    }
                }
                Some(id) => {
                    let stop = stop_button(preview.asker);
                    if self.tg.edit_preview(self.to, id, text, &stop).await == DraftSent::Shown {
                        preview.shown = key;
                    }
                }
            }
        }
        stream.sent(with_text);
    }

    /// Delivers the answer `md` for `of` with the preview `id` as its first chunk, then the
    /// rest; finishes `of`. If the preview cannot become the chunk, the chunk is sent as a
    /// message and the preview deleted.
    pub(super) async fn answer_into_preview(&self, md: &str, of: &Answering, id: i32) {
        self.preview.store(0, Ordering::SeqCst);
        let mut chunks = markdown_chunks(md).into_iter();
        let Some(first) = chunks.next() else {
            self.drop_preview(id).await;
            self.finish(of, Outcome::Answered);
            return;
        };
        let failed = self.failed_sends();
        // Before the edit is journaled: after a crash the next start finishes the edit (the
        // journal counts a chunk on its way as delivered) instead of deleting the preview.
        self.marks.set_final(self.to, id, &first.html, &first.source);
        let report = self.reporter(of, 0);
        match self
            .tg
            .edit_into_answer(self.to, id, &first.html, &first.source, &report)
            .await
        {
            Ok(()) => self.marks.clear(self.to),
            Err(e) => {
                tracing::warn!(
                    chat = self.to.chat_id,
                    "the preview cannot become the answer ({e}): sent anew"
                );
                // Deleted, not finished, after a crash from here on.
                self.marks.set(self.to, id);
                self.send_chunk(&first, 0, of).await;
                self.drop_preview(id).await;
            }
        }
        self.send_chunks(chunks.enumerate().map(|(n, c)| (n + 1, c)), of).await;
        self.finish(of, self.outcome_since(failed));
    }

    /// Deletes the preview `id` (nothing of the answer is left to show in it).
    pub(super) async fn drop_preview(&self, id: i32) {
        self.preview.store(0, Ordering::SeqCst);
        self.tg.delete(self.to, id).await;
        self.marks.clear(self.to);
    }
}

impl Preview {
    /// Its message id, if it was sent; the preview is over (taken) either way.
    pub(super) fn take(&mut self) -> Option<i32> {
        std::mem::take(self).id
    }
}

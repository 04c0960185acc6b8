//! Turning accepted messages into one prompt for the chat's session, with their media.
//!
//! A photo (its largest size) becomes image content when the session's model takes images;
//! otherwise, or when it is over [`IMAGE_LIMIT`], it is saved under the workspace's `inbox/`
//! and the user is told. Documents, voice notes, audio and video are saved under `inbox/` (the
//! sender's file name, sanitised and made unique; a voice note as `voice-<date>.ogg`) and named in
//! the prompt, e.g. `[file saved: inbox/report.pdf (12.3 KB)]`. Nothing over the Bot API's
//! [`DOWNLOAD_LIMIT`] is downloaded: the user is told instead. A caption is the prompt text.
//!
//! Every part's `update_id` is tracked by the conversation's [`Ledger`](crate::telegram::outbound::ledger::Ledger) (journal
//! progress, message by message). Prompts of one conversation reach the session in arrival order even
//! though their downloads run in parallel (see [`merge`](crate::telegram::inbound::merge)): each waits for its turn,
//! holds it through `AgentSession::submit` (which returns once the prompt is queued or its run
//! started, after the session's `input` handlers), and passes it on before awaiting its run. A prompt left with nothing to say (every file refused, no text) is
//! not sent; its updates are done once the notices were delivered.

use crate::config::QueueMode;
use crate::features::port::Target;
use crate::telegram::TelegramHost;
use crate::telegram::conversation::conversations::{CLOSED_TRIES, Conversation, SessionUse};
use crate::telegram::conversation::inbox::{file_name, save_unique};
use crate::telegram::inbound::merge::{Part, Ticket};
use crate::telegram::inbound::shortage;
use crate::telegram::inbound::update::{InMedia, InMessage, MediaKind};
use crate::telegram::outbound::api::FetchError;
use crate::telegram::outbound::failures;
use crate::telegram::outbound::output::Output;
use crate::telegram::outbound::texts;
use crate::telegram::outbound::ui::Asker;
use crate::telegram::voice;
use base64::Engine;
use std::sync::Arc;
use volcanic_abstractions::messages::ImageContent;
use volcanic_abstractions::shortage::{Lack, lack, lack_of};
use volcanic_core::agent::{AgentSession, PromptInput, QueueMode as SessionQueue, SessionError, Submitted};

/// Largest file a bot may download from the Bot API (20 MB).
pub const DOWNLOAD_LIMIT: u64 = 20 * 1024 * 1024;

/// Largest image given to the model as image content (the `read` tool's limit, 5 MB).
pub const IMAGE_LIMIT: u64 = volcanic_core::tools::MAX_IMAGE_BYTES as u64;

/// Hands one prompt made of `parts` (one message, an album, or a split paste; the first part
/// gives the envelope) to their conversation's session, in its own task.
pub fn prompt(host: &Arc<TelegramHost>, parts: Vec<Part>) {
    let Some(first) = parts.first() else { return };
    let conversation = host.chats.conversation(Target {
        chat_id: first.message.chat_id,
        thread: first.message.thread,
    });
    // Taken here, in arrival order; the task may finish its downloads before earlier ones.
    let turn = conversation.intake.order.ticket();
    // Every log line of this prompt's handling and run carries the chat.
    let span = tracing::info_span!("chat", id = first.message.chat_id, topic = first.message.thread);
    tokio::spawn(tracing::Instrument::instrument(
        hand_over(host.clone(), conversation, parts, turn),
        span,
    ));
}

/// [`prompt`]'s task: opens the session, prepares the parts (downloads, envelope), waits for the
/// prompt's turn, submits it and settles its journal progress.
async fn hand_over(host: Arc<TelegramHost>, conversation: Arc<Conversation>, parts: Vec<Part>, mut turn: Ticket) {
    let ids: Vec<i64> = parts.iter().map(|p| p.update_id).collect();
    let session = match open_session(&host, &conversation).await {
        Some(Ok(s)) => s,
        // Shutdown while short of resources: unfinished in the journal, handled after a restart.
        None => return,
        Some(Err(e)) => {
            tracing::error!(
                chat = conversation.target.chat_id,
                "cannot open the chat's session: {e:#}"
            );
            turn.wait().await;
            conversation.output.notice_for(failures::open(&e), ids);
            return;
        }
    };
    let tz = session.time_zone().unwrap_or(host.config.default_time_zone);
    let takes_images = session.model().is_some_and(|m| m.takes_images());
    let ctx = Ctx {
        host: &host,
        output: &conversation.output,
        takes_images,
        tz,
    };
    // Shutdown while short of resources: unfinished in the journal, handled after a restart.
    let Some(prepared) = ctx.prepare(&parts).await else {
        return;
    };
    turn.wait().await;
    // A `/tz` sent just before this message has been applied by now.
    let tz = session.time_zone().unwrap_or(host.config.default_time_zone);
    if !prepared.notices.is_empty() {
        conversation.output.notice(prepared.notices.join("\n\n"));
    }
    let Some(first) = parts.first().filter(|_| !prepared.is_empty()) else {
        conversation.output.done(ids);
        return;
    };
    let input = PromptInput {
        text: texts::envelope(&first.message, &prepared.text, tz),
        images: prepared.images,
        queue: Some(match host.config.queue_mode {
            QueueMode::FollowUp => SessionQueue::FollowUp,
            QueueMode::Steer => SessionQueue::Steer,
        }),
    };
    // Before the hand-over: its `message_end` may come before `submit` returns. Questions
    // its run asks are for its sender (or an owner).
    let asker = Asker {
        id: first.message.from_id,
        name: first.message.from_name.clone(),
    };
    conversation.ledger.queue(&ids, &input.text, asker);
    // Its run (with traces on) is traced under its update.
    crate::ops::answers::bind(session.session_id(), first.update_id);
    // The prompt has its place (a run started, or it is queued) once `submit` returns,
    // however long the session's `input` handlers took; only then may the next prompt go.
    let submitted = submit(&host, &conversation, session, &input).await;
    drop(turn);
    // Shutdown while short of resources, or it closed the session: unfinished in the journal,
    // handled after a restart.
    let Some((session, submitted)) = submitted else { return };
    if submitted.is_ok() {
        conversation.output.resources_back();
    }
    settle(&conversation, &session, ids, submitted).await;
}

/// Hands `input` to `session`, a shortage waited out ([`shortage::retry`]). A session closed
/// under its use took nothing ([`SessionError::Closed`]): by the shutdown, the prompt stays
/// unfinished in the journal (`None`, handled after the restart); else a fresh session takes it.
/// Returns the session that answered and how.
async fn submit(
    host: &TelegramHost,
    conversation: &Arc<Conversation>,
    mut session: SessionUse,
    input: &PromptInput,
) -> Option<(SessionUse, Result<Submitted, SessionError>)> {
    for tried in 1..=CLOSED_TRIES {
        let submitted = shortage::retry(
            "handing a prompt to the chat's session",
            &host.shutdown,
            |e: &SessionError| lack_of(e),
            |lack| conversation.output.short_of(lack),
            || session.submit(input.clone()),
        )
        .await?;
        if !matches!(submitted, Err(SessionError::Closed)) {
            return Some((session, submitted));
        }
        if host.shutdown.is_cancelled() {
            tracing::info!(
                chat = conversation.target.chat_id,
                "the shutdown closed the chat's session before a prompt reached it: kept for the restart"
            );
            return None;
        }
        if tried == CLOSED_TRIES {
            return Some((session, submitted));
        }
        tracing::warn!(
            chat = conversation.target.chat_id,
            "the chat's session was closed under a prompt: handed to a fresh one"
        );
        session = match open_session(host, conversation).await? {
            Ok(fresh) => fresh,
            Err(e) => {
                tracing::error!(
                    chat = conversation.target.chat_id,
                    "cannot open the chat's session again: {e:#}"
                );
                return Some((session, submitted));
            }
        };
    }
    Some((session, Err(SessionError::Closed)))
}

/// The conversation's session; a failure for want of descriptors, memory or disk is waited out
/// and tried again ([`shortage`]), never told to the chat (a full disk once, as a notice).
/// `None`: shutdown came first. Taken until the prompt's run ends: not evicted meanwhile.
async fn open_session(host: &TelegramHost, conversation: &Arc<Conversation>) -> Option<anyhow::Result<SessionUse>> {
    shortage::retry(
        "opening the chat's session",
        &host.shutdown,
        shortage::lack_of_any,
        |lack| conversation.output.short_of(lack),
        || host.chats.session(conversation),
    )
    .await
}

/// Settles the journal progress of a submitted prompt (updates `ids`) by how it went: refused,
/// taken by a command or an extension, queued behind a run, or run.
async fn settle(
    conversation: &Conversation,
    session: &AgentSession,
    ids: Vec<i64>,
    submitted: Result<Submitted, SessionError>,
) {
    match submitted {
        Err(e) => {
            conversation.ledger.forget(&ids);
            conversation.output.notice_for(failures::session(&e), ids);
        }
        // A command or an extension took it: nothing reached the transcript.
        Ok(Submitted::Handled) => {
            conversation.ledger.forget(&ids);
            conversation.output.done(ids);
        }
        // The run in progress takes it; its events mark it.
        Ok(Submitted::Queued) => {}
        Ok(Submitted::Started(run)) => match run.finished().await {
            Err(e) => {
                conversation.ledger.forget(&ids);
                conversation.output.notice_for(failures::session(&e), ids);
            }
            // Still queued after its run: an `input` handler rewrote it, so no `message_end`
            // matched it.
            Ok(()) if session.is_idle() && conversation.ledger.forget(&ids) => conversation.output.done(ids),
            Ok(()) => {}
        },
    }
}

/// A prompt made ready: its text (file notes, then the parts' texts), images, and what to tell
/// the user first.
#[derive(Debug, Default)]
struct Prepared {
    text: String,
    images: Vec<ImageContent>,
    notices: Vec<String>,
}

impl Prepared {
    fn is_empty(&self) -> bool {
        self.text.trim().is_empty() && self.images.is_empty()
    }
}

/// What receiving files needs.
struct Ctx<'a> {
    host: &'a TelegramHost,
    /// Where a full disk is told, once.
    output: &'a Output,
    takes_images: bool,
    tz: chrono_tz::Tz,
}

/// What one file became.
#[derive(Debug)]
enum Received {
    /// Image content for the model.
    Image(ImageContent),
    /// Saved in the workspace, `inbox/<name>`.
    Saved { path: String, size: u64 },
    /// Not received; the user is told this.
    Refused(String),
}

impl Ctx<'_> {
    /// The prompt of `parts`; `None` when shutdown came while a file waited out a shortage.
    async fn prepare(&self, parts: &[Part]) -> Option<Prepared> {
        let mut out = Prepared::default();
        let mut notes = Vec::new();
        let mut unseen = Vec::new();
        for part in parts {
            let Some(media) = &part.message.media else { continue };
            if voice::answer::spoke(&part.message) {
                self.output.heard(part.update_id);
            }
            match self.receive(&part.message, media).await? {
                Received::Image(image) => out.images.push(image),
                Received::Refused(notice) => out.notices.push(notice),
                Received::Saved { path, size } => {
                    let detail = match media.kind {
                        MediaKind::Photo if !self.takes_images => {
                            unseen.push(path.clone());
                            Some("not shown: this model can't see images".to_owned())
                        }
                        MediaKind::Photo if size > IMAGE_LIMIT => {
                            out.notices.push(texts::image_too_large(&path, size, IMAGE_LIMIT));
                            Some("not shown: too large".to_owned())
                        }
                        MediaKind::Photo => Some("not shown: not an image format the model reads".to_owned()),
                        MediaKind::Voice | MediaKind::Audio | MediaKind::Video | MediaKind::VideoNote => {
                            media.duration.map(duration)
                        }
                        MediaKind::Document => None,
                    };
                    notes.push(texts::saved_note(noun(media.kind), &path, size, detail.as_deref()));
                    // Voice: the note's transcript follows its file's line.
                    if let Some(heard) = voice::inbound::hear(self.host, &part.message, media, &path).await {
                        notes.push(heard.line);
                        match heard.shown {
                            Ok(quote) => self.output.heard_as(quote),
                            Err(notice) => out.notices.push(notice),
                        }
                    }
                }
            }
        }
        if !unseen.is_empty() {
            out.notices.push(texts::cannot_see_images(&unseen));
        }
        let texts = parts.iter().map(|p| p.text.as_str()).filter(|t| !t.trim().is_empty());
        out.text = notes
            .iter()
            .map(String::as_str)
            .chain(texts)
            .collect::<Vec<_>>()
            .join("\n");
        Some(out)
    }

    /// Downloads one file and makes it image content or saves it; a shortage of descriptors,
    /// memory or disk is waited out ([`shortage::retry`]). `None`: shutdown came first.
    async fn receive(&self, m: &InMessage, media: &InMedia) -> Option<Received> {
        let label = media.file_name.clone().unwrap_or_else(|| noun(media.kind).to_owned());
        if let Some(size) = media.file_size
            && size > DOWNLOAD_LIMIT
        {
            return Some(Received::Refused(texts::file_too_large(
                &label,
                Some(size),
                DOWNLOAD_LIMIT,
            )));
        }
        let downloaded = shortage::retry(
            "downloading a received file",
            &self.host.shutdown,
            fetch_lack,
            |lack| self.output.short_of(lack),
            || self.host.tg.download(m.chat_id, &media.file_id, DOWNLOAD_LIMIT),
        )
        .await?;
        let bytes = match downloaded {
            Ok(b) => b,
            Err(FetchError::TooLarge { size }) => {
                return Some(Received::Refused(texts::file_too_large(&label, size, DOWNLOAD_LIMIT)));
            }
            Err(e) => {
                tracing::warn!(chat = m.chat_id, file = %label, "cannot download an inbound file: {e}");
                return Some(Received::Refused(texts::file_not_received(&label, &e.to_string())));
            }
        };
        let size = bytes.len() as u64;
        let image_type = volcanic_core::tools::image_mime_type(&bytes);
        if media.kind == MediaKind::Photo
            && self.takes_images
            && size <= IMAGE_LIMIT
            && let Some(mime) = image_type
        {
            return Some(Received::Image(ImageContent {
                data: base64::engine::general_purpose::STANDARD.encode(&bytes),
                mime_type: mime.to_owned(),
            }));
        }
        let name = file_name(media, m.date, self.tz, image_type);
        let saved = shortage::retry(
            "saving a received file",
            &self.host.shutdown,
            |e: &std::io::Error| lack(e),
            |lack| self.output.short_of(lack),
            || async {
                let inbox = self.host.chats.workspace(m.chat_id)?.join("inbox");
                tokio::fs::create_dir_all(&inbox).await?;
                save_unique(&inbox, &name, &bytes).await
            },
        )
        .await?;
        Some(match saved {
            Ok(file) => {
                tracing::info!(chat = m.chat_id, file = %file.display(), size, "saved an inbound file");
                let name = file
                    .file_name()
                    .map(|n| n.to_string_lossy().into_owned())
                    .unwrap_or(name);
                Received::Saved {
                    path: format!("inbox/{name}"),
                    size,
                }
            }
            Err(e) => {
                tracing::error!(chat = m.chat_id, file = %name, "cannot save an inbound file: {e}");
                Received::Refused(texts::file_not_received(
                    &label,
                    &format!("it could not be saved in the workspace ({e})"),
                ))
            }
        })
    }
}

/// The shortage a failed download met: through the request's sources (a `getFile` call), or in
/// the text the download's error kept.
fn fetch_lack(e: &FetchError) -> Option<Lack> {
    match e {
        FetchError::Api(request) => lack_of(request),
        FetchError::Download(_) | FetchError::TooLarge { .. } => lack_of(e),
    }
}

/// What the prompt calls a file of this kind.
fn noun(kind: MediaKind) -> &'static str {
    match kind {
        MediaKind::Photo => "photo",
        MediaKind::Document => "file",
        MediaKind::Voice => "voice note",
        MediaKind::Audio => "audio file",
        MediaKind::Video => "video",
        MediaKind::VideoNote => "video note",
    }
}

/// `m:ss`.
pub(crate) fn duration(secs: u64) -> String {
    format!("{}:{:02}", secs / 60, secs % 60)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn durations_read_as_minutes_and_seconds() {
        assert_eq!(duration(7), "0:07");
        assert_eq!(duration(125), "2:05");
    }
}

//! Context building: pi's `buildSessionContext` over the index, reading only what it needs.

use super::paths::iso_to_ms;
use volcanic_abstractions::messages::{CustomMessage, Message, SummaryMessage};
use volcanic_abstractions::model::ThinkingLevel;
use volcanic_abstractions::sessions::{
    CompactionEntry, EntryKind, EntryPos, EntryTag, RoleTag, SessionEntry, SessionIndex, SessionLog, SessionStoreError,
};

/// What the model sees of a session's current branch, and the settings the branch carries.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct SessionContext {
    /// The messages, ready for a provider call (after the transcript normaliser).
    pub messages: Vec<Message>,
    /// `(provider, model id)` of the last `model_change` or assistant message on the branch.
    pub model: Option<(String, String)>,
    /// The last `thinking_level_change` on the branch (`off` without one).
    pub thinking_level: ThinkingLevel,
    /// The newest compaction on the branch, whose summary heads `messages`.
    pub compaction: Option<CompactionEntry>,
    /// How many of `messages` date from before that compaction (the summary and the kept
    /// messages): their usage figures counted a context that no longer exists. 0 without one.
    pub from_before_compaction: usize,
}

/// Builds the context of the branch ending at `leaf` (empty for no leaf).
pub(crate) fn build_context(log: &dyn SessionLog, leaf: Option<EntryPos>) -> Result<SessionContext, SessionStoreError> {
    let Some(leaf) = leaf else {
        return Ok(SessionContext::default());
    };
    let index = log.index();
    let path = index.path_to(leaf);
    let (mut compactions, mut models, mut levels) = (Vec::new(), Vec::new(), Vec::new());
    for (i, &pos) in path.iter().enumerate() {
        let Some(meta) = index.meta(pos) else {
            continue;
        };
        match meta.tag {
            EntryTag::Compaction => compactions.push(i),
            EntryTag::ModelChange => models.push(pos),
            EntryTag::Message if meta.role == Some(RoleTag::Assistant) => models.push(pos),
            EntryTag::ThinkingLevelChange => levels.push(pos),
            EntryTag::Message
            | EntryTag::BranchSummary
            | EntryTag::Custom
            | EntryTag::CustomMessage
            | EntryTag::Label
            | EntryTag::SessionInfo
            | EntryTag::Other => {}
        }
    }

    // The newest readable compaction on the path.
    let mut compaction: Option<(usize, SessionEntry, CompactionEntry)> = None;
    for &i in compactions.iter().rev() {
        if let Some(Some(entry)) = log.read(&[path[i]])?.pop()
            && let EntryKind::Compaction(c) = &entry.kind
        {
            let c = c.clone();
            compaction = Some((i, entry, c));
            break;
        }
    }

    let take =
        |range: &[EntryPos]| -> Vec<EntryPos> { range.iter().copied().filter(|&p| in_context(index, p)).collect() };
    let mut messages = Vec::new();
    let mut from_before_compaction = 0;
    match &compaction {
        Some((at, entry, c)) => {
            messages.push(Message::CompactionSummary(SummaryMessage {
                summary: c.summary.clone(),
                tokens_before: Some(c.tokens_before),
                from_id: None,
                timestamp: iso_to_ms(&entry.timestamp),
            }));
            if let Some(first_kept) = path[..*at].iter().position(|&p| index.id(p) == c.first_kept_entry_id) {
                log.read_messages(&take(&path[first_kept..*at]), into_message, &mut messages)?;
            }
            from_before_compaction = messages.len();
            log.read_messages(&take(&path[at + 1..]), into_message, &mut messages)?;
        }
        None => log.read_messages(&take(&path), into_message, &mut messages)?,
    }

    let model = last_usable(log, &models, |kind| match kind {
        EntryKind::ModelChange { provider, model_id } => Some((provider.clone(), model_id.clone())),
        EntryKind::Message(Message::Assistant(a)) => Some((a.provider.clone(), a.model.clone())),
        EntryKind::Message(_)
        | EntryKind::ThinkingLevelChange { .. }
        | EntryKind::Compaction(_)
        | EntryKind::BranchSummary { .. }
        | EntryKind::Custom { .. }
        | EntryKind::CustomMessage { .. }
        | EntryKind::Label { .. }
        | EntryKind::SessionInfo { .. }
        | EntryKind::Unknown { .. } => None,
    })?;
    let thinking_level = last_usable(log, &levels, |kind| match kind {
        EntryKind::ThinkingLevelChange { thinking_level } => Some(*thinking_level),
        EntryKind::Message(_)
        | EntryKind::ModelChange { .. }
        | EntryKind::Compaction(_)
        | EntryKind::BranchSummary { .. }
        | EntryKind::Custom { .. }
        | EntryKind::CustomMessage { .. }
        | EntryKind::Label { .. }
        | EntryKind::SessionInfo { .. }
        | EntryKind::Unknown { .. } => None,
    })?
    .unwrap_or_default();
    Ok(SessionContext {
        messages,
        model,
        thinking_level,
        compaction: compaction.map(|(_, _, c)| c),
        from_before_compaction,
    })
}

/// Entries that become messages: `message`, `custom_message`, `branch_summary`.
fn in_context(index: &SessionIndex, pos: EntryPos) -> bool {
    index.meta(pos).is_some_and(|m| {
        matches!(
            m.tag,
            EntryTag::Message | EntryTag::CustomMessage | EntryTag::BranchSummary
        )
    })
}

/// The message an entry contributes to the context, as pi's `appendMessage` in
/// `buildSessionContext`: custom messages and non-empty branch summaries are stamped with the
/// entry's time.
fn into_message(entry: SessionEntry) -> Option<Message> {
    match entry.kind {
        EntryKind::Message(m) => Some(m),
        EntryKind::CustomMessage {
            custom_type,
            content,
            display,
            details,
        } => Some(Message::Custom(CustomMessage {
            custom_type,
            content,
            display,
            details,
            timestamp: iso_to_ms(&entry.timestamp),
        })),
        EntryKind::BranchSummary { from_id, summary, .. } if !summary.is_empty() => {
            Some(Message::BranchSummary(SummaryMessage {
                summary,
                tokens_before: None,
                from_id: Some(from_id),
                timestamp: iso_to_ms(&entry.timestamp),
            }))
        }
        // A message with a role this version does not know is not sent (pi's convertToLlm drops it).
        EntryKind::BranchSummary { .. }
        | EntryKind::Unknown { .. }
        | EntryKind::ModelChange { .. }
        | EntryKind::ThinkingLevelChange { .. }
        | EntryKind::Compaction(_)
        | EntryKind::Custom { .. }
        | EntryKind::Label { .. }
        | EntryKind::SessionInfo { .. } => None,
    }
}

/// `f` of the last candidate (in path order) that reads and yields a value.
fn last_usable<T>(
    log: &dyn SessionLog,
    candidates: &[EntryPos],
    f: impl Fn(&EntryKind) -> Option<T>,
) -> Result<Option<T>, SessionStoreError> {
    for &pos in candidates.iter().rev() {
        if let Some(Some(entry)) = log.read(&[pos])?.pop()
            && let Some(v) = f(&entry.kind)
        {
            return Ok(Some(v));
        }
    }
    Ok(None)
}

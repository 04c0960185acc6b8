//! The `recall` tool and the per-session extension that registers it, bound to one chat.

use crate::query::{DEFAULT_LIMIT, MAX_LIMIT, Query, Terms};
use crate::search::Hit;
use crate::store::{ChatKey, Recall};
use async_trait::async_trait;
use chrono::{NaiveDate, TimeZone};
use std::sync::Arc;
use tokio_util::sync::CancellationToken;
use volcanic_abstractions::extensions::events::{AgentEndEvent, AgentStartEvent, ExtensionEvent};
use volcanic_abstractions::extensions::{BoxError, Extension, ExtensionApi, ExtensionApiExt};
use volcanic_abstractions::messages::Message;
use volcanic_abstractions::sessions::EntryKind;
use volcanic_abstractions::tools::{ToolError, ToolInvocation, ToolResult, TypedTool, typed};

/// The per-session extension `recall`: registers [`RecallTool`] for the session's chat.
#[derive(Debug)]
pub struct RecallExtension {
    recall: Arc<Recall>,
    chat: ChatKey,
    zone: chrono_tz::Tz,
}

impl RecallExtension {
    /// The extension for a session of `chat` (the host derives it from where the session is,
    /// never from the model) in time zone `zone` (used until the session reports its own).
    pub fn new(recall: Arc<Recall>, chat: ChatKey, zone: chrono_tz::Tz) -> Self {
        RecallExtension { recall, chat, zone }
    }
}

#[async_trait]
impl Extension for RecallExtension {
    fn name(&self) -> &str {
        "recall"
    }

    async fn activate(&self, api: Arc<dyn ExtensionApi>) -> Result<(), BoxError> {
        api.register_tool(typed(RecallTool {
            recall: self.recall.clone(),
            chat: self.chat.clone(),
            zone: self.zone,
        }));
        // The background pass holds back while runs start and end (background.rs).
        note_activity_on::<AgentStartEvent>(&*api, &self.recall);
        note_activity_on::<AgentEndEvent>(&*api, &self.recall);
        Ok(())
    }
}

/// Has `api` note each event `E` (a run starting or ending) to `recall`'s background pass.
fn note_activity_on<E: ExtensionEvent>(api: &dyn ExtensionApi, recall: &Arc<Recall>) {
    let recall = recall.clone();
    api.on::<E, _>(move |_e, _ctx, _cancel| {
        recall.note_activity();
        Box::pin(async { Ok(()) })
    });
}

/// The `recall` tool's arguments.
#[derive(Debug, serde::Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RecallArgs {
    /// Words to look for; entries with any of them match, those with more (and rarer) words
    /// rank first. A trailing `*` matches words starting so (`deploy*`).
    pub query: String,
    /// Only what was said on or after this day, `YYYY-MM-DD` in the chat's time zone.
    #[serde(default)]
    pub since: Option<String>,
    /// Only what was said on or before this day (inclusive), `YYYY-MM-DD` in the chat's time zone.
    #[serde(default)]
    pub until: Option<String>,
    /// How many hits, 1 to 50 (default 10).
    #[serde(default)]
    pub limit: Option<u32>,
}

/// `recall`: searches every past session of its chat (see the crate docs).
#[derive(Debug)]
pub struct RecallTool {
    recall: Arc<Recall>,
    chat: ChatKey,
    zone: chrono_tz::Tz,
}

#[async_trait]
impl TypedTool for RecallTool {
    type Args = RecallArgs;

    fn name(&self) -> &str {
        crate::extract::RECALL
    }

    fn description(&self) -> &str {
        "Searches everything said in this chat's past conversations (every session since the \
         first, including parts no longer in your context), best matches first. Each hit gives \
         when it was said, the session, who said it and the words around the match."
    }

    fn prompt_snippet(&self) -> Option<String> {
        Some("recall: search this chat's past conversations by words, optionally between dates".into())
    }

    async fn run(
        &self,
        args: RecallArgs,
        inv: ToolInvocation,
        _cancel: CancellationToken,
    ) -> Result<ToolResult, ToolError> {
        // The chat's zone now (after a /tz), else the one the session started with.
        let zone = inv
            .ctx
            .time_zone()
            .and_then(|z| z.parse::<chrono_tz::Tz>().ok())
            .unwrap_or(self.zone);
        let mut query = query(&args, zone).map_err(ToolError::msg)?;
        query.skip = current_run(&inv);
        let (recall, chat, q) = (self.recall.clone(), self.chat.clone(), query.clone());
        let (hits, times) = tokio::task::spawn_blocking(move || recall.search_timed(&chat, &q))
            .await
            .map_err(|e| ToolError::msg(format!("recall: the search stopped: {e}")))?
            .map_err(|e| ToolError::msg(e.to_string()))?;
        tracing::debug!(chat = %self.chat, hits = hits.len(), ?times, "recall: searched");
        let text = render(&args.query, &hits, zone);
        let details = serde_json::json!({ "hits": hits });
        Ok(ToolResult::text(text).with_details(details))
    }
}

/// The search the arguments ask for. Errors say which argument is wrong and how to write it.
fn query(args: &RecallArgs, zone: chrono_tz::Tz) -> Result<Query, String> {
    let terms = Terms::parse(&args.query).map_err(|e| e.to_string())?;
    let limit = match args.limit {
        None => DEFAULT_LIMIT,
        Some(n) if (1..=MAX_LIMIT as u32).contains(&n) => n as usize,
        Some(n) => return Err(format!("recall: `limit` is {n}; give 1 to {MAX_LIMIT}")),
    };
    let since_ms = args
        .since
        .as_deref()
        .map(|d| day_start(d, "since", zone, 0))
        .transpose()?;
    let until_ms = args
        .until
        .as_deref()
        .map(|d| day_start(d, "until", zone, 1))
        .transpose()?;
    Ok(Query {
        terms,
        since_ms,
        until_ms,
        limit,
        skip: None,
    })
}

/// The run being answered: its session and the entries from its prompt (the last user message
/// on the branch) to the leaf. Its prompt holds the words searched for and is in the model's
/// context anyway. `None` when the session cannot be read.
fn current_run(inv: &ToolInvocation) -> Option<(String, Vec<String>)> {
    let view = inv.ctx.session().ok()?;
    let mut ids = Vec::new();
    let mut at = view.leaf_id();
    // Bounded: a run is a prompt, its tool rounds and their results.
    while let Some(id) = at.take()
        && ids.len() < 1_000
    {
        let Some(entry) = view.entry(&id) else { break };
        ids.push(id);
        if matches!(entry.kind, EntryKind::Message(Message::User(_))) {
            break;
        }
        at = entry.parent_id;
    }
    Some((inv.ctx.session_id(), ids))
}

/// Epoch ms of the start of day `date` + `days_after` in `zone`.
fn day_start(date: &str, key: &str, zone: chrono_tz::Tz, days_after: u64) -> Result<i64, String> {
    let day = NaiveDate::parse_from_str(date.trim(), "%Y-%m-%d")
        .map_err(|_| format!("recall: `{key}` is {date:?}; write a day as YYYY-MM-DD (e.g. 2026-03-01)"))?;
    let day = day
        .checked_add_days(chrono::Days::new(days_after))
        .ok_or_else(|| format!("recall: `{key}` {date:?} is out of range"))?;
    let midnight = day.and_hms_opt(0, 0, 0).unwrap_or_default();
    // A day starting in a DST gap begins at the gap's end: take the earliest valid instant.
    let at = zone
        .from_local_datetime(&midnight)
        .earliest()
        .or_else(|| {
            zone.from_local_datetime(&(midnight + chrono::Duration::hours(1)))
                .earliest()
        })
        .ok_or_else(|| format!("recall: `{key}` {date:?} has no midnight in {zone}"))?;
    Ok(at.timestamp_millis())
}

/// The hits as the model reads them.
fn render(query: &str, hits: &[Hit], zone: chrono_tz::Tz) -> String {
    if hits.is_empty() {
        return format!("No hits for {query:?} in this chat's past conversations.");
    }
    let mut out = format!("{} hits for {query:?}, best first (times in {zone}):", hits.len());
    for (i, h) in hits.iter().enumerate() {
        let when = zone.timestamp_millis_opt(h.at_ms).single().map_or_else(
            || "unknown time".to_owned(),
            |t| t.format("%Y-%m-%d %H:%M %a").to_string(),
        );
        out.push_str(&format!(
            "\n{}. {when} · session {} · {}: {}",
            i + 1,
            h.session,
            h.who,
            h.snippet
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    fn args(since: Option<&str>, until: Option<&str>, limit: Option<u32>) -> RecallArgs {
        RecallArgs {
            query: "zebra".into(),
            since: since.map(Into::into),
            until: until.map(Into::into),
            limit,
        }
    }

    #[test]
    fn dates_are_whole_days_in_the_chats_zone() {
        let q = query(
            &args(Some("2026-03-01"), Some("2026-03-01"), None),
            chrono_tz::Asia::Tokyo,
        );
        let window = q.map(|q| (q.since_ms, q.until_ms, q.limit));
        // 2026-03-01 00:00 +09:00 is 2026-02-28 15:00 UTC; the next midnight 24 h later.
        assert_eq!(window, Ok((Some(1_772_290_800_000), Some(1_772_377_200_000), 10)));
    }

    #[test]
    fn bad_arguments_say_what_to_write() {
        let bad_day = query(&args(Some("March 1"), None, None), chrono_tz::UTC).err();
        assert_eq!(
            bad_day.as_deref(),
            Some("recall: `since` is \"March 1\"; write a day as YYYY-MM-DD (e.g. 2026-03-01)")
        );
        let bad_limit = query(&args(None, None, Some(51)), chrono_tz::UTC).err();
        assert_eq!(bad_limit.as_deref(), Some("recall: `limit` is 51; give 1 to 50"));
    }
}

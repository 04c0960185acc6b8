//! The `calendar` tool: flat arguments (for the model's sake) with an `action`.

use std::sync::Arc;

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::Deserialize;
use tokio_util::sync::CancellationToken;
use volcanic_abstractions::tools::{ToolError, ToolInvocation, ToolResult, TypedTool};

use crate::connections::GoogleCalendarConnections;
use crate::error::CalendarError;
use crate::flow::ChatRef;

/// What the tool does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Action {
    /// The calendars of the account.
    ListCalendars,
    /// Events between `from` and `to` (recurring ones as single occurrences).
    ListEvents,
    /// A new event.
    CreateEvent,
    /// Changes the given fields of `event_id`.
    UpdateEvent,
    /// Deletes `event_id` (one occurrence, or with `series` the whole recurring series).
    DeleteEvent,
    /// Busy intervals between `from` and `to`.
    FreeBusy,
}

/// Arguments of the `calendar` tool. Times: RFC 3339 with an offset, or a local time
/// (`2030-01-07 09:00`) read in `time_zone` (default: the chat's zone).
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CalendarArgs {
    /// list_calendars | list_events | create_event | update_event | delete_event | free_busy
    pub action: Action,
    /// Calendar id (default `primary`).
    pub calendar: Option<String>,
    /// list_events, free_busy: window start (default now).
    pub from: Option<String>,
    /// list_events, free_busy: window end (default `from` + 7 days).
    pub to: Option<String>,
    /// list_events: free-text filter.
    pub query: Option<String>,
    /// update_event, delete_event: the event's id as listed (an occurrence id for one occurrence).
    pub event_id: Option<String>,
    /// create/update: title.
    pub summary: Option<String>,
    /// create/update: start time; a date `YYYY-MM-DD` when `all_day`.
    pub start: Option<String>,
    /// create/update: end time; when `all_day`, the last day (inclusive). Or give `duration`.
    pub end: Option<String>,
    /// create/update: length instead of `end`, e.g. `30m`, `1h30m` (default 1h).
    pub duration: Option<String>,
    /// create/update: a whole-day event.
    pub all_day: Option<bool>,
    /// create/update: IANA zone of `start`/`end` (default the chat's zone).
    pub time_zone: Option<String>,
    /// create/update: description.
    pub description: Option<String>,
    /// create/update: location.
    pub location: Option<String>,
    /// create/update: attendee emails.
    pub attendees: Option<Vec<String>>,
    /// create/update: RFC 5545 lines, e.g. `RRULE:FREQ=WEEKLY;BYDAY=MO;COUNT=10`.
    pub recurrence: Option<Vec<String>>,
    /// create/update: popup reminders, minutes before the start.
    pub reminders: Option<Vec<u32>>,
    /// delete_event: delete the whole recurring series of the occurrence `event_id`.
    pub series: Option<bool>,
}

/// The `calendar` tool of one chat.
pub struct CalendarTool {
    pub(crate) connections: Arc<GoogleCalendarConnections>,
    pub(crate) chat: ChatRef,
}

impl std::fmt::Debug for CalendarTool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CalendarTool")
            .field("chat", &self.chat)
            .finish_non_exhaustive()
    }
}

impl CalendarTool {
    /// The tool of `chat`.
    pub fn new(connections: Arc<GoogleCalendarConnections>, chat: ChatRef) -> Self {
        Self { connections, chat }
    }

    /// Runs one call: `tool_call_id` names the call (create ids derive from it), `chat_zone` is
    /// the chat's IANA zone (times are shown in it and local times read in it).
    pub async fn call(
        &self,
        args: CalendarArgs,
        tool_call_id: &str,
        chat_zone: &str,
    ) -> Result<ToolResult, CalendarError> {
        crate::actions::run(self, args, tool_call_id, chat_zone).await
    }
}

#[async_trait]
impl TypedTool for CalendarTool {
    type Args = CalendarArgs;

    fn name(&self) -> &str {
        "calendar"
    }

    fn description(&self) -> &str {
        "Google Calendar of this chat's connected account: list calendars, list/create/update/delete \
         events, free/busy. Times are RFC 3339 or local times in the chat's zone; all-day events take \
         dates and an inclusive last day."
    }

    fn prompt_snippet(&self) -> Option<String> {
        Some("read and change the chat's Google Calendar".into())
    }

    fn prompt_guidelines(&self) -> Vec<String> {
        vec![
            "Use `calendar` with action list_events before changing events, to get their ids.".into(),
            "If `calendar` says the chat is not connected, tell the user to run /calendar connect.".into(),
        ]
    }

    async fn run(
        &self,
        args: CalendarArgs,
        inv: ToolInvocation,
        cancel: CancellationToken,
    ) -> Result<ToolResult, ToolError> {
        let zone = inv.ctx.time_zone().unwrap_or_else(|| "UTC".into());
        let work = self.call(args, &inv.tool_call_id, &zone);
        tokio::select! {
            r = work => r.map_err(|e| ToolError::msg(e.to_string())),
            () = cancel.cancelled() => Err(ToolError::Aborted),
        }
    }
}

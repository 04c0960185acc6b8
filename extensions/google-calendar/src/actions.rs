//! What each `calendar` action does against the API (google-calendar3 calls with backoff).

use chrono::{Duration, Utc};
use chrono_tz::Tz;
use google_calendar3::api::{
    Event, EventAttendee, EventReminder, EventReminders, FreeBusyRequest, FreeBusyRequestItem,
};
use serde_json::json;
use volcanic_abstractions::tools::ToolResult;

use crate::api::{Hub, Needs, hub, with_backoff};
use crate::error::CalendarError;
use crate::event_id::event_id;
use crate::times::{self, all_day, show, show_span, timed};
use crate::tool::{Action, CalendarArgs, CalendarTool};
use crate::update;

const EVENTS: Needs = Needs {
    scope: "calendar.events",
    what: "read or change events",
};

fn invalid(m: &str) -> CalendarError {
    CalendarError::Invalid(m.to_owned())
}

/// Runs one call of the tool for its chat. A 401 (token revoked before it expired) drops the
/// access token and runs the call once more, through a refresh (creates are idempotent).
pub(crate) async fn run(
    tool: &CalendarTool,
    args: CalendarArgs,
    tool_call_id: &str,
    chat_zone: &str,
) -> Result<ToolResult, CalendarError> {
    match run_once(tool, args.clone(), tool_call_id, chat_zone).await {
        Err(CalendarError::Unauthorized) => {
            tool.connections.expire_access(&tool.chat).await?;
            run_once(tool, args, tool_call_id, chat_zone).await
        }
        other => other,
    }
}

async fn run_once(
    tool: &CalendarTool,
    args: CalendarArgs,
    tool_call_id: &str,
    chat_zone: &str,
) -> Result<ToolResult, CalendarError> {
    let connections = &tool.connections;
    let config = connections.config()?;
    let (token, _scopes) = connections.access_token(&tool.chat).await?;
    let hub = hub(&connections.connector, &config.api_base_url, token);
    let chat_tz = times::zone(chat_zone).unwrap_or(Tz::UTC);
    let cx = Cx {
        hub: &hub,
        backoff: config.timing(),
        calendar: args.calendar.clone().unwrap_or_else(|| "primary".into()),
        tz: chat_tz,
    };
    match args.action {
        Action::ListCalendars => list_calendars(&cx).await,
        Action::ListEvents => list_events(&cx, &args).await,
        Action::CreateEvent => create_event(&cx, &args, &event_id(&tool.chat.key, tool_call_id)).await,
        Action::UpdateEvent => update_event(&cx, &args).await,
        Action::DeleteEvent => delete_event(&cx, &args).await,
        Action::FreeBusy => free_busy(&cx, &args).await,
    }
}

/// What every action needs.
struct Cx<'a> {
    hub: &'a Hub,
    backoff: crate::api::Timing,
    calendar: String,
    tz: Tz,
}

async fn list_calendars(cx: &Cx<'_>) -> Result<ToolResult, CalendarError> {
    let needs = Needs {
        scope: "calendar.calendarlist.readonly",
        what: "list calendars",
    };
    let (_, list) = with_backoff(cx.backoff, needs, || cx.hub.calendar_list().list().doit()).await?;
    let items = list.items.clone().unwrap_or_default();
    let lines: Vec<String> = items
        .iter()
        .map(|c| {
            format!(
                "- {} — {}{} (zone {}, {})",
                c.id.as_deref().unwrap_or("?"),
                c.summary.as_deref().unwrap_or(""),
                if c.primary == Some(true) { ", primary" } else { "" },
                c.time_zone.as_deref().unwrap_or("?"),
                c.access_role.as_deref().unwrap_or("?"),
            )
        })
        .collect();
    let ids: Vec<&str> = items.iter().filter_map(|c| c.id.as_deref()).collect();
    let more = if list.next_page_token.is_some() {
        "\n(more calendars than shown: only the first page was read)"
    } else {
        ""
    };
    Ok(ToolResult::text(format!("Calendars:\n{}{more}", lines.join("\n"))).with_details(json!({"calendars": ids})))
}

fn window(cx: &Cx<'_>, args: &CalendarArgs) -> Result<(chrono::DateTime<Utc>, chrono::DateTime<Utc>), CalendarError> {
    let from = match &args.from {
        Some(f) => times::instant(f, cx.tz)?,
        None => Utc::now(),
    };
    let to = match &args.to {
        Some(t) => times::instant(t, cx.tz)?,
        None => update::later(from, Duration::days(7))?,
    };
    if to <= from {
        return Err(invalid("`to` must be after `from`"));
    }
    Ok((from, to))
}

fn describe(e: &Event, tz: Tz) -> String {
    let mut line = format!(
        "- {} {} [id: {}]",
        show_span(e.start.as_ref(), e.end.as_ref(), tz),
        e.summary.as_deref().unwrap_or("(no title)"),
        e.id.as_deref().unwrap_or("?")
    );
    if let Some(l) = &e.location {
        line.push_str(&format!(" at {l}"));
    }
    if let Some(r) = &e.recurring_event_id {
        line.push_str(&format!(" (occurrence of series {r})"));
    }
    line
}

async fn list_events(cx: &Cx<'_>, args: &CalendarArgs) -> Result<ToolResult, CalendarError> {
    let (from, to) = window(cx, args)?;
    let (_, events) = with_backoff(cx.backoff, EVENTS, || {
        let mut call = cx
            .hub
            .events()
            .list(&cx.calendar)
            .time_min(from)
            .time_max(to)
            .single_events(true)
            .order_by("startTime")
            .max_results(250);
        if let Some(q) = &args.query {
            call = call.q(q);
        }
        call.doit()
    })
    .await?;
    let cut = events.next_page_token.is_some();
    let items = events.items.unwrap_or_default();
    let head = format!(
        "Events from {} to {} (times in {}):",
        show(from, cx.tz),
        show(to, cx.tz),
        cx.tz.name()
    );
    let body: Vec<String> = items.iter().map(|e| describe(e, cx.tz)).collect();
    let mut text = if body.is_empty() {
        format!("{head}\n(none)")
    } else {
        format!("{head}\n{}", body.join("\n"))
    };
    if cut {
        text.push_str(&format!(
            "\n(the list is cut after these {} events: give a narrower `from`/`to` or a `query` to see the rest)",
            items.len()
        ));
    }
    let ids: Vec<&str> = items.iter().filter_map(|e| e.id.as_deref()).collect();
    Ok(ToolResult::text(text).with_details(json!({"event_ids": ids})))
}

/// The event fields given in `args` (start/end only when `start` is given).
fn event_from(args: &CalendarArgs, tz_default: Tz) -> Result<Event, CalendarError> {
    let tz = match &args.time_zone {
        Some(z) => times::zone(z)?,
        None => tz_default,
    };
    let mut e = Event {
        summary: args.summary.clone(),
        description: args.description.clone(),
        location: args.location.clone(),
        ..Event::default()
    };
    if let Some(start) = &args.start {
        if args.all_day == Some(true) {
            let first = times::date(start)?;
            let last = args.end.as_deref().map(times::date).transpose()?.unwrap_or(first);
            if last < first {
                return Err(invalid("`end` (the last day) is before `start`"));
            }
            // Google's all-day end date is exclusive: the day after the last day.
            let after = last
                .succ_opt()
                .ok_or_else(|| invalid("the last day is out of range: give an earlier `end`"))?;
            e.start = Some(all_day(first));
            e.end = Some(all_day(after));
        } else {
            let s = times::instant(start, tz)?;
            let end = match (&args.end, &args.duration) {
                (Some(end), _) => times::instant(end, tz)?,
                (None, Some(d)) => update::later(s, times::duration(d)?)?,
                (None, None) => update::later(s, Duration::hours(1))?,
            };
            if end <= s {
                return Err(invalid("the event must end after it starts"));
            }
            // Every timed end carries the zone: Google requires one for recurring events.
            e.start = Some(timed(s, tz));
            e.end = Some(timed(end, tz));
        }
    }
    if let Some(a) = &args.attendees {
        e.attendees = Some(
            a.iter()
                .map(|m| EventAttendee {
                    email: Some(m.clone()),
                    ..EventAttendee::default()
                })
                .collect(),
        );
    }
    if let Some(r) = &args.recurrence {
        e.recurrence = Some(
            r.iter()
                .map(|l| {
                    let l = l.trim();
                    if l.contains(':') {
                        l.to_owned()
                    } else {
                        format!("RRULE:{l}")
                    }
                })
                .collect(),
        );
    }
    if let Some(m) = &args.reminders {
        e.reminders = Some(EventReminders {
            use_default: Some(false),
            overrides: Some(
                m.iter()
                    .map(|min| EventReminder {
                        method: Some("popup".into()),
                        minutes: i32::try_from(*min).ok(),
                    })
                    .collect(),
            ),
        });
    }
    Ok(e)
}

async fn create_event(cx: &Cx<'_>, args: &CalendarArgs, id: &str) -> Result<ToolResult, CalendarError> {
    if args.summary.is_none() || args.start.is_none() {
        return Err(invalid("create_event needs `summary` and `start`"));
    }
    let mut event = event_from(args, cx.tz)?;
    event.id = Some(id.to_owned());
    let created = match with_backoff(cx.backoff, EVENTS, || {
        cx.hub.events().insert(event.clone(), &cx.calendar).doit()
    })
    .await
    {
        Ok((_, e)) => e,
        Err(CalendarError::Api { status: 409, .. }) => {
            // A retry of this very call: success only if the stored event is this one.
            let (_, existing) =
                with_backoff(cx.backoff, EVENTS, || cx.hub.events().get(&cx.calendar, id).doit()).await?;
            let same = existing.summary == event.summary
                && existing.start.as_ref().map(|s| (s.date, s.date_time))
                    == event.start.as_ref().map(|s| (s.date, s.date_time))
                && existing.status.as_deref() != Some("cancelled");
            if !same {
                return Err(CalendarError::Api {
                    status: 409,
                    reason: "duplicate".into(),
                    message: format!("an event with id {id} already exists and differs from this one"),
                });
            }
            existing
        }
        Err(e) => return Err(e),
    };
    Ok(ToolResult::text(format!(
        "Created: {}",
        describe(&created, cx.tz).trim_start_matches("- ")
    ))
    .with_details(json!({"event_id": created.id, "html_link": created.html_link})))
}

async fn update_event(cx: &Cx<'_>, args: &CalendarArgs) -> Result<ToolResult, CalendarError> {
    let id = args
        .event_id
        .as_deref()
        .ok_or_else(|| invalid("update_event needs `event_id`"))?;
    let fields = CalendarArgs {
        start: None,
        end: None,
        duration: None,
        all_day: None,
        time_zone: None,
        ..args.clone()
    };
    let mut patch = event_from(&fields, cx.tz)?;
    if let Some(d) = &args.duration {
        times::duration(d)?; // refused before any request
    }
    let mut replace = None;
    if update::changes_times(args) {
        let (_, old) = with_backoff(cx.backoff, EVENTS, || cx.hub.events().get(&cx.calendar, id).doit()).await?;
        if let Some((start, end)) = update::new_times(args, &old, cx.tz)? {
            let was_all_day = old.start.as_ref().is_some_and(|s| s.date.is_some());
            if was_all_day == start.date.is_some() {
                patch.start = Some(start);
                patch.end = Some(end);
            } else {
                // A PATCH merges `start`/`end` into the stored ones and google-calendar3 drops
                // the nulls that would clear the other kind's field: the switch is a full update.
                let mut full = old;
                overlay(&mut full, patch.clone());
                full.start = Some(start);
                full.end = Some(end);
                replace = Some(full);
            }
        }
    }
    let (_, updated) = match replace {
        Some(full) => {
            with_backoff(cx.backoff, EVENTS, || {
                cx.hub.events().update(full.clone(), &cx.calendar, id).doit()
            })
            .await?
        }
        None => {
            with_backoff(cx.backoff, EVENTS, || {
                cx.hub.events().patch(patch.clone(), &cx.calendar, id).doit()
            })
            .await?
        }
    };
    Ok(ToolResult::text(format!(
        "Updated: {}",
        describe(&updated, cx.tz).trim_start_matches("- ")
    ))
    .with_details(json!({"event_id": updated.id})))
}

/// Puts the fields set in `patch` (not times) onto `event`.
fn overlay(event: &mut Event, patch: Event) {
    if patch.summary.is_some() {
        event.summary = patch.summary;
    }
    if patch.description.is_some() {
        event.description = patch.description;
    }
    if patch.location.is_some() {
        event.location = patch.location;
    }
    if patch.attendees.is_some() {
        event.attendees = patch.attendees;
    }
    if patch.recurrence.is_some() {
        event.recurrence = patch.recurrence;
    }
    if patch.reminders.is_some() {
        event.reminders = patch.reminders;
    }
}

async fn delete_event(cx: &Cx<'_>, args: &CalendarArgs) -> Result<ToolResult, CalendarError> {
    let given = args
        .event_id
        .as_deref()
        .ok_or_else(|| invalid("delete_event needs `event_id`"))?;
    let series = if args.series == Some(true) {
        // The occurrence names its series (ids themselves may contain `_`).
        let (_, event) = with_backoff(cx.backoff, EVENTS, || cx.hub.events().get(&cx.calendar, given).doit()).await?;
        event.recurring_event_id
    } else {
        None
    };
    let id = series.as_deref().unwrap_or(given);
    match with_backoff(cx.backoff, EVENTS, || cx.hub.events().delete(&cx.calendar, id).doit()).await {
        // Gone: already deleted (e.g. by an attempt whose answer was a 5xx before the retry).
        Ok(_) | Err(CalendarError::Api { status: 410, .. }) => {}
        Err(e) => return Err(e),
    }
    let what = if id != given || args.series == Some(true) {
        "the series"
    } else {
        "the event"
    };
    Ok(ToolResult::text(format!("Deleted {what} {id}.")).with_details(json!({"deleted": id})))
}

async fn free_busy(cx: &Cx<'_>, args: &CalendarArgs) -> Result<ToolResult, CalendarError> {
    let (from, to) = window(cx, args)?;
    let request = FreeBusyRequest {
        time_min: Some(from),
        time_max: Some(to),
        time_zone: Some(cx.tz.name().to_owned()),
        items: Some(vec![FreeBusyRequestItem {
            id: Some(cx.calendar.clone()),
        }]),
        ..FreeBusyRequest::default()
    };
    let needs = Needs {
        scope: "calendar.freebusy",
        what: "read free/busy times",
    };
    let (_, answer) = with_backoff(cx.backoff, needs, || cx.hub.freebusy().query(request.clone()).doit()).await?;
    let Some(calendar) = answer.calendars.unwrap_or_default().remove(&cx.calendar) else {
        return Err(CalendarError::FreeBusy {
            calendar: cx.calendar.clone(),
            reasons: "the answer has no such calendar".into(),
        });
    };
    let errors = calendar.errors.unwrap_or_default();
    if !errors.is_empty() {
        let reasons: Vec<String> = errors
            .iter()
            .map(|e| e.reason.clone().unwrap_or_else(|| "unknown".into()))
            .collect();
        return Err(CalendarError::FreeBusy {
            calendar: cx.calendar.clone(),
            reasons: reasons.join(", "),
        });
    }
    let busy = calendar.busy.unwrap_or_default();
    let lines: Vec<String> = busy
        .iter()
        .filter_map(|p| Some(format!("- {} – {}", show(p.start?, cx.tz), show(p.end?, cx.tz))))
        .collect();
    let text = format!(
        "Busy from {} to {} (times in {}):\n{}",
        show(from, cx.tz),
        show(to, cx.tz),
        cx.tz.name(),
        if lines.is_empty() {
            "(free the whole time)".to_owned()
        } else {
            lines.join("\n")
        }
    );
    Ok(ToolResult::text(text).with_details(json!({"busy": busy.len()})))
}

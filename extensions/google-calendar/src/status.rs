//! `/calendar status`: account, granted scopes, token health, default calendar, zone.

use crate::api::{Needs, hub, with_backoff};
use crate::connections::{GoogleCalendarConnections, short_scope};
use crate::error::CalendarError;
use crate::flow::ChatRef;

impl GoogleCalendarConnections {
    /// The status text for the chat (`chat_zone`: the chat's own zone setting).
    pub async fn status(&self, chat: &ChatRef, chat_zone: &str) -> String {
        if !self.is_configured() {
            return CalendarError::NotConfigured.to_string();
        }
        let Some(account) = self.account(chat) else {
            return "Google Calendar: not connected. Run /calendar connect.".into();
        };
        let scopes: Vec<&str> = account.scopes.iter().map(|s| short_scope(s)).collect();
        let mut lines = vec![
            format!(
                "Google account: {}",
                account.email.as_deref().unwrap_or("(email not granted)")
            ),
            format!("Granted: {}", scopes.join(", ")),
        ];
        let health = match self.access_token(chat).await {
            Ok((token, _)) => {
                let calendar = match self.config() {
                    Ok(config) => {
                        let hub = hub(&self.connector, &config.api_base_url, token);
                        let needs = Needs {
                            scope: "calendar.calendarlist.readonly",
                            what: "read the calendar list",
                        };
                        match with_backoff(config.timing(), needs, || hub.calendar_list().list().doit()).await {
                            Ok((_, list)) => list
                                .items
                                .unwrap_or_default()
                                .into_iter()
                                .find(|c| c.primary == Some(true))
                                .map(|c| {
                                    format!(
                                        "Default calendar: {} (zone {})",
                                        c.id.unwrap_or_default(),
                                        c.time_zone.unwrap_or_default()
                                    )
                                })
                                .unwrap_or_else(|| "Default calendar: primary".into()),
                            Err(e) => format!("Default calendar: primary (could not read the list: {e})"),
                        }
                    }
                    Err(e) => e.to_string(),
                };
                lines.push("Token: valid (refreshed automatically)".into());
                lines.push(calendar);
                None
            }
            Err(e) => Some(format!("Token: {e}")),
        };
        if let Some(h) = health {
            lines.push(h);
        }
        lines.push(format!("Chat time zone: {chat_zone}"));
        lines.join("\n")
    }
}

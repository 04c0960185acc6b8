//! Raw updates: text Telegram could send that a `serde_json::Value` cannot hold, such as a lone
//! surrogate (`"text":"\ud800"`, which serde_json refuses to decode into a string), or a field of
//! another type than the Bot API's. Such an update is queued as a stand-in object carrying its
//! text; `getUpdates` answers and webhook deliveries send that text byte for byte.

use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

use super::BotApiServer;

/// Key of the queued stand-in whose string is the update's raw text.
/// The key a raw update's text is kept under in the queue.
pub(crate) const RAW_KEY: &str = "volcanic_testkit_raw_update";

impl BotApiServer {
    /// Queues an update given as raw JSON text, sent exactly so by `getUpdates` (as an element of
    /// `result`) and by webhook delivery. `raw` gets the update's id (the next one) and returns
    /// the text, which should carry it as `update_id`. Returns the id. Chats the text mentions
    /// are not learned: [`add_chat`](Self::add_chat) them for the bot's answers.
    pub fn push_raw_update(&self, raw: impl FnOnce(i64) -> String) -> i64 {
        let id = self.shared.lock().next_update_id;
        self.push_update(json!({ "update_id": id, RAW_KEY: raw(id) }));
        id
    }
}

/// An update's JSON text as sent: the text of a raw update, else the value serialized.
pub(crate) fn update_text(update: &Value) -> String {
    match update.get(RAW_KEY).and_then(Value::as_str) {
        Some(raw) => raw.to_owned(),
        None => update.to_string(),
    }
}

/// The `getUpdates` answer `{"ok":true,"result":[...]}` for `result` (an array of updates), raw
/// updates spliced in as their text.
pub(crate) fn updates_response(result: &Value) -> Response {
    let items: Vec<String> = result
        .as_array()
        .map(|updates| updates.iter().map(update_text).collect())
        .unwrap_or_default();
    let body = format!(r#"{{"ok":true,"result":[{}]}}"#, items.join(","));
    (StatusCode::OK, [(header::CONTENT_TYPE, "application/json")], body).into_response()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::super::test_support::{client, method_url, server};
    use super::super::updates;

    #[tokio::test]
    async fn raw_updates_are_sent_byte_for_byte_among_the_others() {
        let server = server().await;
        server.push_update(updates::text_message(7, 7, "before"));
        let raw = server.push_raw_update(|id| format!(r#"{{"update_id":{id},"message":{{"text":"\ud800"}}}}"#));
        server.push_update(updates::text_message(7, 7, "after"));
        let body = client()
            .post(method_url(&server, "getUpdates"))
            .send()
            .await
            .unwrap()
            .text()
            .await
            .unwrap();
        assert!(body.starts_with(r#"{"ok":true,"result":[{"#), "{body}");
        assert!(
            body.contains(&format!(r#",{{"update_id":{raw},"message":{{"text":"\ud800"}}}},"#)),
            "{body}"
        );
        assert!(
            serde_json::from_str::<serde_json::Value>(&body).is_err(),
            "serde_json refuses it"
        );
        assert_eq!(server.pending_updates().len(), 3);
        // Confirming by offset drops it like any other.
        client()
            .post(method_url(&server, "getUpdates"))
            .json(&serde_json::json!({"offset": raw + 1}))
            .send()
            .await
            .unwrap();
        assert_eq!(server.pending_updates().len(), 1);
    }
}

//! `setMessageReaction` (Bot API 7.0): a bot sets at most one reaction on a message, an emoji
//! from Telegram's list ([`REACTION_EMOJI`]); an empty or absent `reaction` removes it. Nothing
//! is stored on the message: the reaction a message shows is the last one a call set
//! ([`BotApiServer::reaction`](super::BotApiServer::reaction)).

use serde_json::Value;

use super::ApiError;
use super::params::Params;
use super::state::State;

/// The emoji `ReactionTypeEmoji` may carry (Bot API, "ReactionTypeEmoji"; anything else is
/// `REACTION_INVALID`).
pub(crate) const REACTION_EMOJI: &[&str] = &[
    "👍",
    "👎",
    "❤",
    "🔥",
    "🥰",
    "👏",
    "😁",
    "🤔",
    "🤯",
    "😱",
    "🤬",
    "😢",
    "🎉",
    "🤩",
    "🤮",
    "💩",
    "🙏",
    "👌",
    "🕊",
    "🤡",
    "🥱",
    "🥴",
    "😍",
    "🐳",
    "❤‍🔥",
    "🌚",
    "🌭",
    "💯",
    "🤣",
    "⚡",
    "🍌",
    "🏆",
    "💔",
    "🤨",
    "😐",
    "🍓",
    "🍾",
    "💋",
    "🖕",
    "😈",
    "😴",
    "😭",
    "🤓",
    "👻",
    "👨‍💻",
    "👀",
    "🎃",
    "🙈",
    "😇",
    "😨",
    "🤝",
    "✍",
    "🤗",
    "🫡",
    "🎅",
    "🎄",
    "☃",
    "💅",
    "🤪",
    "🗿",
    "🆒",
    "💘",
    "🙉",
    "🦄",
    "😘",
    "💊",
    "🙊",
    "😎",
    "👾",
    "🤷‍♂",
    "🤷",
    "🤷‍♀",
    "😡",
];

/// `setMessageReaction`: the chat and message must exist; `reaction` is an array of at most
/// one `{"type":"emoji","emoji":...}` (bots are not premium users).
pub(crate) fn set_message_reaction(state: &mut State, params: &Params) -> Result<Value, ApiError> {
    let chat_id = params.chat_id()?;
    let message_id = params
        .int("message_id")?
        .ok_or_else(|| ApiError::bad_request("message identifier is not specified"))?;
    if !state.chat(chat_id)?.messages.contains_key(&message_id) {
        return Err(ApiError::bad_request("message to react not found"));
    }
    let reactions = match params.json("reaction")? {
        None => Vec::new(),
        Some(Value::Array(items)) => items,
        Some(_) => return Err(ApiError::bad_request("can't parse reaction JSON object")),
    };
    if reactions.len() > 1 {
        return Err(ApiError::bad_request("REACTIONS_TOO_MANY"));
    }
    for reaction in &reactions {
        let emoji = reaction.get("emoji").and_then(Value::as_str);
        let valid = reaction.get("type").and_then(Value::as_str) == Some("emoji")
            && emoji.is_some_and(|e| REACTION_EMOJI.contains(&e));
        if !valid {
            return Err(ApiError::bad_request("REACTION_INVALID"));
        }
    }
    Ok(Value::Bool(true))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::super::test_support::{fails, ok, server};
    use super::super::updates;
    use serde_json::json;

    #[tokio::test(flavor = "multi_thread")]
    async fn one_listed_emoji_on_an_existing_message_is_taken() {
        let server = server().await;
        let pushed = server.push_update(updates::text_message(42, 42, "hi"));
        let id = pushed["message"]["message_id"].as_i64().unwrap();
        let eyes = json!({"chat_id": 42, "message_id": id, "reaction": [{"type": "emoji", "emoji": "👀"}]});
        assert_eq!(ok(&server, "setMessageReaction", eyes).await, json!(true));
        assert_eq!(server.reaction(42, id).as_deref(), Some("👀"));
        let as_text = json!({"chat_id": 42, "message_id": id, "reaction": "[{\"type\":\"emoji\",\"emoji\":\"👍\"}]"});
        ok(&server, "setMessageReaction", as_text).await;
        assert_eq!(server.reaction(42, id).as_deref(), Some("👍"));

        let unlisted = json!({"chat_id": 42, "message_id": id, "reaction": [{"type": "emoji", "emoji": "✅"}]});
        assert!(
            fails(&server, "setMessageReaction", unlisted, 400)
                .await
                .contains("REACTION_INVALID")
        );
        let two = json!({"chat_id": 42, "message_id": id,
            "reaction": [{"type": "emoji", "emoji": "👍"}, {"type": "emoji", "emoji": "👀"}]});
        assert!(
            fails(&server, "setMessageReaction", two, 400)
                .await
                .contains("TOO_MANY")
        );
        let missing = json!({"chat_id": 42, "message_id": id + 100, "reaction": []});
        assert!(
            fails(&server, "setMessageReaction", missing, 400)
                .await
                .contains("not found")
        );
        assert_eq!(
            server.reaction(42, id).as_deref(),
            Some("👍"),
            "refused calls change nothing"
        );

        ok(&server, "setMessageReaction", json!({"chat_id": 42, "message_id": id})).await;
        assert_eq!(server.reaction(42, id), None, "no reaction removes it");
    }
}

//! `/model fallback`: a chat's fallback models (docs/providers.md, "Failover"). Everyone sees
//! them; owners set them (`/model fallback provider/id ...`), turn them off for the chat
//! (`off`) or give it the config's again (`default`). A model the config does not know, or
//! whose provider has no key, is refused with the reason and nothing changes.

use crate::features::port::Target;
use crate::telegram::TelegramHost;
use crate::telegram::outbound::failures;
use volcanic_core::agent::AgentSession;

/// What `/model fallback ARGS` answers. `owner`: whether the sender may change the list.
pub async fn command(
    host: &TelegramHost,
    session: &AgentSession,
    key: &str,
    target: Target,
    owner: bool,
    args: &str,
) -> String {
    let wanted: Option<Option<Vec<String>>> = match args.trim() {
        "" => None,
        "off" | "none" => Some(Some(Vec::new())),
        "default" => Some(None),
        list => Some(Some(
            list.split([' ', ','])
                .filter(|k| !k.is_empty())
                .map(str::to_owned)
                .collect(),
        )),
    };
    let Some(wanted) = wanted else {
        let own = host.chats.settings().get(key).fallback_models.is_some();
        return shown(&session.fallback_models(), whose(own));
    };
    if !owner {
        return "Only an owner may change the fallback models.".into();
    }
    let list = match session.set_fallback_models(wanted.clone()) {
        Ok(list) => list,
        Err(e) => return failures::session(&e),
    };
    if let Err(e) = host
        .chats
        .settings()
        .update(key, |s| s.fallback_models = wanted.clone())
    {
        return failures::not_saved("chat-settings.json", &e);
    }
    // Every loaded topic of the chat takes the list now; the others when they load.
    for s in host.chats.loaded_in_chat(target.chat_id).await {
        if let Err(e) = s.set_fallback_models(wanted.clone()) {
            tracing::warn!(chat = target.chat_id, "cannot apply the fallback models: {e}");
        }
    }
    shown(&list, whose(wanted.is_some()))
}

/// Whose list a chat has: its own (`own`) or the config's.
fn whose(own: bool) -> &'static str {
    if own { "this chat's" } else { "the config's" }
}

/// The answer naming the list (`whose`: this chat's or the config's).
fn shown(list: &[String], whose: &str) -> String {
    if list.is_empty() {
        return format!("Fallback models: none ({whose}). Owners set them with /model fallback provider/id ...");
    }
    let names: Vec<String> = list.iter().map(|k| format!("`{k}`")).collect();
    format!(
        "Fallback models ({whose}): {}. When the model's provider fails (overloaded, down, a refused key), the \
         turn goes on with the next one.",
        names.join(" → ")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_list_is_named_in_order() {
        assert_eq!(
            shown(&["a/1".into(), "b/2".into()], "this chat's"),
            "Fallback models (this chat's): `a/1` → `b/2`. When the model's provider fails (overloaded, down, a \
             refused key), the turn goes on with the next one."
        );
        assert!(shown(&[], "the config's").starts_with("Fallback models: none (the config's)."));
    }
}

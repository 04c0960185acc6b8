//! Command menus: inline buttons that run a command as if the presser had typed it. `/model`
//! without an argument shows the chat's models as buttons, grouped by provider with the current
//! one marked; `/thinking` shows the levels its model takes. A press is handled like the typed
//! command (same access rules, same place in the chat's line), and the menu's buttons are
//! replaced by the choice so that an old menu cannot be pressed again.
//!
//! Button data (Bot API `InlineKeyboardButton.callback_data`, 1-64 bytes) is `cmd:<command
//! line>`; a `/model` line that does not fit names its model by digest, `/model #<digest>`
//! (resolved against the chat's models when pressed). Only the menus' commands are ever run
//! from button data, which is untrusted input like any message.

use crate::telegram::inbound::journal::prompt_digest;
use teloxide::types::{InlineKeyboardButton, InlineKeyboardMarkup};
use volcanic_abstractions::model::{Model, ThinkingLevel};

/// The prefix of a menu button's data.
pub const PREFIX: &str = "cmd:";

/// Bot API limit of `callback_data`, in bytes.
const DATA_LIMIT: usize = 64;

/// Commands a button may run.
const MENU_COMMANDS: [&str; 2] = ["/model", "/thinking"];

/// Model buttons per row.
const PER_ROW: usize = 2;

/// The command line a button's `data` runs, when it is a menu button of one of the menus'
/// commands; anything else is `None` (never run).
pub fn command_line(data: &str) -> Option<&str> {
    let line = data.strip_prefix(PREFIX)?;
    let name = line.split_whitespace().next()?;
    MENU_COMMANDS.contains(&name).then_some(line)
}

/// The digest naming `key` (`provider/id`) in a `/model #<digest>` line.
pub fn model_digest(key: &str) -> String {
    prompt_digest(key)
}

/// The model `arg` names: `#<digest>` resolved among `models`, else `arg` itself (a
/// `provider/id` or a bare id, as typed).
pub fn resolve_model(arg: &str, models: &[Model]) -> Option<String> {
    match arg.strip_prefix('#') {
        Some(digest) => models.iter().map(Model::key).find(|k| model_digest(k) == digest),
        None => Some(arg.to_owned()),
    }
}

fn button(label: String, line: &str) -> InlineKeyboardButton {
    InlineKeyboardButton::callback(label, format!("{PREFIX}{line}"))
}

fn model_button(m: &Model, current: bool) -> InlineKeyboardButton {
    let key = m.key();
    let mut line = format!("/model {key}");
    if PREFIX.len() + line.len() > DATA_LIMIT {
        line = format!("/model #{}", model_digest(&key));
    }
    let mark = if current { "▸ " } else { "" };
    button(format!("{mark}{}", m.id), &line)
}

/// The `/model` menu: its text and buttons (one block per provider, in the order given).
pub fn model_menu(models: &[Model], current: Option<&str>) -> (String, InlineKeyboardMarkup) {
    let mut text = format!(
        "Model: {}\nChoose one (or send /model provider/id):",
        current.unwrap_or("none")
    );
    let mut rows: Vec<Vec<InlineKeyboardButton>> = Vec::new();
    let mut providers: Vec<&str> = Vec::new();
    for m in models {
        if !providers.contains(&m.provider.as_str()) {
            providers.push(&m.provider);
        }
    }
    for provider in providers {
        let of: Vec<&Model> = models.iter().filter(|m| m.provider == provider).collect();
        text.push_str(&format!("\n• {provider}: {}", of.len()));
        // A provider's name as a row of its own (a button that runs nothing) heads its block.
        rows.push(vec![InlineKeyboardButton::callback(
            format!("— {provider} —"),
            format!("{PREFIX}-"),
        )]);
        for chunk in of.chunks(PER_ROW) {
            rows.push(
                chunk
                    .iter()
                    .map(|m| model_button(m, current == Some(m.key().as_str())))
                    .collect(),
            );
        }
    }
    (text, InlineKeyboardMarkup::new(rows))
}

/// The `/thinking` menu: the levels `model` takes (only `off` for a model that does not
/// reason), the current one marked.
pub fn thinking_menu(current: ThinkingLevel, model: Option<&Model>) -> (String, InlineKeyboardMarkup) {
    let reasoning = model.is_none_or(|m| m.reasoning);
    let levels: Vec<ThinkingLevel> = if reasoning {
        ThinkingLevel::ALL.to_vec()
    } else {
        vec![ThinkingLevel::Off]
    };
    let mut text = format!("Thinking level: {current}\nChoose one (or send /thinking level):");
    if let (false, Some(m)) = (reasoning, model) {
        text.push_str(&format!(
            "\n{} does not reason: switch to a model that does for the other levels.",
            m.key()
        ));
    }
    let buttons: Vec<InlineKeyboardButton> = levels
        .iter()
        .map(|l| {
            let mark = if *l == current { "▸ " } else { "" };
            button(format!("{mark}{l}"), &format!("/thinking {l}"))
        })
        .collect();
    let rows: Vec<Vec<InlineKeyboardButton>> = buttons.chunks(3).map(<[_]>::to_vec).collect();
    (text, InlineKeyboardMarkup::new(rows))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use teloxide::types::InlineKeyboardButtonKind;
    use volcanic_abstractions::model::{Api, ModelCost};

    fn model(provider: &str, id: &str, reasoning: bool) -> Model {
        Model {
            id: id.into(),
            name: id.into(),
            provider: provider.into(),
            api: Api::AnthropicMessages,
            base_url: String::new(),
            reasoning,
            input: Vec::new(),
            cost: ModelCost::default(),
            context_window: 1000,
            max_tokens: 100,
        }
    }

    fn data(b: &InlineKeyboardButton) -> String {
        match &b.kind {
            InlineKeyboardButtonKind::CallbackData(d) => d.clone(),
            other => panic!("not a callback button: {other:?}"),
        }
    }

    #[test]
    fn only_the_menus_commands_run_from_button_data() {
        assert_eq!(command_line("cmd:/model a/b"), Some("/model a/b"));
        assert_eq!(command_line("cmd:/thinking high"), Some("/thinking high"));
        assert_eq!(command_line("cmd:/allow 42"), None);
        assert_eq!(command_line("cmd:/modelx a"), None);
        assert_eq!(command_line("cmd:-"), None);
        assert_eq!(command_line("retry:17"), None);
    }

    #[test]
    fn the_model_menu_groups_by_provider_marks_the_current_one_and_fits_the_data_limit() {
        let long = "x".repeat(80);
        let models = [
            model("anthropic", "claude-a", true),
            model("openai", "gpt-b", true),
            model("anthropic", "claude-c", true),
            model("custom", &long, false),
        ];
        let (text, markup) = model_menu(&models, Some("anthropic/claude-c"));
        assert!(text.contains("Model: anthropic/claude-c"), "{text}");
        let rows = &markup.inline_keyboard;
        let labels: Vec<Vec<&str>> = rows
            .iter()
            .map(|r| r.iter().map(|b| b.text.as_str()).collect())
            .collect();
        assert_eq!(
            labels,
            vec![
                vec!["— anthropic —"],
                vec!["claude-a", "▸ claude-c"],
                vec!["— openai —"],
                vec!["gpt-b"],
                vec!["— custom —"],
                vec![long.as_str()],
            ]
        );
        for b in rows.iter().flatten() {
            assert!(data(b).len() <= DATA_LIMIT, "{}", data(b));
        }
        assert_eq!(data(&rows[1][0]), "cmd:/model anthropic/claude-a");
        // The long key is named by digest and resolves back to it.
        let line = command_line(&data(&rows[5][0])).unwrap().to_owned();
        let arg = line.strip_prefix("/model ").unwrap();
        assert!(arg.starts_with('#'), "{arg}");
        assert_eq!(resolve_model(arg, &models), Some(format!("custom/{long}")));
        assert_eq!(resolve_model("#0000", &models), None);
        assert_eq!(command_line(&data(&rows[0][0])), None, "a heading runs nothing");
    }

    #[test]
    fn the_thinking_menu_offers_only_off_to_a_model_that_does_not_reason() {
        let (_, markup) = thinking_menu(ThinkingLevel::Medium, Some(&model("a", "r", true)));
        let all: Vec<String> = markup.inline_keyboard.iter().flatten().map(data).collect();
        assert_eq!(all.len(), ThinkingLevel::ALL.len());
        assert!(markup.inline_keyboard.iter().flatten().any(|b| b.text == "▸ medium"));
        let (text, markup) = thinking_menu(ThinkingLevel::Off, Some(&model("a", "plain", false)));
        let all: Vec<String> = markup.inline_keyboard.iter().flatten().map(data).collect();
        assert_eq!(all, vec!["cmd:/thinking off"]);
        assert!(text.contains("a/plain does not reason"), "{text}");
    }
}

//! The commands slice: slash commands (`/name args`).
//!
//! Names follow Telegram's rule `[a-z0-9_]{1,32}` (Bot API `BotCommand.command`), so every host
//! can announce them. A duplicate name becomes `name_2`, `name_3` (DESIGN.md; the spec's `name:2`
//! is not a valid Telegram command); a name that breaks the rule is refused with an error the
//! caller logs.

use volcanic_abstractions::extensions::{CommandDefinition, CommandInfo};

/// Why a command was refused.
#[derive(Debug, Clone, thiserror::Error, PartialEq, Eq)]
pub enum CommandError {
    /// The name is not `[a-z0-9_]{1,32}`.
    #[error("command name `{0}` refused: Telegram accepts only [a-z0-9_]{{1,32}}")]
    InvalidName(String),
}

/// A registered command.
#[derive(Debug, Clone)]
pub struct RegisteredCommand {
    /// Final name (after de-duplication).
    pub name: String,
    /// Definition.
    pub definition: CommandDefinition,
    /// Registering extension; `None` for the host's own.
    pub source: Option<String>,
}

/// Slash commands of one session, in registration order.
#[derive(Debug, Clone, Default)]
pub struct CommandRegistry {
    commands: Vec<RegisteredCommand>,
}

/// Whether `name` is a valid command name (`[a-z0-9_]{1,32}`).
pub fn is_valid_command_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 32
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_')
}

impl CommandRegistry {
    /// An empty registry.
    pub fn new() -> Self {
        Self::default()
    }

    /// Registers `/name`; returns the final name (`name_2`, … on a duplicate).
    pub fn register(
        &mut self,
        name: &str,
        definition: CommandDefinition,
        source: Option<String>,
    ) -> Result<String, CommandError> {
        let name = name.trim_start_matches('/');
        if !is_valid_command_name(name) {
            return Err(CommandError::InvalidName(name.to_owned()));
        }
        let mut final_name = name.to_owned();
        let mut n = 1;
        while self.get(&final_name).is_some() {
            n += 1;
            let suffix = format!("_{n}");
            let keep = 32usize.saturating_sub(suffix.len()).min(name.len());
            final_name = format!("{}{suffix}", &name[..keep]);
        }
        self.commands.push(RegisteredCommand {
            name: final_name.clone(),
            definition,
            source,
        });
        Ok(final_name)
    }

    /// A command by name.
    pub fn get(&self, name: &str) -> Option<&RegisteredCommand> {
        self.commands.iter().find(|c| c.name == name)
    }

    /// Every command.
    pub fn list(&self) -> Vec<CommandInfo> {
        self.commands
            .iter()
            .map(|c| CommandInfo {
                name: c.name.clone(),
                description: c.definition.description.clone(),
                source: c.source.clone(),
            })
            .collect()
    }

    /// Splits `/name args` (also `/name@bot args`) into name and arguments; `None` if `text` is
    /// not a command line.
    pub fn parse(text: &str) -> Option<(&str, &str)> {
        let rest = text.strip_prefix('/')?;
        let (head, args) = match rest.find(char::is_whitespace) {
            Some(i) => (&rest[..i], rest[i..].trim()),
            None => (rest, ""),
        };
        let name = head.split('@').next().unwrap_or(head);
        if name.is_empty() {
            return None;
        }
        Some((name, args))
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use std::sync::Arc;

    fn def() -> CommandDefinition {
        CommandDefinition {
            description: "d".into(),
            handler: Arc::new(|_, _, _| Box::pin(async { Ok(()) })),
        }
    }

    #[test]
    fn duplicates_get_numbered_telegram_safe_names() {
        let mut r = CommandRegistry::new();
        assert_eq!(r.register("hello", def(), None).unwrap(), "hello");
        assert_eq!(r.register("hello", def(), Some("a".into())).unwrap(), "hello_2");
        assert_eq!(r.register("/hello", def(), Some("b".into())).unwrap(), "hello_3");
        let long = "a".repeat(32);
        r.register(&long, def(), None).unwrap();
        let second = r.register(&long, def(), None).unwrap();
        assert_eq!(second.len(), 32);
        assert!(second.ends_with("_2"));
    }

    #[test]
    fn invalid_names_are_refused() {
        let mut r = CommandRegistry::new();
        for bad in ["Hello", "with-dash", "", "x".repeat(33).as_str(), "a:b"] {
            assert!(r.register(bad, def(), None).is_err(), "{bad}");
        }
    }

    #[test]
    fn parse_splits_name_and_args() {
        assert_eq!(CommandRegistry::parse("/model a/b"), Some(("model", "a/b")));
        assert_eq!(CommandRegistry::parse("/new@volcanic_bot"), Some(("new", "")));
        assert_eq!(CommandRegistry::parse("hello"), None);
        assert_eq!(CommandRegistry::parse("/"), None);
    }
}

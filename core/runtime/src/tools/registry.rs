//! [`ToolRegistry`]: the tools a session knows, which of them are active, and their validators.

use super::validation;
use crate::compaction::estimate_text_tokens;
use jsonschema::Validator;
use serde_json::Value;
use std::sync::{Arc, OnceLock, RwLock, RwLockReadGuard, RwLockWriteGuard};
use volcanic_abstractions::provider::ToolSpec;
use volcanic_abstractions::tools::Tool;

/// Who registered a tool.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum ToolSource {
    /// The runtime's built-in tools.
    Builtin,
    /// An extension, by name.
    Extension(String),
}

impl std::fmt::Display for ToolSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ToolSource::Builtin => f.write_str("built-in"),
            ToolSource::Extension(name) => write!(f, "extension `{name}`"),
        }
    }
}

/// A registration the registry refused (the caller logs it; the session goes on).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ToolRegistryError {
    /// The name is already taken by a registration that wins.
    #[error("tool `{name}` from {refused} was not registered: {owner} registered it first")]
    Duplicate {
        /// Tool name.
        name: String,
        /// Who holds the name.
        owner: ToolSource,
        /// Who was refused.
        refused: ToolSource,
    },
    /// The name is not one providers accept.
    #[error("tool name `{0}` is invalid: use 1-64 characters among letters, digits, `_` and `-`")]
    InvalidName(String),
}

struct Entry {
    tool: Arc<dyn Tool>,
    source: ToolSource,
    active: bool,
    /// The compiled parameter schema, built on first validation.
    validator: OnceLock<Result<Arc<Validator>, String>>,
    /// Estimated tokens of its definition, computed on first use.
    tokens: OnceLock<u64>,
}

impl Entry {
    fn new(tool: Arc<dyn Tool>, source: ToolSource, active: bool) -> Self {
        Entry {
            tool,
            source,
            active,
            validator: OnceLock::new(),
            tokens: OnceLock::new(),
        }
    }
}

/// Known and active tools of one session, in registration order.
///
/// Rules: the first registration of a name wins, except that an extension tool replaces a
/// built-in of the same name (in the built-in's place, keeping its active state). New tools are
/// active. Methods take `&self`, so the registry can be shared (`Arc<ToolRegistry>`).
#[derive(Default)]
pub struct ToolRegistry {
    entries: RwLock<Vec<Entry>>,
}

impl ToolRegistry {
    /// An empty registry.
    pub fn new() -> Self {
        ToolRegistry::default()
    }

    /// Registers `tool`; see the type docs for which registration wins.
    pub fn register(&self, tool: Arc<dyn Tool>, source: ToolSource) -> Result<(), ToolRegistryError> {
        let name = tool.name().to_owned();
        if !valid_name(&name) {
            return Err(ToolRegistryError::InvalidName(name));
        }
        let mut entries = self.write();
        match entries.iter_mut().find(|e| e.tool.name() == name) {
            None => {
                entries.push(Entry::new(tool, source, true));
                Ok(())
            }
            Some(existing) => match (&existing.source, &source) {
                (ToolSource::Builtin, ToolSource::Extension(_)) => {
                    *existing = Entry::new(tool, source, existing.active);
                    Ok(())
                }
                (ToolSource::Builtin | ToolSource::Extension(_), ToolSource::Builtin | ToolSource::Extension(_)) => {
                    Err(ToolRegistryError::Duplicate {
                        name,
                        owner: existing.source.clone(),
                        refused: source,
                    })
                }
            },
        }
    }

    /// The tool called `name`, active or not.
    pub fn get(&self, name: &str) -> Option<Arc<dyn Tool>> {
        self.read()
            .iter()
            .find(|e| e.tool.name() == name)
            .map(|e| e.tool.clone())
    }

    /// Who registered `name`.
    pub fn source(&self, name: &str) -> Option<ToolSource> {
        self.read()
            .iter()
            .find(|e| e.tool.name() == name)
            .map(|e| e.source.clone())
    }

    /// Every known tool, in registration order.
    pub fn all(&self) -> Vec<Arc<dyn Tool>> {
        self.read().iter().map(|e| e.tool.clone()).collect()
    }

    /// The active tools, in registration order.
    pub fn active(&self) -> Vec<Arc<dyn Tool>> {
        self.read()
            .iter()
            .filter(|e| e.active)
            .map(|e| e.tool.clone())
            .collect()
    }

    /// Names of the active tools, in registration order.
    pub fn active_names(&self) -> Vec<String> {
        self.read()
            .iter()
            .filter(|e| e.active)
            .map(|e| e.tool.name().to_owned())
            .collect()
    }

    /// Whether `name` is known and active.
    pub fn is_active(&self, name: &str) -> bool {
        self.read().iter().any(|e| e.active && e.tool.name() == name)
    }

    /// Makes exactly the named tools active (unknown names are ignored).
    pub fn set_active<I, S>(&self, names: I)
    where
        I: IntoIterator<Item = S>,
        S: AsRef<str>,
    {
        let names: Vec<S> = names.into_iter().collect();
        for entry in self.write().iter_mut() {
            entry.active = names.iter().any(|n| n.as_ref() == entry.tool.name());
        }
    }

    /// Provider specs (name, description, parameters) of the active tools.
    pub fn specs(&self) -> Vec<ToolSpec> {
        self.read()
            .iter()
            .filter(|e| e.active)
            .map(|e| ToolSpec {
                name: e.tool.name().to_owned(),
                description: e.tool.description().to_owned(),
                parameters: e.tool.parameters(),
            })
            .collect()
    }

    /// Estimated tokens of the active tools' definitions (name, description, schema; see
    /// [`estimate_text_tokens`]), each tool's estimated once: compaction checks the context
    /// before every run when no usage is fresh.
    pub fn definition_tokens(&self) -> u64 {
        self.read()
            .iter()
            .filter(|e| e.active)
            .map(|e| {
                *e.tokens.get_or_init(|| {
                    estimate_text_tokens(e.tool.name())
                        + estimate_text_tokens(e.tool.description())
                        + estimate_text_tokens(&e.tool.parameters().to_string())
                })
            })
            .sum()
    }

    /// Validates `args` against the parameter schema of tool `name` (compiled once per tool).
    /// The error is a message for the model, naming each offending field:
    /// `invalid arguments for edit: edits[0].oldText: is a required property`.
    pub fn validate(&self, name: &str, args: &Value) -> Result<(), String> {
        let validator = {
            let entries = self.read();
            let entry = entries
                .iter()
                .find(|e| e.tool.name() == name)
                .ok_or_else(|| format!("Tool {name} not found"))?;
            entry
                .validator
                .get_or_init(|| {
                    validation::compile(&entry.tool.parameters())
                        .map(Arc::new)
                        .map_err(|e| {
                            tracing::error!(tool = name, error = %e, "tool parameter schema does not compile");
                            format!("tool {name} has an invalid parameter schema: {e}")
                        })
                })
                .clone()?
        };
        validation::check(name, &validator, args)
    }

    fn read(&self) -> RwLockReadGuard<'_, Vec<Entry>> {
        self.entries.read().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    fn write(&self) -> RwLockWriteGuard<'_, Vec<Entry>> {
        self.entries.write().unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

impl std::fmt::Debug for ToolRegistry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let entries = self.read();
        f.debug_list()
            .entries(
                entries
                    .iter()
                    .map(|e| (e.tool.name().to_owned(), e.source.clone(), e.active)),
            )
            .finish()
    }
}

/// Names providers accept: `^[a-zA-Z0-9_-]{1,64}$`.
fn valid_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 64
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

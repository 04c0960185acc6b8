//! The Volcanic agent runtime: one module per vertical slice, each exposing one entry type.
//!
//! | slice | entry type | owns |
//! |---|---|---|
//! | [`models`] | `ModelRegistry` | providers, `provider/id` lookup, API keys, transcript normalisation |
//! | [`sessions`] | `SessionManager` | the entry tree, context building, `FileSessionStore` |
//! | [`tools`] | `ToolRegistry` | known/active tools, argument validation, truncation, built-in tools |
//! | [`extensions`] | `ExtensionRunner` | two-phase activation, dispatch, event bus |
//! | [`commands`] | `CommandRegistry` | slash commands |
//! | [`system_prompt`] | `SystemPromptBuilder` | base prompt, tools, guidelines, context files, date |
//! | [`compaction`] | `Compactor` | when to compact, the cut, the summary request |
//! | [`agent`] | `AgentSession`, `AgentSessionFactory` | the conversation facade and the loop |
//! | [`processes`] | `ProcessSpawnPolicy` | child environments, hardening, secret redaction |
//! | [`skill_hooks`] | `SkillHookRunner` | skills' `session-start`/`turn-end` hooks, `protected-paths` |
//!
//! Slices talk only through entry types and the contracts in `volcanic-abstractions`; a host
//! touches only `AgentSession` and its factory.

pub mod agent;
pub mod blocking;
pub mod commands;
pub mod compaction;
pub mod extensions;
pub mod models;
pub mod processes;
pub mod sessions;
pub mod skill_hooks;
pub mod system_prompt;
pub mod tools;

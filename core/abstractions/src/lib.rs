//! Volcanic contracts: everything an extension or host may use, and nothing of the runtime.
//!
//! - [`messages`]: messages and content blocks in pi's shapes, `StopReason`, `Usage`;
//! - [`model`]: `Model` (`provider/id`), `Api`, `ThinkingLevel`;
//! - [`provider`]: the `Provider` trait and its event stream (`start` … exactly one `done`/`error`);
//! - [`tools`]: `Tool`, `TypedTool` (schema from an args struct), `ToolResult`, `ToolError`;
//! - [`sessions`]: session entries (pi's v3 format) and the `SessionStore` contract;
//! - [`extensions`]: `Extension`, `ExtensionApi`, `ExtensionContext`, every extension event;
//! - [`events`]: the `AgentSessionEvent` family hosts subscribe to;
//! - [`ui`]: `UserInterface` and `ChatChannel`;
//! - [`processes`]: `ProcessSpawnPolicy`, requests, hooks, `SecretRedactor`;
//! - [`skills`]: `SKILL.md` parsing and discovery (`SkillFiles`), hooks and protected paths;
//! - [`errors`]: [`errors::error_chain`], an error and its causes as one line of text;
//! - [`shortage`]: running short of descriptors, memory or disk, found in a failure and told plainly.

#![deny(missing_docs)]

pub mod errors;
pub mod events;
pub mod extensions;
pub mod messages;
pub mod model;
pub mod net;
pub mod processes;
pub mod provider;
pub mod sessions;
pub mod shortage;
pub mod skills;
pub mod spend;
pub mod tools;
pub mod ui;

pub use messages::*;
pub use model::{Api, InputKind, Model, ModelCost, ThinkingLevel};
pub use provider::{AssistantMessageEvent, Provider, ProviderContext, ProviderStream, StreamOptions};
pub use tools::{ExecutionMode, Tool, ToolError, ToolInvocation, ToolResult, TypedTool};

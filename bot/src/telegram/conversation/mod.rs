//! A chat's conversation with its agent: the conversations in memory and their sessions, the
//! chat's settings and access, commands and their menus, crash recovery, and the hand-off of a
//! prompt to the session.

pub(crate) mod access;
pub(crate) mod commands;
pub(crate) mod conversations;
pub(crate) mod down_report;
pub(crate) mod fallback;
pub(crate) mod handoff;
pub(crate) mod inbox;
pub(crate) mod menus;
pub(crate) mod recovery;
pub(crate) mod settings;
pub(crate) use crate::store_file;

//! Run modes: explicitly entered, global context spaces that survive across channels
//! and voice wakes (docs/modes-and-skills.md and docs/operations.md, "The workspace", describe them).
//!
//! - [`manifest`] — `mode.json`, strictly parsed (and the expiry policy).
//! - [`plugin`] — the `ModePlugin` trait a mode's code implements.
//! - [`registry`] — `ModeRegistry`: scans skill folders, loads manifests and the plugins
//!   the caller's table names.
//! - [`switch`] — validation of a switch request against the user's own words;
//!   [`switched`] — the typed outcomes of a switch.
//! - [`action`] — `action.json`, the lifecycle document; [`paused`] — `paused.json`, the
//!   parent session a sub-mode paused, and the record that brings the sub-mode's
//!   conclusion back to it ([`mode_core::submode`]).
//! - [`session`] — session files: names, the exit marker, `summary.md`; [`entered`] —
//!   `entered.json`, who entered the session and how;
//!   [`session_id`] — `SessionId`, the session's name and start time.
//! - [`mode_core`] — `ModeCore`, the live state as a synchronous state machine, and all
//!   its methods: the active session, turns, status (`mod.rs`); [`mode_core::switching`] —
//!   enter, exit, expire; [`mode_core::offer`] — the mode offer; [`mode_core::recording`] —
//!   where a record goes and what a failure to record leaves; [`durable`] — group commit of the
//!   records; [`warnings`] — what `status` shows went wrong; [`error`] — `ModeError`.
//! - [`archive`] — `Archivist`, the sessions on disk apart from the live one: ending a
//!   session (summary, history index, the summarizer's notice); [`recovery`] — its
//!   start-up repair of the workspace after any stop. It owns the workspace paths, the
//!   registry and the notifier; `ModeCore` holds one and lends it what an archive
//!   changes of the live state (the chats, `action.json`, the warnings).
//! - [`mode_core::offer`] — a mode offered by the backend when someone starts its activity (the
//!   words that allow it, once per chat per day, the accepted offer entering the mode).
//! - [`manager`] — `ModeManager`, the supervised actor that owns a `ModeCore`, and
//!   `ModesHandle`; [`manager_examples`] — its messages about learned examples
//!   ([`examples`]: `/good`, the dashboard's candidates); [`listing`] — every session folder and its true state.
//!
//! Nothing here knows about cooking: a mode's specifics come from its skill folder.

pub mod action;
pub mod answer_signs;
pub mod archive;
pub mod carry;
pub mod dirs;
pub mod durable;
pub mod entered;
pub mod error;
pub mod examples;
pub mod listing;
pub mod manager;
pub mod manager_examples;
pub mod manifest;
pub mod mode_core;
pub mod paused;
pub mod plugin;
pub mod recovery;
pub mod registry;
pub mod session;
pub mod session_id;
pub mod switch;
pub mod switched;
pub mod ticket;
pub mod warnings;

#[cfg(test)]
mod examples_core_tests;
#[cfg(test)]
mod submode_kit_tests;
#[cfg(test)]
mod submode_recovery_tests;
#[cfg(test)]
mod submode_tests;
#[cfg(test)]
mod tests;

pub use archive::Archivist;
pub use manager::{ModeManager, ModesHandle};
pub use manifest::ModeManifest;
pub use mode_core::{ChatReplay, ModeCore, ModeSnapshot, ModeStatus, TurnTicket};
pub use plugin::{ContextPath, ModePlugin};
pub use registry::ModeRegistry;
pub use session::Record;
pub use session_id::SessionId;
pub use switched::{Refusal, SwitchError, Switched};

//! Run modes: explicitly entered, global context spaces (seed 000).
//!
//! - [`manifest`] — `mode.json`, strictly parsed.
//! - [`plugin`] — the `ModePlugin` trait a mode's code implements.
//! - [`registry`] — `ModeRegistry`: scans skill folders, loads manifests and plugins.
//! - [`switch`] — validation of a switch request against the user's own words.
//! - [`action`] — `action.json`, the lifecycle document.
//! - [`session`] — session files: `conversation.jsonl` records, `summary.md`, markers.
//! - [`core`] — `ModeCore`, the synchronous state machine (enter, record, exit, archive,
//!   expire, recover) over the files above.
//! - [`manager`] — `ModeManager`, the actor that owns a `ModeCore`, and `ModesHandle`.
//!
//! Nothing here knows about cooking: a mode's specifics come from its skill folder.

pub mod action;
pub mod core;
pub mod manager;
pub mod manifest;
pub mod plugin;
pub mod registry;
pub mod session;
pub mod switch;

pub use self::core::{ModeCore, ModeSnapshot, ModeStatus, TurnTicket};
pub use manager::{ModeManager, ModesHandle};
pub use manifest::ModeManifest;
pub use plugin::{ContextPath, ModePlugin};
pub use registry::ModeRegistry;
pub use session::Record;

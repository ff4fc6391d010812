//! Context budget and compaction: what of the history a request replays, so that every
//! request fits the model's window and consecutive requests share a byte-identical
//! prefix.
//!
//! - [`tokens`] — counting (a fine estimate and the conservative count from character
//!   classes, calibrated against the usage the provider reports);
//! - [`budget`] — the budget of one request and which records it replays (mode
//!   sessions: checkpoint + the records after it; normal chats: trimmed in chunks);
//! - [`checkpoint`] — the summary of a history's older records (a mode session's
//!   `checkpoint.json`, a normal chat's `<chat>.checkpoint.json`);
//! - [`compaction`] — writing a new checkpoint with the provider, after a turn is
//!   recorded, off every actor;
//! - [`carry`] — the block a normal chat carries for a day after a mode session it took
//!   part in ended.
//!
//! One [`Context`] per agent: the window, the calibration, and the checkpoints of the
//! sessions seen (cached; the file is the truth). The agent asks it for a plan when it
//! builds a prompt; the kernel hands it each recorded turn of a mode session.
//!
//! Layout: `window` — [`Context`], each mode's policy, and every method of `Context` but
//! compaction's (`compaction`): the plan of a request among them; `checkpoint_cache` — the
//! checkpoints cached and the compactions under way; `hash` — the FNV-1a digest; and the
//! modules above.

pub mod budget;
pub mod carry;
pub mod checkpoint;
pub mod compaction;
pub mod tokens;
pub use budget::{Plan, PlanError};

mod checkpoint_cache;
mod hash;
mod window;

pub use hash::{fnv1a, FNV_SEED};
pub use window::{Context, ModePolicy};

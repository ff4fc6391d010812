//! The tools the agent offers the model. [`ToolRegistry`] holds them in a fixed order
//! (part of the stable prompt prefix): `switch_mode`, then `set_strategy` (both checked
//! against the user's own words), then the workspace file tools — `read_file`,
//! `list_files`, `write_file` — then the reminder tools — `set_reminder`,
//! `list_reminders`, `cancel_reminder` — then the scene-memory tools `memory_commit`,
//! `memory_search`, then `ask_user_choice` (offered in every strategy, so switching
//! strategy never changes the tools).
//!
//! Each tool is a [`Tool`] (`tool`): its arguments a struct whose JSON schema is derived
//! from it, its description, the [`Permission`]s it declares and an async `call`. The
//! registry runs a call within the turn's budget ([`ToolEnv::limits`]): arguments longer
//! than `tools.max_argument_bytes` are refused, a tool that writes files may write at
//! most `tools.max_write_bytes_per_turn` per turn and each writable folder holds at most
//! its quota. File I/O runs on the blocking pool, never on an async worker.
//!
//! Each tool lives in one place: a file (`switch_mode`, `offer_mode`, `reminders`) or a
//! folder with its rules and state beside it (`choice/`, `files/`, `memory/`,
//! `set_strategy/`, `home/`). The kit they share: `tool` (the trait), `env` (the turn's
//! [`ToolEnv`]), `permission`, `result`, `registry`.
//!
//! Imports run one way inside this folder: the rules and state of a tool (`*/rules`,
//! `files/zones`, `files/guard`, `home/access`) ← `env` ← `permission` ← `result` ←
//! `tool` (the trait) ← the tools (`*/tool`, `home/tools`, the single-file tools) ←
//! `registry` ← `definitions` (the tool list without a kernel) ← this file, which only
//! declares and re-exports (a test checks it). A folder's `mod.rs` only declares and
//! re-exports too; files inside `src/tools` import the file that holds an item, never a
//! folder's re-export.

pub mod choice;
mod definitions;
pub mod env;
pub mod files;
pub mod home;
pub mod memory;
pub mod offer_mode;
pub mod permission;
pub mod registry;
pub mod reminders;
pub mod result;
pub mod services;
pub mod set_strategy;
pub mod switch_mode;
pub mod tool;

pub use definitions::definitions;
pub use env::ToolEnv;
pub use files::{resolve_in, FileAccess, ZoneLimits, READ_LIMIT, WRITE_LIMIT};
pub use permission::Permission;
pub use registry::{ToolRegistry, ToolSetup};
pub use result::{ToolError, ToolResult};
pub use services::ToolServices;
pub use tool::Tool;

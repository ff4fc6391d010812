//! `homebot audit` and `homebot stats`: the provider's audit trail read back.
//!
//! The records are written by the provider ([`crate::provider::audit`]): one per attempt,
//! in `<session_dir>/audit.jsonl` inside a mode and in `logs/audit/YYYY-MM-DD.jsonl`
//! otherwise. This module only reads them — no lock, so it works beside a running gateway
//! — and a line that does not parse (a crash mid-write, a hand edit) is skipped and
//! counted, never fatal.
//!
//! - `read` — finding the files (a session by its id, archived ones too) and reading;
//! - [`show`] — the readable and JSON lines of `homebot audit`;
//! - [`stats`] — cache hit ratio and tokens per day and per mode session;
//! - [`cost`] — what the calls cost at `[provider.price]`, and without the cache;
//! - [`last_turn`] — one chat's last turn, every call it made (`/why`).

pub mod cli;
pub mod cost;
pub mod last_turn;
pub mod show;
pub mod stats;

mod read;

pub use read::{all_files, load, read_file, session_dir, AuditError, Loaded};

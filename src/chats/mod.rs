//! Normal-operation chat histories: outside a run mode each chat (a QQ group, a voice
//! session, a terminal) has its own `chats/<channel>/<chat>.jsonl`, in the same record
//! format as a mode session (see [`crate::history`]). Not mode logic: the ModeManager owns
//! an instance because it is the one writer of every history file.
//!
//! Memory stays bounded however long a chat runs and however many chats there are: only
//! the most recently used chats stay in memory (voice makes a new chat per wake), and of
//! each only its last records — a request replays at most `agent.normal_history_turns`
//! of them (see `context::budget`), so the tail kept is twice that plus a margin. A chat
//! loads only that tail from its file (the lines before are counted, not parsed), so a
//! year-old group chat loads as fast as a new one ([`tail`]). File names come from
//! peer-controlled ids, so they are made safe and bounded ([`file_safe`]).
//!
//! Beside each log: `<chat>.checkpoint.json`, the summary of its older turns (written by
//! `context::compaction`); and for the whole folder `carried.json`, the mode session each
//! chat took part in that ended within a day ([`carried`]).
//!
//! Layout: `histories` — `ChatHistories`; `file_name` — [`file_safe`]; [`tail`]; [`carried`].

pub mod carried;
pub mod tail;

mod file_name;
mod histories;

pub use file_name::file_safe;
pub use histories::ChatHistories;

//! Scene memory: memories recalled by *situation*, not by wording.
//!
//! Every turn yields a fingerprint ([`fingerprint`]): identity features `chan` and
//! `peer`, which make its hierarchical key ([`key`]: `chan:qq/peer:group_1027`), and
//! weak ones — `tool`, `topic` ([`topic`], jieba segmentation with a trimmed dictionary
//! that the first turn needing it builds), `part` of day. A scene is recognized on the
//! second similar occurrence of a key (`store::scenes`); memories committed in a turn
//! (`memory_commit`) attach to the turn's scene, and when that situation recurs they are
//! recalled into the dynamic tail of the user message — never the system prompt — even
//! if nothing in the wording matches (`store::index`). `ScenePolicy::None`
//! (per channel, per turn; internal channels by default) produces no features and no
//! keys. Links fade when unused; twin scenes are merged (`store::maintain`).
//!
//! Who talks to it: the agent (recall while preparing a turn, the observation after its
//! tool loop), the memory tools, the `homebot memory` command ([`cli`]). One thread, the
//! **memory thread**, owns the writing connection to `<workspace>/memory/memory.db`
//! ([`store`]): observations are sent to it and never awaited, so a turn neither waits
//! for SQLite nor fails because of it — a memory error is logged, the turn goes on.
//! After each write the thread publishes a fresh [`Index`] snapshot that recall
//! and search read without I/O; it also notices, every couple of seconds, when another
//! process (`homebot memory forget`) changed the database, and reloads.
//!
//! Beside the scene, [`wording`]: when scene recall finds too little, the memories the
//! turn's words match (as `memory_search` finds them, among those the chat may see) join
//! the turn in a block of their own.
//!
//! Layout: `handle` — [`Memory`], the handle; `messages` — what it sends the thread;
//! `thread` — the memory thread; `store/` — [`Store`], the database, and all its methods
//! (opening and writing, `index`, `scenes`, `maintain`).

pub mod cli;
pub mod fingerprint;
pub mod key;
pub mod store;
mod thread;
pub mod topic;
pub mod topic_dict;
pub mod wording;
pub use fingerprint::TurnScene;
pub use key::{KeyError, SceneKey};
pub use store::index::{estimate_tokens, Index, Recalled, SceneEntry};
pub use store::maintain::Maintained;
pub use store::scenes::{Observation, Observed};
pub use store::{MemoryError, Stats, Store};
#[cfg(test)]
mod tests;

mod handle;
mod lines;
mod messages;

pub use handle::{recall_line, recall_section_of, Memory, SCENE_LABEL};
pub use lines::memory_line;
pub use wording::{Worded, WORDING_LABEL};

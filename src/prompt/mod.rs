//! Prompt layout, built so that each request of a history holds the one before it
//! whole (what a provider's cache units need, see [`crate::config::Replay`]):
//!
//! 1. stable prefix: the base system prompt (built once at start, the speech rule in
//!    it) → in a mode, the frozen `system_prompt.md` → the standing strategy's block;
//!    tool definitions in a fixed order (sent beside the messages). Nothing about the
//!    current speaker: their `USER.md` is a kept block of the message (below);
//! 2. history: outside a mode, first the block about a mode session the chat took part
//!    in that ended within a day (a marked user/assistant pair, see
//!    [`crate::context::carry`]); then the checkpoint summary (a marked pair) and the
//!    records after it — a mode's `conversation.jsonl`, or the chat's own log, at most
//!    `normal_history_turns` of it (see [`crate::context::budget`]). Under exact replay
//!    each earlier user message is the one its turn sent, byte for byte; under lean
//!    replay it is "18:05 妈妈：少放盐" ([`crate::history::said`]). Failed turns are left
//!    out;
//! 3. the current user message ([`current`]): the time, the speaker tag and the words,
//!    a short `[上下文]` block and the blocks sent to stay (knowledge snippets not yet in
//!    the window, the speaker's profile, what a channel's peer added to the conversation
//!    — [`peer_note_section`], [`peer_log_section`]) — then, as a message of its own, the
//!    aside: what holds for this turn only (recalled memories, a strategy's blocks).
//!
//! The frozen part of a mode's prompt ([`frozen_mode_prompt`], written to the session's
//! `system_prompt.md` at entry) is laid out here too. Nothing here names a particular
//! mode: names and verbs come from the registry and the manifests.
//!
//! Layout: `system` — the base prompt and the system message; `messages` — one request's
//! messages; `strategy_block` and `profiles` — the `[策略]` and `[成员资料]` blocks; `frozen`,
//! `tail`, `peer_note`.

mod frozen;
mod peer_note;
mod tail;
pub use crate::history::defang;
pub use frozen::{frozen_mode_prompt, frozen_objective, SNIPPET_NOTE};
pub use peer_note::{peer_log_section, peer_note_section};
pub use tail::{current, Current, TailInfo, TailSection, SPOKEN};

mod messages;
mod profiles;
mod strategy_block;
mod system;

pub use messages::build_messages;
pub use profiles::{without_profiles, PROFILE_LABEL};
pub use strategy_block::{last_strategy_block, StrategyBlocks, STRATEGY_BACK, STRATEGY_LABEL};
pub use system::{base_system_prompt, system_message, SPEECH_RULE};

//! The tools homebot ships, one file per concern; the registry (`registry`) offers them
//! in a fixed order. Each is a [`Tool`](super::tool::Tool): an argument struct whose
//! JSON schema is derived, a description, its permissions and the call. The rules they
//! apply live beside the state they guard (`files`/`zones`/`guard`, `memory`, `choice`,
//! `set_strategy`), so a rule can be tested without a turn.

pub mod choice;
pub mod files;
pub mod home;
pub mod memory;
pub mod offer_mode;
pub mod reminders;
pub mod set_strategy;
pub mod switch_mode;

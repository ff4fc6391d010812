//! The scene-memory tools `memory_commit` and `memory_search`: what they know of the
//! turn and their scene rules ([`rules`]), and the tools ([`tool`]).

pub mod rules;
pub mod tool;

pub use rules::*;
pub use tool::{MemoryCommit, MemorySearch};

//! `Agent`: what every turn's agent works with — the provider, the base prompt, the tools
//! and their caps, the modes' knowledge, scene memory, the context window, Home Assistant.

use crate::config::ToolsConfig;
use crate::context::Context;
use crate::provider::Provider;
use crate::tools::{self};
use std::sync::Arc;

pub struct Agent {
    pub provider: Provider,
    pub base_prompt: Arc<str>,
    /// The tools offered to the model (built once at start, in a fixed order).
    pub tools: tools::ToolRegistry,
    pub max_tool_rounds: u32,
    pub normal_history_turns: usize,
    /// `agent.max_reply_chars`.
    pub max_reply_chars: usize,
    /// The caps of `[tools]` on the calls of one response and of one turn.
    pub tool_limits: ToolsConfig,
    /// The modes' knowledge folders, searched for the active mode's snippets.
    pub knowledge: Arc<crate::knowledge::Knowledge>,
    /// Scene memory: recall into the tail, the memory tools, the post-turn observation.
    pub memory: crate::memory::Memory,
    /// The context window, the history budget and compaction.
    pub context: Arc<Context>,
    /// Home Assistant's tools and fast path.
    pub home: Arc<tools::home::HomeAccess>,
}

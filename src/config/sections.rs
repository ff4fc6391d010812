//! The small sections: `[agent]`, `[tools]`, `[cron]` and `[skills]`, with their defaults.

use serde::Deserialize;
use std::path::PathBuf;

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct AgentConfig {
    /// Provider round trips with tool calls allowed in one turn.
    pub max_tool_rounds: u32,
    /// Earlier turns of the same chat sent along outside a mode.
    pub normal_history_turns: usize,
    /// A turn that has not finished after this long is ended with an error reply.
    pub turn_timeout_secs: u64,
    /// Longest user message accepted, in characters.
    pub max_message_chars: usize,
    /// Messages of one chat that may wait behind the one being answered.
    pub max_queued_per_chat: usize,
    /// On shutdown, how long admitted turns get to finish and be recorded.
    pub shutdown_grace_secs: u64,
    /// Longest reply recorded and delivered, in characters; a longer one is cut and marked.
    pub max_reply_chars: usize,
}

impl Default for AgentConfig {
    fn default() -> Self {
        Self {
            max_tool_rounds: 25,
            normal_history_turns: 20,
            turn_timeout_secs: 300,
            max_message_chars: 8000,
            max_queued_per_chat: 16,
            shutdown_grace_secs: 30,
            max_reply_chars: 4000,
        }
    }
}

/// What the model may do with tools in one response, one turn, and to each writable
/// folder: a runaway model asking for thousands of calls or megabytes of files is stopped
/// with a tool error it can read.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ToolsConfig {
    /// Tool calls run from one provider response; the rest get an error result each.
    pub max_calls_per_response: usize,
    /// Tool calls run in one turn, all rounds together.
    pub max_calls_per_turn: usize,
    /// Longest arguments string of one tool call, in bytes.
    pub max_argument_bytes: usize,
    /// Bytes `write_file` may write in one turn.
    pub max_write_bytes_per_turn: u64,
    /// Total size of the files below one writable folder (`notes/`, `cooking/recipes/`).
    pub max_zone_bytes: u64,
    /// Files below one writable folder.
    pub max_zone_files: usize,
}

impl Default for ToolsConfig {
    fn default() -> Self {
        Self {
            max_calls_per_response: 8,
            max_calls_per_turn: 24,
            max_argument_bytes: 512 * 1024,
            max_write_bytes_per_turn: 1024 * 1024,
            max_zone_bytes: 20 * 1024 * 1024,
            max_zone_files: 500,
        }
    }
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct CronConfig {
    /// How often the mode-expiry job runs.
    pub expiry_check_secs: u64,
}

impl Default for CronConfig {
    fn default() -> Self {
        Self {
            expiry_check_secs: 30,
        }
    }
}

#[derive(Debug, Clone, Deserialize, Default)]
#[serde(deny_unknown_fields, default)]
pub struct SkillsConfig {
    /// Extra skill folders, scanned after `<workspace>/skills` and before the built-in ones.
    pub dirs: Vec<PathBuf>,
}

//! The audit record: one JSON line per provider attempt — what the request was made of
//! (the prompt builder's [`PromptShape`]), what it cost (usage, latency, retries) and how
//! it ended — so "why did it answer that" can be traced. Written by the provider through
//! the background [`super::logwriter`]; read back by `homebot audit` / `homebot stats`.
//!
//! Where: in a mode, `<session_dir>/audit.jsonl`; otherwise `logs/audit/YYYY-MM-DD.jsonl`
//! by the household's date.

use super::model::CallMeta;
use super::types::{PromptShape, TurnTag, Usage};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// The audit file of a mode session.
pub const SESSION_AUDIT_FILE: &str = "audit.jsonl";
/// The folder of the dated audit files, below `logs/`.
pub const AUDIT_DIR: &str = "audit";

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AuditRecord {
    /// RFC 3339 in the household's zone, milliseconds.
    pub timestamp: String,
    /// `turn`, `compaction`, `summary`, …
    pub purpose: String,
    #[serde(default)]
    pub model: Option<String>,
    /// The endpoint that took the call: `primary`, `fallback-1`, …; `None` when none
    /// did (the circuit was open) and in records written before it was kept.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider: Option<String>,
    #[serde(default)]
    pub channel: String,
    #[serde(default)]
    pub chat_id: String,
    #[serde(default)]
    pub session_id: Option<String>,
    /// The request's blocks, history range and prefix hash; `None` when the builder did
    /// not say.
    #[serde(default)]
    pub shape: Option<PromptShape>,
    /// Present when the attempt got an answer.
    #[serde(default)]
    pub usage: Option<AuditUsage>,
    pub latency_ms: u64,
    /// Attempts before this one within the same call.
    #[serde(default)]
    pub retries: u32,
    /// `ok`, `error`, or `cancelled` (the turn stopped waiting mid-call).
    pub outcome: String,
    #[serde(default)]
    pub error: Option<String>,
    #[serde(default)]
    pub stream: bool,
    /// The turn this call was made for: every call of one turn carries the same tag.
    /// Absent for background calls and in records written before it was kept.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub turn: Option<TurnTag>,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct AuditUsage {
    pub prompt: u64,
    pub cached: u64,
    pub completion: u64,
    /// The part of `completion` the model spent reasoning, where the server reports it
    /// (OpenAI, DeepSeek); billed as output, so never added to `completion` again.
    /// Absent (0) in older records and for Anthropic, whose thinking is only inside
    /// `completion`.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub reasoning: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

impl From<&Usage> for AuditUsage {
    fn from(u: &Usage) -> Self {
        Self {
            prompt: u.prompt_tokens,
            cached: u.cached(),
            completion: u.completion_tokens,
            reasoning: u.reasoning_tokens.unwrap_or(0),
        }
    }
}

/// Where a call's record goes: the session's file in a mode, else the dated file of
/// `date` (`YYYY-MM-DD`, the household's) below `logs_dir/audit/`. A session folder that
/// no longer exists is not made again for its audit file (recovery would take a folder
/// holding only that for a broken session): the record goes to the dated file.
pub fn audit_path(meta: &CallMeta, logs_dir: &Path, date: &str) -> PathBuf {
    match &meta.session_dir {
        Some(dir) if dir.is_dir() => dir.join(SESSION_AUDIT_FILE),
        _ => logs_dir.join(AUDIT_DIR).join(format!("{date}.jsonl")),
    }
}

//! What a turn's tools returned that matters later, as its record keeps it
//! ([`super::Record::tool_results`]), and the one line each result is shown as wherever the
//! history is read again: the next request's `[工具结果]` block
//! ([`crate::agent::tool_results`]), a compaction's dialogue and the summary's transcript —
//! so "定在几点" can still be answered after the turn that set it was compacted or the mode
//! ended.

use super::{defang, Record};
use serde::{Deserialize, Serialize};

/// Tool results a turn's record keeps, at most.
pub const MAX_KEPT_RESULTS: usize = 3;
/// The longest tool result kept (characters; a longer one is cut, marked with "…").
pub const MAX_KEPT_RESULT_CHARS: usize = 500;

/// A tool result a turn's record keeps for later turns.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct KeptResult {
    /// The tool's name (`set_reminder`).
    pub tool: String,
    /// What it returned, cut to [`MAX_KEPT_RESULT_CHARS`].
    pub result: String,
}

impl KeptResult {
    /// `result` of `tool`, cut to the bound.
    pub fn new(tool: &str, result: &str) -> Self {
        Self {
            tool: tool.chars().take(64).collect(),
            result: cut(result.trim(), MAX_KEPT_RESULT_CHARS),
        }
    }
}

/// `text` cut to `max` characters, the last one "…" when it was longer.
fn cut(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        return text.to_string();
    }
    let mut out: String = text.chars().take(max.saturating_sub(1)).collect();
    out.push('…');
    out
}

impl Record {
    /// Each kept result of this record as one line: when the turn was said, the tool,
    /// what it returned (one line, bounded, its brackets defanged — a result may quote
    /// what anyone wrote). At most [`MAX_KEPT_RESULTS`].
    pub fn kept_lines(&self) -> impl Iterator<Item = String> + '_ {
        let clock = self.clock().unwrap_or("--:--");
        self.tool_results
            .iter()
            .take(MAX_KEPT_RESULTS)
            .map(move |k| k.line(clock))
    }
}

impl KeptResult {
    /// This result as one line of a turn said at `clock` ("— 18:05 set_reminder：提醒 #1 …").
    pub fn line(&self, clock: &str) -> String {
        let result: String = self
            .result
            .chars()
            .take(MAX_KEPT_RESULT_CHARS)
            .map(|c| if c.is_control() { ' ' } else { c })
            .collect();
        let tool: String = self.tool.chars().take(64).collect();
        format!("— {clock} {}：{}", defang(&tool), defang(result.trim()))
    }
}

//! `[context]`: the model's context window and compaction. The window is the whole
//! context in tokens (input + output); the input budget is the window minus the output
//! reserve (`provider.max_tokens`). `HOMEBOT_CONTEXT_WINDOW` overrides every window.

use serde::Deserialize;
use std::collections::BTreeMap;

/// The window assumed when nothing says otherwise: DeepSeek's chat models take 64K;
/// a smaller local model needs `window_tokens` (or `HOMEBOT_CONTEXT_WINDOW`).
pub const DEFAULT_WINDOW_TOKENS: u32 = 65_536;
/// Bounds of any window, configured or from the environment.
pub const MIN_WINDOW_TOKENS: u32 = 512;
pub const MAX_WINDOW_TOKENS: u32 = 10_000_000;
/// The input budget must leave at least this much after the output reserve.
pub const MIN_INPUT_TOKENS: u32 = 256;
/// The most a normal chat's block about a mode session that just ended may take.
pub const DEFAULT_CARRY_OVER_TOKENS: u32 = 600;
/// The largest `carry_over_tokens` accepted.
pub const MAX_CARRY_OVER_TOKENS: u32 = 8_000;

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ContextConfig {
    /// The model's whole context window in tokens, for every model not in `models`.
    pub window_tokens: Option<u32>,
    /// Per model name (`provider.model`): its window in tokens.
    pub models: BTreeMap<String, u32>,
    /// Summarize older rounds of a mode session into a checkpoint (else only trim).
    pub compaction: bool,
    /// Replayed history (in % of the history budget) above which a mode session is
    /// compacted, unless its `mode.json` sets `context.summary_threshold_tokens`.
    pub compact_at_percent: u32,
    /// After a mode session ends, the chats that took part carry its summary (or, until
    /// the summary is written, its last turns) for a day in at most this many tokens;
    /// 0 turns it off.
    pub carry_over_tokens: u32,
    /// How earlier user messages are replayed: exactly as they were sent (`exact`, the
    /// default: each request holds the previous turn's request whole, what DeepSeek's
    /// cache units need), or as time, speaker and words only (`lean`: fewer tokens, for
    /// caches that match any common prefix).
    pub replay: Replay,
}

/// How a request replays the user messages of earlier turns.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Replay {
    /// Each earlier user message exactly as its turn sent it: the time, the speaker,
    /// the words, the short `[上下文]` block and the snippets sent with it.
    #[default]
    Exact,
    /// Each earlier user message as `HH:MM 说话人：原话`; the tail is sent in its own
    /// turn only.
    Lean,
}

impl Default for ContextConfig {
    fn default() -> Self {
        Self {
            window_tokens: None,
            models: BTreeMap::new(),
            compaction: true,
            compact_at_percent: 50,
            carry_over_tokens: DEFAULT_CARRY_OVER_TOKENS,
            replay: Replay::Exact,
        }
    }
}

impl ContextConfig {
    /// Every value in range: `(key, message)` of the first that is not.
    pub fn check(&self) -> Result<(), (String, String)> {
        let range = MIN_WINDOW_TOKENS..=MAX_WINDOW_TOKENS;
        if let Some(w) = self.window_tokens.filter(|w| !range.contains(w)) {
            return Err((
                "context.window_tokens".into(),
                format!("must be {MIN_WINDOW_TOKENS}..={MAX_WINDOW_TOKENS}, got {w}"),
            ));
        }
        for (m, w) in &self.models {
            if !range.contains(w) {
                return Err((
                    format!("context.models.{m}"),
                    format!("must be {MIN_WINDOW_TOKENS}..={MAX_WINDOW_TOKENS}, got {w}"),
                ));
            }
        }
        if !(10..=90).contains(&self.compact_at_percent) {
            return Err((
                "context.compact_at_percent".into(),
                format!("must be 10..=90, got {}", self.compact_at_percent),
            ));
        }
        if self.carry_over_tokens > MAX_CARRY_OVER_TOKENS {
            return Err((
                "context.carry_over_tokens".into(),
                format!(
                    "must be 0..={MAX_CARRY_OVER_TOKENS}, got {}",
                    self.carry_over_tokens
                ),
            ));
        }
        Ok(())
    }

    /// The window for `model`: `HOMEBOT_CONTEXT_WINDOW` (`env`), else the model's entry,
    /// else `window_tokens`, else [`DEFAULT_WINDOW_TOKENS`].
    pub fn window_for(&self, model: Option<&str>, env: Option<&str>) -> Result<u32, WindowError> {
        if let Some(v) = env.map(str::trim).filter(|v| !v.is_empty()) {
            let w: u32 = v
                .parse()
                .map_err(|_| WindowError::EnvNotANumber(v.to_string()))?;
            if !(MIN_WINDOW_TOKENS..=MAX_WINDOW_TOKENS).contains(&w) {
                return Err(WindowError::EnvOutOfRange(w));
            }
            return Ok(w);
        }
        Ok(model
            .and_then(|m| self.models.get(m).copied())
            .or(self.window_tokens)
            .unwrap_or(DEFAULT_WINDOW_TOKENS))
    }
}

/// Why the context window or the input budget cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum WindowError {
    #[error("HOMEBOT_CONTEXT_WINDOW must be a number of tokens, got {0:?}")]
    EnvNotANumber(String),
    #[error("HOMEBOT_CONTEXT_WINDOW must be {min}..={max}, got {0}", min = MIN_WINDOW_TOKENS, max = MAX_WINDOW_TOKENS)]
    EnvOutOfRange(u32),
    #[error("the context window ({window} tokens) leaves no room for input after provider.max_tokens ({max_tokens}); at least {min} tokens are needed: raise the window or lower max_tokens", min = MIN_INPUT_TOKENS)]
    NoRoomForInput { window: u32, max_tokens: u32 },
}

/// The input budget: the window minus the output reserve, refused when too small.
pub fn input_budget(window: u32, max_tokens: u32) -> Result<u32, WindowError> {
    match window.checked_sub(max_tokens) {
        Some(i) if i >= MIN_INPUT_TOKENS => Ok(i),
        _ => Err(WindowError::NoRoomForInput { window, max_tokens }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn window_resolution_order_and_bounds() {
        let mut c = ContextConfig::default();
        assert_eq!(c.window_for(None, None), Ok(DEFAULT_WINDOW_TOKENS));
        c.window_tokens = Some(8192);
        c.models.insert("big".into(), 128_000);
        assert_eq!(c.window_for(Some("small"), None), Ok(8192));
        assert_eq!(c.window_for(Some("big"), None), Ok(128_000));
        assert_eq!(c.window_for(Some("big"), Some(" 3000 ")), Ok(3000));
        assert!(c
            .window_for(None, Some("lots"))
            .unwrap_err()
            .to_string()
            .contains("HOMEBOT_CONTEXT_WINDOW"));
        assert!(c.window_for(None, Some("100")).is_err());
        assert!(c.window_for(None, Some("99999999999")).is_err());
        assert!(c.check().is_ok());
        c.models.insert("tiny".into(), 10);
        assert_eq!(c.check().unwrap_err().0, "context.models.tiny");
    }

    #[test]
    fn input_budget_leaves_room_for_the_answer() {
        assert_eq!(input_budget(8192, 1024), Ok(7168));
        assert!(input_budget(4096, 4096).is_err());
        assert!(input_budget(4200, 4096).is_err());
    }
}

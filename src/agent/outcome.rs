//! How a turn ended (`AgentOutcome`), and the reply capped at `agent.max_reply_chars` with
//! a visible mark.

use crate::turn::TurnError;

/// What ends a reply cut at `agent.max_reply_chars`.
pub const TRUNCATION_MARK: &str = "…（回答过长，已截断）";

/// `text` cut to at most `max_chars` characters, the mark included, when it is longer.
pub fn cap_reply(text: String, max_chars: usize) -> String {
    if text.chars().count() <= max_chars {
        return text;
    }
    let keep = max_chars.saturating_sub(TRUNCATION_MARK.chars().count());
    let mut out: String = text.chars().take(keep).collect();
    out.push_str(TRUNCATION_MARK);
    out
}

/// How a turn ended (by default: an empty reply, no error).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct AgentOutcome {
    pub reply: String,
    /// Why the turn failed, if it did (the reply then explains it to the user).
    pub error: Option<TurnError>,
}

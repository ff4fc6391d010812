//! The `[策略]` block: its label, the note that the household switched back to the system
//! message's strategy (`STRATEGY_BACK`), and the last such block a message holds.

use super::tail::TailSection;

/// The label of a strategy's block (the standing one ends the system message).
pub const STRATEGY_LABEL: &str = "策略";

/// What a message says once the household switched back to the standing strategy while
/// the replayed window still holds a switched strategy's block.
pub const STRATEGY_BACK: &str = "家里人切回了系统消息里的 [策略]；之前消息里的 [策略] 块不再适用。";

/// The strategy blocks of a turn: the standing one (the end of the system message) and,
/// when the household switched, the one in force.
#[derive(Debug, Clone, Copy, Default)]
pub struct StrategyBlocks<'a> {
    pub standing: Option<&'a TailSection>,
    pub switched: Option<&'a TailSection>,
}

/// The body of the last `[策略]` block in `message`, if it has one.
pub fn last_strategy_block(message: &str) -> Option<&str> {
    let open = format!("[{STRATEGY_LABEL}]\n");
    let close = format!("\n[/{STRATEGY_LABEL}]");
    let at = message.rfind(&open)? + open.len();
    let len = message[at..].find(&close)?;
    Some(&message[at..at + len])
}

//! What instruments the modes (entries, and exits by reason) and the actors (the runs
//! of their handlers on their state).

use super::registry::Counter;
use super::series::m;
use std::sync::Arc;

/// The exit reasons written in `exit.json`; anything else is counted as `other`.
const EXIT_REASONS: &[&str] = &["user", "expired", "recovered"];

/// A mode session began.
pub fn mode_entered(mode_id: &str) {
    m().mode_entries.get([mode_id]).inc();
}

/// A mode session was archived, for `reason` (`user`, `expired`, `recovered`).
pub fn mode_exited(mode_id: &str, reason: &str) {
    let reason = EXIT_REASONS
        .iter()
        .find(|r| **r == reason)
        .copied()
        .unwrap_or(super::registry::OTHER);
    m().mode_exits.get([mode_id, reason]).inc();
}

/// The counter of the runs of `actor`'s handlers on its supervised state (a message
/// handled makes one, or a few), looked up once by the actor's supervisor: `actor` is its
/// name in errors ("the QQ channel"), counted without the article ("QQ channel").
pub fn actor_state_runs(actor: &'static str) -> Arc<Counter> {
    let label = actor.strip_prefix("the ").unwrap_or(actor);
    m().actor_state_runs.get([label])
}

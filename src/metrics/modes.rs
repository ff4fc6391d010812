//! What instruments the modes: entries, and exits by reason.

use super::series::m;

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

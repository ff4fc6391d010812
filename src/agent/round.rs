//! What one tool loop over a prepared request did, as a value ([`Round`], made by
//! `Agent::round` in `tool_loop`) — its outcome, the tools called, the request sent. A strategy folds its
//! rounds into the turn's result; nothing comes back through shared state.

use super::AgentOutcome;

/// What one round did.
#[derive(Debug, Clone, PartialEq)]
pub struct Round {
    pub outcome: AgentOutcome,
    /// The tools called in the turn's part of the request as the round left it (after the
    /// first request's messages: a replayed question's call included), in order.
    pub called: Vec<String>,
    /// The request's user message as sent, without its aside (`Prepared::sent`);
    /// `None`: the request could not be sent.
    pub sent: Option<String>,
    /// The tool results this round kept for later turns.
    pub kept: Vec<crate::history::KeptResult>,
}

//! [`Agent::round`]: one tool loop over a prepared request, and what it did as a value
//! ([`Round`]) — its outcome, the tools called, the request sent. A strategy folds its
//! rounds into the turn's result; nothing comes back through shared state.

use super::{tools_called, Agent, AgentOutcome, Prepared};

/// What one round did.
#[derive(Debug, Clone, PartialEq)]
pub struct Round {
    pub outcome: AgentOutcome,
    /// The tools called in the turn's part of the request as the round left it (after the
    /// first request's messages: a replayed question's call included), in order.
    pub called: Vec<String>,
    /// The request's user message as sent, without its aside ([`Prepared::sent`]);
    /// `None`: the request could not be sent.
    pub sent: Option<String>,
}

impl Agent {
    /// The tool loop over `p` at `max_rounds` (see [`Agent::tool_loop`]), and what it did.
    pub async fn round(&self, p: &mut Prepared, max_rounds: u32) -> Round {
        let outcome = self.tool_loop(p, max_rounds).await;
        let from = p.turn_from.min(p.messages.len());
        Round {
            outcome,
            called: tools_called(&p.messages[from..]),
            sent: p.sent.clone(),
        }
    }
}

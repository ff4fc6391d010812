//! [`TurnResult`]: what a turn came to, the one value that goes from the strategy to the
//! kernel's record — the outcome, whether the reply waits for an answer, the request
//! sent, the words the record keeps, the tools called. A flow folds its rounds
//! ([`crate::agent::Round`]) into it; the kernel makes one of its own for a turn it
//! stopped (cancelled, timed out, shut down) or answered on Home Assistant's fast path.

use crate::agent::{AgentOutcome, Prepared, Round};
use crate::turn::TurnError;

/// What a turn came to, before it is recorded.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TurnResult {
    pub outcome: AgentOutcome,
    /// The reply is a question that waits for an answer (voice keeps listening).
    pub awaits_answer: bool,
    /// The turn's first user message as sent (without its aside): the record keeps it,
    /// so exact replay sends it again. `None`: the turn sent no request.
    pub sent: Option<String>,
    /// What the turn's record keeps as the user's words, when not their text as it came
    /// (an accepted offer keeps the question it answered with it).
    pub recorded_user: Option<String>,
    /// The tools the turn called, each once, in the order first called (for scene memory).
    pub called: Vec<String>,
    /// The sender cancelled the turn (only the kernel stops a turn so).
    pub cancelled: bool,
    /// The tool results the record keeps for later turns (its rounds', bounded).
    pub kept: Vec<crate::history::KeptResult>,
}

impl TurnResult {
    /// A turn that ended in `outcome`, with no request sent.
    pub fn done(outcome: AgentOutcome) -> Self {
        Self {
            outcome,
            ..Self::default()
        }
    }

    /// A turn answered with `reply`, with no request sent.
    pub fn say(reply: impl Into<String>, awaits_answer: bool) -> Self {
        Self::default().saying(reply, awaits_answer)
    }

    /// A turn the kernel stopped before it was answered.
    pub fn stopped(reply: &str, error: TurnError, cancelled: bool) -> Self {
        Self {
            outcome: AgentOutcome {
                reply: reply.into(),
                error: Some(error),
            },
            cancelled,
            ..Self::default()
        }
    }

    /// `round` folded in: its outcome is the turn's now, its tools join the turn's, and
    /// its request is the turn's if the turn had sent none before.
    pub fn fold(&mut self, round: Round) {
        self.outcome = round.outcome;
        for tool in round.called {
            if !self.called.contains(&tool) {
                self.called.push(tool);
            }
        }
        if self.sent.is_none() {
            self.sent = round.sent;
        }
        let room = crate::history::MAX_KEPT_RESULTS.saturating_sub(self.kept.len());
        self.kept.extend(round.kept.into_iter().take(room));
    }

    /// The same turn answered with `reply` instead (what its rounds did stays).
    pub fn saying(mut self, reply: impl Into<String>, awaits_answer: bool) -> Self {
        self.outcome = AgentOutcome {
            reply: reply.into(),
            error: None,
        };
        self.awaits_answer = awaits_answer;
        self
    }

    /// The same turn, which sent `p`'s request if it had sent none before (a flow whose
    /// requests went without a tool loop).
    pub fn requested(mut self, p: &Prepared) -> Self {
        if self.sent.is_none() {
            self.sent.clone_from(&p.sent);
        }
        self
    }
}

impl From<Round> for TurnResult {
    fn from(round: Round) -> Self {
        let mut r = Self::default();
        r.fold(round);
        r
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::turn::Failure;

    fn round(reply: &str, called: &[&str], sent: Option<&str>) -> Round {
        Round {
            outcome: AgentOutcome {
                reply: reply.into(),
                error: None,
            },
            called: called.iter().map(|s| s.to_string()).collect(),
            sent: sent.map(str::to_string),
            kept: Vec::new(),
        }
    }

    #[test]
    fn a_flows_rounds_fold_into_one_result() {
        // a plan run step by step: each round over the same request sees the turn's
        // calls so far; the summary round ends in an error
        let mut r = TurnResult::default();
        r.fold(round(
            "第一步做完了",
            &["home_state"],
            Some("09:00 妈妈：确认"),
        ));
        r.fold(round(
            "第二步做完了",
            &["home_state", "home_call", "home_state"],
            Some("09:00 妈妈：确认"),
        ));
        let mut last = round("…", &["home_state", "home_call", "remind"], None);
        last.outcome.error = Some(TurnError::new(Failure::Provider, "503"));
        r.fold(last.clone());
        assert_eq!(r.called, ["home_state", "home_call", "remind"]);
        assert_eq!(r.sent.as_deref(), Some("09:00 妈妈：确认"));
        assert_eq!(
            r.outcome, last.outcome,
            "the last round's outcome is the turn's"
        );
        assert!(!r.awaits_answer && !r.cancelled && r.recorded_user.is_none());
        // answered otherwise, what the rounds did stays
        let said = r.saying("计划已执行完", false);
        assert_eq!(said.outcome.reply, "计划已执行完");
        assert_eq!(said.outcome.error, None);
        assert_eq!(said.called, ["home_state", "home_call", "remind"]);
        assert_eq!(said.sent.as_deref(), Some("09:00 妈妈：确认"));
    }

    #[test]
    fn a_result_without_rounds_sent_nothing() {
        let r = TurnResult::say("好，已取消这个计划。", false);
        assert_eq!((r.sent, r.called.len()), (None, 0));
        let r = TurnResult::stopped(
            "（已取消这一轮。）",
            TurnError::new(Failure::Internal, "x"),
            true,
        );
        assert!(r.cancelled && r.outcome.error.is_some() && !r.awaits_answer);
    }
}

//! `Reply`: what the kernel sends back for a turn, its text and how the turn ended.

use super::outcome::{Failure, Outcome, Refusal};
use serde::{Deserialize, Serialize};

/// The kernel's answer to a turn: the words for the user and how the turn ended.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Reply {
    pub text: String,
    /// How the turn ended; `text` explains it to the user when it is not `Answered`.
    #[serde(default)]
    pub outcome: Outcome,
    /// The reply asks something the chat's next message answers (an `ask_user_choice`
    /// question, a plan waiting for confirmation): voice keeps listening.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub awaits_answer: bool,
}

impl Reply {
    pub fn new(text: impl Into<String>, outcome: Outcome) -> Self {
        Self {
            text: text.into(),
            outcome,
            awaits_answer: false,
        }
    }
    pub fn ok(text: impl Into<String>) -> Self {
        Self::new(text, Outcome::Answered)
    }
    pub fn failed(text: impl Into<String>, error: Failure, detail: impl Into<String>) -> Self {
        Self::new(text, Outcome::failed(error, detail))
    }
    pub fn refused(text: impl Into<String>, reason: Refusal, detail: impl Into<String>) -> Self {
        Self::new(text, Outcome::refused(reason, detail))
    }
    pub fn cancelled(text: impl Into<String>) -> Self {
        Self::new(text, Outcome::Cancelled)
    }
    /// What went wrong, when the turn was not answered (see [`Outcome::problem`]).
    pub fn problem(&self) -> Option<String> {
        self.outcome.problem()
    }
    pub fn is_answered(&self) -> bool {
        self.outcome.is_answered()
    }
}

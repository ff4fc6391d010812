//! How a turn ended, as a type: answered, refused (and why), failed (and what kind of
//! failure), or cancelled by its sender. The kernel decides the outcome; the words a user
//! reads or hears are the reply's `text`, and each channel renders the outcome at its
//! edge (the CLI's exit status, voice's "cancelled" silence, the metrics' labels).

use serde::{Deserialize, Serialize};
use std::fmt;

/// The verdict on one turn. On the control socket's wire it is tagged by `kind`:
/// `{"kind":"failed","error":"timeout","detail":"turn exceeded 300 s"}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Outcome {
    /// The turn ran and the reply is its answer.
    #[default]
    Answered,
    /// The turn was not run: the reply says why and what to do instead.
    Refused {
        reason: Refusal,
        #[serde(default)]
        detail: String,
    },
    /// The turn ran (or began to) and did not succeed.
    Failed {
        error: Failure,
        #[serde(default)]
        detail: String,
    },
    /// Its sender cancelled it (a new wake word, Ctrl-C) before the answer was complete.
    Cancelled,
}

/// Why a turn was refused before it ran.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Refusal {
    /// The message was empty.
    Empty,
    /// The message was over `agent.max_message_chars`.
    TooLong,
    /// The chat's queue was full (`agent.max_queued_per_chat`).
    Busy,
    /// The gateway is shutting down and admits no new turns.
    ShuttingDown,
    /// A slash command was malformed, named something unknown, or was not allowed here.
    Command,
    /// The mode manager is restarting after a failure; try again shortly.
    Recovering,
    /// The disk is full, so the turn could not be recorded and was not run.
    DiskFull,
    /// A request at a door (the control socket) was malformed.
    BadRequest,
}

/// What kind of failure a turn met.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Failure {
    /// The model could not be reached or answered unusably (empty, a round limit).
    Provider,
    /// The request would not fit the model's context window.
    Context,
    /// The turn's watchdog fired.
    Timeout,
    /// The answer was given but not recorded (or saving the turn's state failed).
    Storage,
    /// A service the turn needed is not there (a stopped actor, an unreachable gateway).
    Unavailable,
    /// A bug or an internal error: a panicked task, a worker that vanished.
    Internal,
}

impl Outcome {
    pub fn failed(error: Failure, detail: impl Into<String>) -> Self {
        Outcome::Failed {
            error,
            detail: detail.into(),
        }
    }

    pub fn refused(reason: Refusal, detail: impl Into<String>) -> Self {
        Outcome::Refused {
            reason,
            detail: detail.into(),
        }
    }

    pub fn is_answered(&self) -> bool {
        matches!(self, Outcome::Answered)
    }

    /// A short, stable label: `answered`, `refused`, `failed`, `cancelled` (for logs and
    /// metrics; the full outcome's `Display` says more).
    pub fn label(&self) -> &'static str {
        match self {
            Outcome::Answered => "answered",
            Outcome::Refused { .. } => "refused",
            Outcome::Failed { .. } => "failed",
            Outcome::Cancelled => "cancelled",
        }
    }

    /// What went wrong, for a log line or a terminal's error stream: `None` when answered.
    pub fn problem(&self) -> Option<String> {
        (!self.is_answered()).then(|| self.to_string())
    }
}

impl fmt::Display for Outcome {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (kind, detail) = match self {
            Outcome::Answered => return f.write_str("answered"),
            Outcome::Cancelled => return f.write_str("cancelled by the user"),
            Outcome::Refused { reason, detail } => (reason.as_str(), detail),
            Outcome::Failed { error, detail } => (error.as_str(), detail),
        };
        if detail.is_empty() {
            f.write_str(kind)
        } else {
            write!(f, "{kind}: {detail}")
        }
    }
}

impl Refusal {
    pub fn as_str(self) -> &'static str {
        match self {
            Refusal::Empty => "empty message",
            Refusal::TooLong => "message too long",
            Refusal::Busy => "chat queue full",
            Refusal::ShuttingDown => "shutting down",
            Refusal::Command => "command refused",
            Refusal::Recovering => "recovering",
            Refusal::DiskFull => "disk full",
            Refusal::BadRequest => "bad request",
        }
    }
}

impl Failure {
    pub fn as_str(self) -> &'static str {
        match self {
            Failure::Provider => "provider failed",
            Failure::Context => "over the context window",
            Failure::Timeout => "timed out",
            Failure::Storage => "not recorded",
            Failure::Unavailable => "unavailable",
            Failure::Internal => "internal error",
        }
    }
}

/// An agent-level failure: its kind and what happened (the text a conversation record's
/// `error` field keeps).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TurnError {
    pub kind: Failure,
    pub detail: String,
}

impl TurnError {
    pub fn new(kind: Failure, detail: impl Into<String>) -> Self {
        Self {
            kind,
            detail: detail.into(),
        }
    }
}

impl fmt::Display for TurnError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.detail)
    }
}

impl From<TurnError> for Outcome {
    fn from(e: TurnError) -> Self {
        Outcome::failed(e.kind, e.detail)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_wire_form_is_tagged_and_round_trips() {
        let o = Outcome::failed(Failure::Timeout, "turn exceeded 300 s");
        let v = serde_json::to_value(&o).unwrap();
        assert_eq!(
            v,
            serde_json::json!({"kind":"failed","error":"timeout","detail":"turn exceeded 300 s"})
        );
        assert_eq!(serde_json::from_value::<Outcome>(v).unwrap(), o);
        let r = Outcome::refused(Refusal::Busy, "3 waiting");
        assert_eq!(
            serde_json::to_value(&r).unwrap(),
            serde_json::json!({"kind":"refused","reason":"busy","detail":"3 waiting"})
        );
        assert_eq!(
            serde_json::to_value(Outcome::Cancelled).unwrap(),
            serde_json::json!({"kind":"cancelled"})
        );
    }

    #[test]
    fn labels_and_problems() {
        assert_eq!(Outcome::Answered.label(), "answered");
        assert_eq!(Outcome::Answered.problem(), None);
        assert_eq!(
            Outcome::refused(Refusal::TooLong, "").problem().as_deref(),
            Some("message too long")
        );
        assert_eq!(
            Outcome::failed(Failure::Provider, "HTTP 500").to_string(),
            "provider failed: HTTP 500"
        );
        assert_eq!(Outcome::Cancelled.label(), "cancelled");
    }
}

//! A turn made ready for the provider (`Prepared`): the messages, the tools' environment,
//! the call's metadata, and the budget the tool loop keeps to.

use super::AgentOutcome;
use crate::provider::{CallMeta, Depth, Message};
use crate::tools::ToolEnv;

/// A turn made ready for the provider by [`super::Agent::prepare`].
pub struct Prepared {
    /// The messages sent: system, history, the current user message, then this turn's
    /// assistant messages and tool results as they come.
    pub messages: Vec<Message>,
    pub env: ToolEnv,
    pub meta: CallMeta,
    /// Set when the turn cannot be sent at all (the system prompt, the tools and the
    /// message alone pass the window): the tool loop answers this instead.
    pub refused: Option<AgentOutcome>,
    /// The first request by the bare tokenizer, to calibrate against reported usage.
    pub counted: u64,
    /// The first request's budgeted size; the tool loop adds what each round adds and
    /// stops before a request would pass the input budget.
    pub tokens: u32,
    /// The turn's partial-text sink (see [`crate::turn::Partials`]).
    pub partials: Option<crate::turn::Partials>,
    /// The current user message as sent, without its aside: the record's `sent`.
    pub sent: Option<String>,
    /// Where the turn's own messages start in `messages` (after the first request's):
    /// the tools called are counted from here.
    pub turn_from: usize,
    /// The reasoning depth every call of this turn asks for (the strategy's preset sets
    /// it; `None`: the model as configured).
    pub depth: Option<Depth>,
    /// The results this turn's tools returned that the record keeps (the tools say
    /// which), at most [`crate::history::MAX_KEPT_RESULTS`].
    pub kept: Vec<crate::history::KeptResult>,
}

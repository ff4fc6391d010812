//! The per-turn agent: builds the prompt from a [`TurnTicket`], calls the provider, runs
//! tool calls (capped at `max_tool_rounds` round trips), and returns the final reply.
//! It runs outside every actor; it holds no lock and no mailbox while the LLM thinks.
//!
//! What a runaway model can make it do is bounded: at most `tools.max_calls_per_response`
//! calls of one response and `tools.max_calls_per_turn` of the turn are run — every other
//! call still gets a result (an error), as the protocol requires one per `tool_call_id` —
//! and the reply recorded and delivered is at most `agent.max_reply_chars` characters,
//! cut with a visible mark.
//!
//! Layout: `handle` — the `Agent` every turn shares, and its methods but the loop's: the
//! first request (`prepared`: what it makes ready) and the observation and compaction
//! after a turn; `tool_loop` — the capped tool loop, one round at a time (`round`: what a
//! round did, as a value); `turn_ctx` — one turn's context, built once; `outcome` — how a
//! turn ended and the reply's cap; `recall` — the memories a turn recalls, by scene and
//! by wording, and where their blocks go; `tool_results` — the `[工具结果]` block of
//! the tool results earlier turns kept; `shape` — what the audit records of the
//! requests.
//!
//! [`TurnTicket`]: crate::modes::TurnTicket

mod round;
mod tool_loop;
mod turn_ctx;
pub use turn_ctx::TurnCtx;
#[cfg(test)]
mod tests;

mod handle;
mod outcome;
mod prepared;
mod recall;
mod shape;
mod tool_results;

pub use handle::Agent;
pub use outcome::{cap_reply, AgentOutcome, TRUNCATION_MARK};
pub use prepared::Prepared;
pub use round::Round;
pub use shape::{prompt_shape, tools_called};

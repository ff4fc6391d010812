//! Process-wide metrics in the Prometheus text format (`GET /metrics`).
//!
//! One registry per process, over atomics: the kernel counts turns where a turn's reply
//! is known (`kernel::chat_worker`), the provider counts calls, tokens and money where
//! it writes its audit record (`provider::ledger`), the mode manager counts entries and
//! archived exits. The hot path is a few relaxed atomics per turn and per call, no
//! allocation: a provider's series are looked up once when the provider is made, a
//! channel's under a short lock per turn.
//!
//! Label values come from code or configuration only — channel names, outcomes, the
//! endpoint names (`primary`, `fallback-1`, …), configured model names, currencies, mode
//! ids and exit reasons — never from a peer, and every labelled family is capped anyway
//! (past its cap a new label set is counted as `other`).
//!
//! - [`registry`] — counters, gauges, histograms, bounded label families;
//! - [`text`] — the exposition format; [`parse`] — a strict reader of it, for tests;
//! - `series` — the series homebot keeps; what instruments them: `turns`, `provider`,
//!   `modes`; [`exposition`] — the families they are written as ([`render`]).

mod exposition;
#[doc(hidden)]
pub mod parse;
pub mod registry;
pub mod text;
pub use exposition::{channel_states, render, render_text};
pub use text::{Family, Kind, Sample, Value, CONTENT_TYPE};
#[cfg(test)]
mod tests;

mod modes;
mod provider;
mod series;
mod turns;

pub use modes::{actor_state_runs, mode_entered, mode_exited};
pub use provider::{provider_refused, CallEnd, CostCounters, ProviderMeter};
pub use series::{mark_start, CALL_BUCKETS, MAX_TOKENS_PER_CALL, TURN_BUCKETS};
pub use turns::{turn_refused, turns_of, Queued, Running, TurnCounters, TurnOutcome};

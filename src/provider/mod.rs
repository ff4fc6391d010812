//! The Provider: the LLM behind the kernel, an actor behind a handle.
//!
//! - [`handle`] — [`Provider`], the handle the kernel, the agent and the summarizer hold:
//!   `complete`, `complete_with` (streamed deltas), `summary`, `flush`, `circuit_line`, …;
//! - [`actor`] — the provider actor: owns the endpoints (HTTP clients and concurrency
//!   slots), the retry policy and the usage/audit writer, and alone the circuit breaker
//!   of each endpoint ([`breaker`]); it answers `Admit` (which endpoint takes a call, or
//!   a fast failure while every circuit is open) and `Report` (how a call ended), and
//!   publishes the circuits after each change;
//! - [`call`] — one call: admission, attempts with backoff, the report and the token
//!   calibration hand-off. **How calls run concurrently:** the actor never awaits a
//!   call. The call runs as a future in the caller's own task over the state the actor
//!   shares (an `Arc`: the endpoints, their slots, the writer) — the request stays
//!   borrowed, not copied; a cancelled turn drops it mid-flight as before; the mailbox
//!   holds at most two short messages per call. While the primary's circuit is closed
//!   (the published state says so) a call needs no admission, and an answer that changes
//!   nothing is not reported, so the common call neither waits for the actor's thread
//!   nor wakes it; a failure's report is waited for, so the next call sees the circuit
//!   it opened. The actor runs
//!   on a thread of its own, so an admission never waits behind the
//!   ModeManager's fsyncs;
//! - [`backend`] — one endpoint: `primary`, or `fallback-1`, … from
//!   `[[provider.fallback]]`, with its [`slots`] (turns first: a compaction or summary
//!   never takes a slot a turn is waiting for); [`ledger`] — the usage line and audit record of a call,
//!   naming the endpoint that answered;
//! - [`openai`] — OpenAI-compatible chat completions (DeepSeek, llama.cpp, Ollama, …),
//!   [`openai_wire`] its answers, [`openai_stream`] its streamed answers;
//! - [`anthropic`] — Anthropic Messages with prompt-cache breakpoints,
//!   [`anthropic_stream`] its answers and events;
//! - [`encode`] — request bodies as bytes, old messages' bytes reused; [`sse`] — the
//!   event-stream reader; [`http`] — what both dialects do the same over HTTP;
//! - [`audit`] — the per-attempt audit record; [`logwriter`] — the background thread
//!   that appends (and batches the fsyncs of) the usage and audit lines;
//! - [`model`] — what a backend is ([`ChatModel`]) and what a caller hands a call
//!   ([`CallMeta`], [`DeltaSink`]); [`types`] — the provider-neutral request and
//!   response; [`error`] — what can go wrong, as the user is told it, and bounded body
//!   reads.
//!
//! Imports inside the module run one way: this file only declares and re-exports; each
//! file names the file it takes from (`super::types::…`), never this one.

pub mod actor;
pub mod anthropic;
pub mod anthropic_stream;
pub mod audit;
pub mod backend;
pub mod breaker;
pub mod call;
pub mod encode;
pub mod error;
pub mod handle;
pub mod http;
pub mod ledger;
pub mod logwriter;
pub mod model;
pub mod openai;
pub mod openai_stream;
pub mod openai_wire;
pub mod slots;
pub mod sse;
pub mod types;

pub use actor::CircuitView;
pub use call::MAX_RETRY_WAIT;
pub use error::*;
pub use handle::Provider;
pub use model::*;
pub use types::*;

#[cfg(test)]
mod depth_tests;
#[cfg(test)]
mod tests;

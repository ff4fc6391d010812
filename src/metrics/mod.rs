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
//! - this file — the series homebot keeps and what instruments them; [`exposition`] —
//!   the families they are written as ([`render`]).

#[doc(hidden)]
pub mod parse;
pub mod registry;
pub mod text;

mod exposition;
pub use exposition::{channel_states, render, render_text};

use crate::config::Price;
use registry::{Counter, Gauge, Histogram, Labeled};
use std::sync::{Arc, LazyLock, OnceLock};
use std::time::{Duration, Instant, SystemTime};
pub use text::{Family, Kind, Sample, Value, CONTENT_TYPE};

/// Upper bounds of the turn latency buckets, seconds (a turn may run tools and several
/// calls; the watchdog stops it at `agent.turn_timeout_secs`, 300 by default).
pub const TURN_BUCKETS: &[f64] = &[
    0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 20.0, 30.0, 60.0, 120.0, 300.0,
];
/// Upper bounds of the provider call latency buckets, seconds.
pub const CALL_BUCKETS: &[f64] = &[
    0.05, 0.1, 0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 15.0, 30.0, 60.0, 120.0,
];
/// Tokens one answer may add to a counter: a server's numbers are not trusted to be sane.
pub const MAX_TOKENS_PER_CALL: u64 = 100_000_000;

/// How a turn ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TurnOutcome {
    Answered,
    /// Not run: the chat's queue was full, the kernel shutting down, the message empty or
    /// too long, the mode manager recovering, the disk full.
    Refused,
    Failed,
    Cancelled,
}

impl TurnOutcome {
    pub const ALL: [TurnOutcome; 4] = [
        TurnOutcome::Answered,
        TurnOutcome::Refused,
        TurnOutcome::Failed,
        TurnOutcome::Cancelled,
    ];

    pub fn label(self) -> &'static str {
        match self {
            TurnOutcome::Answered => "answered",
            TurnOutcome::Refused => "refused",
            TurnOutcome::Failed => "failed",
            TurnOutcome::Cancelled => "cancelled",
        }
    }
}

/// One channel's turn counters, by outcome (in [`TurnOutcome::ALL`]'s order).
#[derive(Debug, Default)]
pub struct TurnCounters([Counter; 4]);

impl TurnCounters {
    pub fn count(&self, outcome: TurnOutcome) {
        self.0[outcome as usize].inc();
    }
}

/// What a priced answer cost, in nano-units of its currency.
#[derive(Debug, Default)]
pub struct CostCounters {
    actual: Counter,
    uncached: Counter,
}

struct Metrics {
    turns: Labeled<TurnCounters, 1>,
    turn_seconds: Histogram,
    turns_waiting: Gauge,
    turns_running: Gauge,
    provider_seconds: Labeled<Histogram, 2>,
    provider_refused: Counter,
    prompt_tokens: Labeled<Counter, 2>,
    cached_tokens: Labeled<Counter, 2>,
    completion_tokens: Labeled<Counter, 2>,
    cost: Labeled<CostCounters, 1>,
    mode_entries: Labeled<Counter, 1>,
    mode_exits: Labeled<Counter, 2>,
    started: OnceLock<(Instant, SystemTime)>,
}

static METRICS: LazyLock<Metrics> = LazyLock::new(|| Metrics {
    turns: Labeled::new(["channel"], 16, TurnCounters::default),
    turn_seconds: Histogram::new(TURN_BUCKETS),
    turns_waiting: Gauge::default(),
    turns_running: Gauge::default(),
    provider_seconds: Labeled::new(["provider", "outcome"], 32, || Histogram::new(CALL_BUCKETS)),
    provider_refused: Counter::default(),
    prompt_tokens: Labeled::new(["provider", "model"], 16, Counter::default),
    cached_tokens: Labeled::new(["provider", "model"], 16, Counter::default),
    completion_tokens: Labeled::new(["provider", "model"], 16, Counter::default),
    cost: Labeled::new(["currency"], 8, CostCounters::default),
    mode_entries: Labeled::new(["mode"], 32, Counter::default),
    mode_exits: Labeled::new(["mode", "reason"], 64, Counter::default),
    started: OnceLock::new(),
});

fn m() -> &'static Metrics {
    &METRICS
}

/// Note the process's start (the first call wins); `homebot_uptime_seconds` counts from it.
pub fn mark_start() {
    let _ = m().started.set((Instant::now(), SystemTime::now()));
}

/// The turn counters of `channel` (look them up before the turn, count after).
pub fn turns_of(channel: &str) -> Arc<TurnCounters> {
    m().turns.get([channel])
}

/// A turn refused at admission (queue full, shutting down): it never waited.
pub fn turn_refused(channel: &str) {
    turns_of(channel).count(TurnOutcome::Refused);
}

/// A turn admitted to its chat's queue: counted as waiting until it starts or is dropped.
#[derive(Debug)]
pub struct Queued {
    since: Instant,
    waiting: bool,
}

impl Queued {
    pub fn new() -> Self {
        m().turns_waiting.inc();
        Self {
            since: Instant::now(),
            waiting: true,
        }
    }

    /// The turn starts: no longer waiting, running until the returned guard is done.
    pub fn start(mut self) -> Running {
        self.waiting = false;
        m().turns_waiting.dec();
        m().turns_running.inc();
        Running {
            since: self.since,
            done: false,
        }
    }
}

impl Default for Queued {
    fn default() -> Self {
        Self::new()
    }
}

impl Drop for Queued {
    fn drop(&mut self) {
        if self.waiting {
            m().turns_waiting.dec();
        }
    }
}

/// A running turn (see [`Queued::start`]).
#[derive(Debug)]
pub struct Running {
    since: Instant,
    done: bool,
}

impl Running {
    /// The turn has its reply: count it under `outcome` and its latency since admission.
    pub fn finish(mut self, counters: &TurnCounters, outcome: TurnOutcome) {
        self.done = true;
        m().turns_running.dec();
        counters.count(outcome);
        m().turn_seconds.observe(self.since.elapsed());
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        if !self.done {
            m().turns_running.dec();
        }
    }
}

/// The series of one provider endpoint, looked up when the provider is made.
pub struct ProviderMeter {
    /// Answered, failed, cancelled.
    latency: [Arc<Histogram>; 3],
    prompt: Arc<Counter>,
    cached: Arc<Counter>,
    completion: Arc<Counter>,
    price: OnceLock<Option<(Price, Arc<CostCounters>)>>,
}

/// How a provider attempt ended, for [`ProviderMeter::attempt`].
#[derive(Debug, Clone, Copy)]
pub enum CallEnd {
    /// Answered, with prompt, cached and completion tokens as the server reported them.
    Answered {
        prompt: u64,
        cached: u64,
        completion: u64,
    },
    Failed,
    Cancelled,
}

impl ProviderMeter {
    /// `provider`: the endpoint's name; `model`: its configured model (`None`: the
    /// endpoint's default, labelled `default`).
    pub fn new(provider: &str, model: Option<&str>) -> Self {
        let model = model.unwrap_or("default");
        let lat = |o: &str| m().provider_seconds.get([provider, o]);
        Self {
            latency: [lat("ok"), lat("error"), lat("cancelled")],
            prompt: m().prompt_tokens.get([provider, model]),
            cached: m().cached_tokens.get([provider, model]),
            completion: m().completion_tokens.get([provider, model]),
            price: OnceLock::new(),
        }
    }

    /// The endpoint model's price (`None`: no price configured); the first call wins.
    pub fn set_price(&self, price: Option<&Price>) {
        let priced = price.map(|p| (p.clone(), m().cost.get([p.currency.as_str()])));
        let _ = self.price.set(priced);
    }

    /// One attempt of a call, and how long it took.
    pub fn attempt(&self, end: CallEnd, latency: Duration) {
        let i = match end {
            CallEnd::Answered { .. } => 0,
            CallEnd::Failed => 1,
            CallEnd::Cancelled => 2,
        };
        self.latency[i].observe(latency);
        let CallEnd::Answered {
            prompt,
            cached,
            completion,
        } = end
        else {
            return;
        };
        let (prompt, completion) = (
            prompt.min(MAX_TOKENS_PER_CALL),
            completion.min(MAX_TOKENS_PER_CALL),
        );
        let cached = cached.min(prompt);
        self.prompt.add(prompt);
        self.cached.add(cached);
        self.completion.add(completion);
        if let Some(Some((price, cost))) = self.price.get() {
            // billed at the hour it was sent (a price may have tiers by the hour)
            let sent = chrono::Utc::now()
                - chrono::Duration::from_std(latency).unwrap_or(chrono::Duration::zero());
            let c = price.cost_at(sent, prompt, cached, completion);
            // nano-units (rounded per answer: at most half a nano-unit off each)
            let nano = |pico: u128| ((pico + 500) / 1000).min(u64::MAX as u128) as u64;
            cost.actual.add(nano(c.actual));
            cost.uncached.add(nano(c.uncached));
        }
    }
}

/// A call refused without a request (every circuit open).
pub fn provider_refused() {
    m().provider_refused.inc();
}

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
        .unwrap_or(registry::OTHER);
    m().mode_exits.get([mode_id, reason]).inc();
}

#[cfg(test)]
mod tests;

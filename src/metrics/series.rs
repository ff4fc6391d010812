//! The series homebot keeps, in one registry per process (`Metrics`), their buckets and
//! caps, and when the process started.

use super::registry::{Counter, Gauge, Histogram, Labeled};
use super::{CostCounters, TurnCounters};
use std::sync::{LazyLock, OnceLock};
use std::time::{Instant, SystemTime};

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

pub(super) struct Metrics {
    pub(super) turns: Labeled<TurnCounters, 1>,
    pub(super) turn_seconds: Histogram,
    pub(super) turns_waiting: Gauge,
    pub(super) turns_running: Gauge,
    pub(super) provider_seconds: Labeled<Histogram, 2>,
    pub(super) provider_refused: Counter,
    pub(super) prompt_tokens: Labeled<Counter, 2>,
    pub(super) cached_tokens: Labeled<Counter, 2>,
    pub(super) completion_tokens: Labeled<Counter, 2>,
    pub(super) cost: Labeled<CostCounters, 1>,
    pub(super) mode_entries: Labeled<Counter, 1>,
    pub(super) mode_exits: Labeled<Counter, 2>,
    pub(super) actor_state_runs: Labeled<Counter, 1>,
    pub(super) started: OnceLock<(Instant, SystemTime)>,
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
    actor_state_runs: Labeled::new(["actor"], 16, Counter::default),
    started: OnceLock::new(),
});

pub(super) fn m() -> &'static Metrics {
    &METRICS
}

/// Note the process's start (the first call wins); `homebot_uptime_seconds` counts from it.
pub fn mark_start() {
    let _ = m().started.set((Instant::now(), SystemTime::now()));
}

//! What instruments the turns: counted by channel and outcome where a turn's reply is
//! known, waiting and running gauges held by guards (`Queued`, `Running`).

use super::registry::Counter;
use super::series::m;
use std::sync::Arc;
use std::time::Instant;

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
pub struct TurnCounters(pub(super) [Counter; 4]);

impl TurnCounters {
    pub fn count(&self, outcome: TurnOutcome) {
        self.0[outcome as usize].inc();
    }
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

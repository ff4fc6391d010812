//! The circuit breaker of one endpoint, as a plain state machine the provider actor
//! drives (it owns one per endpoint; nothing else touches them).
//!
//! - **Closed**: calls go through; each call that fails for the endpoint's sake (see
//!   [`Health::of`]) adds one to a count, any answer resets it. At
//!   [`BreakerSettings::failures`] in a row the circuit opens.
//! - **Open** for [`BreakerSettings::cooldown`]: no call is admitted — the provider sends
//!   it to a fallback or fails it fast.
//! - **Half-open** after the cool-down: the first call admitted is the trial, the others
//!   are refused until it ends. Its success closes the circuit; its failure opens it for
//!   another cool-down; a trial that was abandoned (its turn cancelled) leaves the next
//!   call to try.
//!
//! A failure counts per call (after the call's own retries), not per attempt: one
//! turn against a dead endpoint is one failure. Outcomes of calls admitted before the
//! circuit opened that end while it is open or half-open do not count — only the trial
//! decides — except a success, which shows the endpoint answers and closes it.

use super::error::ProviderError;
use crate::config::BreakerSettings;
use std::time::{Duration, Instant};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum State {
    Closed { failures: u32 },
    Open { until: Instant },
    HalfOpen { trial_running: bool },
}

/// What a finished call says about its endpoint.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Health {
    /// An answer, or an error the endpoint chose to give (a 4xx other than 429, an
    /// answer too large or unreadable): it is up.
    Answered,
    /// Unreachable, timed out, cut off, overloaded (429) or failing (5xx).
    Failed,
    /// The caller stopped waiting before the call ended: nothing learned.
    Abandoned,
}

impl Health {
    pub fn of(result: &Result<impl Sized, ProviderError>) -> Self {
        match result {
            Ok(_) => Health::Answered,
            Err(e) if e.is_retryable() || matches!(e, ProviderError::Timeout(_)) => Health::Failed,
            Err(_) => Health::Answered,
        }
    }
}

/// Whether a call may go to the endpoint.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Admit {
    /// Yes; `trial` when this call decides a half-open circuit.
    Yes { trial: bool },
    /// No: open for `retry_in` more (zero while a trial is running).
    No { retry_in: Duration },
}

#[derive(Debug, Clone)]
pub struct Breaker {
    settings: BreakerSettings,
    state: State,
    /// Times the circuit opened since start.
    opened: u64,
}

impl Breaker {
    pub fn new(settings: BreakerSettings) -> Self {
        Self {
            settings: BreakerSettings {
                failures: settings.failures.max(1),
                ..settings
            },
            state: State::Closed { failures: 0 },
            opened: 0,
        }
    }

    pub fn state(&self) -> State {
        self.state
    }

    pub fn opened(&self) -> u64 {
        self.opened
    }

    pub fn settings(&self) -> BreakerSettings {
        self.settings
    }

    /// May a call go to the endpoint now? An open circuit past its cool-down turns
    /// half-open and this call becomes its trial.
    pub fn admit(&mut self, now: Instant) -> Admit {
        match self.state {
            State::Closed { .. } => Admit::Yes { trial: false },
            State::Open { until } if now < until => Admit::No {
                retry_in: until - now,
            },
            State::Open { .. }
            | State::HalfOpen {
                trial_running: false,
            } => {
                self.state = State::HalfOpen {
                    trial_running: true,
                };
                Admit::Yes { trial: true }
            }
            State::HalfOpen {
                trial_running: true,
            } => Admit::No {
                retry_in: Duration::ZERO,
            },
        }
    }

    /// A call admitted by [`Breaker::admit`] ended.
    pub fn record(&mut self, now: Instant, trial: bool, health: Health) {
        match (health, self.state) {
            (Health::Answered, _) => self.state = State::Closed { failures: 0 },
            (Health::Failed, State::Closed { failures }) => {
                if failures + 1 >= self.settings.failures {
                    self.open(now);
                } else {
                    self.state = State::Closed {
                        failures: failures + 1,
                    };
                }
            }
            (Health::Failed, State::HalfOpen { .. }) if trial => self.open(now),
            (Health::Abandoned, State::HalfOpen { .. }) if trial => {
                self.state = State::HalfOpen {
                    trial_running: false,
                }
            }
            // a late outcome of a call admitted before the circuit opened
            _ => {}
        }
    }

    fn open(&mut self, now: Instant) {
        self.state = State::Open {
            until: now + self.settings.cooldown,
        };
        self.opened += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings() -> BreakerSettings {
        BreakerSettings {
            failures: 3,
            cooldown: Duration::from_secs(30),
        }
    }

    #[test]
    fn opens_after_n_failures_in_a_row_and_an_answer_resets_the_count() {
        let t0 = Instant::now();
        let mut b = Breaker::new(settings());
        for _ in 0..2 {
            assert_eq!(b.admit(t0), Admit::Yes { trial: false });
            b.record(t0, false, Health::Failed);
        }
        b.record(t0, false, Health::Answered);
        assert_eq!(b.state(), State::Closed { failures: 0 });
        for _ in 0..3 {
            b.record(t0, false, Health::Failed);
        }
        assert_eq!(
            b.admit(t0 + Duration::from_secs(10)),
            Admit::No {
                retry_in: Duration::from_secs(20)
            }
        );
        assert_eq!(b.opened(), 1);
        // late failures of calls admitted earlier change nothing
        b.record(t0, false, Health::Failed);
        assert_eq!(
            b.state(),
            State::Open {
                until: t0 + Duration::from_secs(30)
            }
        );
    }

    #[test]
    fn half_open_admits_one_trial_that_decides() {
        let t0 = Instant::now();
        let mut b = Breaker::new(settings());
        for _ in 0..3 {
            b.record(t0, false, Health::Failed);
        }
        let after = t0 + Duration::from_secs(30);
        assert_eq!(b.admit(after), Admit::Yes { trial: true });
        assert_eq!(
            b.admit(after),
            Admit::No {
                retry_in: Duration::ZERO
            },
            "one trial at a time"
        );
        // a non-trial call's failure does not decide
        b.record(after, false, Health::Failed);
        b.record(after, true, Health::Failed);
        assert_eq!(
            b.state(),
            State::Open {
                until: after + Duration::from_secs(30)
            },
            "a failed trial opens it again"
        );
        let later = after + Duration::from_secs(30);
        assert_eq!(b.admit(later), Admit::Yes { trial: true });
        // an abandoned trial leaves the next call to try
        b.record(later, true, Health::Abandoned);
        assert_eq!(b.admit(later), Admit::Yes { trial: true });
        b.record(later, true, Health::Answered);
        assert_eq!(b.state(), State::Closed { failures: 0 });
        assert_eq!(b.admit(later), Admit::Yes { trial: false });
        assert_eq!(b.opened(), 2);
    }

    #[test]
    fn only_endpoint_failures_count() {
        let http = |status| ProviderError::Http {
            status,
            body: String::new(),
            retry_after: None,
        };
        let r = |e| Err::<(), _>(e);
        assert_eq!(Health::of(&r(http(503))), Health::Failed);
        assert_eq!(Health::of(&r(http(429))), Health::Failed);
        assert_eq!(Health::of(&r(ProviderError::Timeout(5))), Health::Failed);
        assert_eq!(Health::of(&r(ProviderError::Truncated)), Health::Failed);
        assert_eq!(Health::of(&r(http(400))), Health::Answered);
        assert_eq!(Health::of(&r(http(401))), Health::Answered);
        assert_eq!(Health::of(&r(ProviderError::TooLarge(1))), Health::Answered);
        assert_eq!(Health::of(&Ok::<(), ProviderError>(())), Health::Answered);
    }
}

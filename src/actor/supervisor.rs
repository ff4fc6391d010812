//! The restart record behind [`super::Supervised`]: a state that can be reloaded from
//! disk (the ModeManager's, the Cron actor's) or lives in memory only (a channel's) has
//! each request run through [`Supervisor::run`]. A panic is
//! caught where it happens — the mailbox and the actor thread survive, and so do the
//! other actors on that thread — the request that hit it gets an error, and the state is
//! reopened from disk as at start-up (logged; the reopening carries over from the old
//! state what is not on disk).
//!
//! Capped backoff: a state that keeps panicking is not reopened in a hot loop. The first
//! panic of a streak reopens at once; each further one within [`CALM`] of the previous
//! waits a pause first (1 s, 2 s, 4 s … at most [`MAX_PAUSE`]) during which requests fail
//! fast with [`Unavailable::Recovering`] and nothing touches the state; the first request
//! after the pause reopens it. A reopening that fails (the workspace unreadable) is
//! logged and the state in memory goes on serving.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tracing::error;

/// Panics further apart than this start a new streak.
pub const CALM: Duration = Duration::from_secs(60);
/// The longest pause before a reopening.
pub const MAX_PAUSE: Duration = Duration::from_secs(30);

/// Why a supervised request was not served.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Unavailable {
    /// It panicked; the state is reopened from disk.
    #[error("{actor} failed while handling {what} ({why}) and was restarted from disk")]
    Restarted {
        actor: &'static str,
        what: &'static str,
        why: String,
    },
    /// The state waits to be reopened (it panicked repeatedly).
    #[error("{actor} is recovering from repeated failures; try again in {secs} s")]
    Recovering { actor: &'static str, secs: u64 },
}

/// The restart record of one actor.
pub struct Supervisor {
    actor: &'static str,
    /// Runs on the state (`homebot_actor_state_runs_total`: every handler reaches its
    /// state through here, once or a few times).
    runs: Arc<crate::metrics::registry::Counter>,
    /// Panics in the current streak.
    streak: u32,
    last_panic: Option<Instant>,
    /// A reopening is due, not before this instant.
    reopen_at: Option<Instant>,
    /// What the last panic hit, and why ("begin-turn (index out of bounds)").
    last: String,
}

/// The pause before reopening after the `streak`-th panic of a streak.
pub fn pause_after(streak: u32) -> Duration {
    if streak <= 1 {
        return Duration::ZERO;
    }
    Duration::from_secs(1u64 << (streak - 2).min(5)).min(MAX_PAUSE)
}

/// What a panic carried, as text.
fn panic_text(p: &(dyn std::any::Any + Send)) -> String {
    p.downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| p.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a panic".into())
}

impl Supervisor {
    pub fn new(actor: &'static str) -> Self {
        Self {
            actor,
            runs: crate::metrics::actor_state_runs(actor),
            streak: 0,
            last_panic: None,
            reopen_at: None,
            last: String::new(),
        }
    }

    /// Panics in the current streak.
    pub fn streak(&self) -> u32 {
        self.streak
    }

    /// Run `f` on `state`, supervised (see the module doc). `reopen` reads the state
    /// from disk again; it gets the old state, to carry (or move) over what is not on
    /// disk, and what the panic hit ("begin-turn (why)"), to tell the household.
    pub fn run<S, R, E: std::fmt::Display>(
        &mut self,
        state: &mut S,
        what: &'static str,
        f: impl FnOnce(&mut S) -> R,
        reopen: impl FnOnce(&mut S, &str) -> Result<S, E>,
    ) -> Result<R, Unavailable> {
        self.runs.inc();
        if let Some(at) = self.reopen_at {
            let now = Instant::now();
            if now < at {
                return Err(Unavailable::Recovering {
                    actor: self.actor,
                    secs: (at - now).as_secs_f64().ceil() as u64,
                });
            }
            self.reopen(state, reopen);
            // (a panic right after a reopening: the next request reopens, after its pause)
            return self.guarded(state, what, f);
        }
        match self.guarded(state, what, f) {
            Ok(r) => Ok(r),
            Err(e) => {
                if self.reopen_at.is_some_and(|at| at <= Instant::now()) {
                    self.reopen(state, reopen);
                }
                Err(e)
            }
        }
    }

    fn guarded<S, R>(
        &mut self,
        state: &mut S,
        what: &'static str,
        f: impl FnOnce(&mut S) -> R,
    ) -> Result<R, Unavailable> {
        match catch_unwind(AssertUnwindSafe(|| f(state))) {
            Ok(r) => Ok(r),
            Err(panic) => {
                let why = panic_text(panic.as_ref());
                let now = Instant::now();
                let calm = self.last_panic.is_none_or(|t| now - t >= CALM);
                self.streak = if calm { 1 } else { self.streak + 1 };
                self.last_panic = Some(now);
                let pause = pause_after(self.streak);
                self.reopen_at = Some(now + pause);
                error!(actor = self.actor, request = what, panic = %why, streak = self.streak, pause_ms = pause.as_millis() as u64, "actor panicked; its state is reopened from disk");
                self.last = format!("{what} ({why})");
                Err(Unavailable::Restarted {
                    actor: self.actor,
                    what,
                    why,
                })
            }
        }
    }

    /// Replace `state` by what `reopen` reads; on failure keep serving the old one.
    fn reopen<S, E: std::fmt::Display>(
        &mut self,
        state: &mut S,
        reopen: impl FnOnce(&mut S, &str) -> Result<S, E>,
    ) {
        self.reopen_at = None;
        let last = self.last.as_str();
        match catch_unwind(AssertUnwindSafe(|| reopen(&mut *state, last))) {
            Ok(Ok(fresh)) => *state = fresh,
            Ok(Err(e)) => {
                error!(actor = self.actor, error = %e, "the state could not be reopened; continuing with the state in memory")
            }
            Err(p) => {
                error!(actor = self.actor, panic = %panic_text(p.as_ref()), "reopening the state panicked; continuing with the state in memory")
            }
        }
    }
}

impl Supervisor {
    /// [`Supervisor::run`] for an actor whose state lives in memory only (a channel's
    /// connections, its queues): a panic fails this request and is logged, and the actor
    /// goes on with the state it has — there is nothing on disk to reopen.
    pub fn run_in_memory<S, R>(
        &mut self,
        state: &mut S,
        what: &'static str,
        f: impl FnOnce(&mut S) -> R,
    ) -> Result<R, Unavailable> {
        let actor = self.actor;
        self.run(state, what, f, |_, _| Err::<S, _>(InMemoryOnly(actor)))
    }
}

/// The reopening error of an actor whose state is not kept on disk: there is nothing
/// to read afresh, so it continues with the state in memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("{0}'s state is in memory only")]
pub struct InMemoryOnly(pub &'static str);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_pause_doubles_from_the_second_panic_and_is_capped() {
        let p: Vec<u64> = (1..=9).map(|s| pause_after(s).as_secs()).collect();
        assert_eq!(p, [0, 1, 2, 4, 8, 16, 30, 30, 30]);
    }

    #[test]
    fn a_panic_reopens_the_state_and_repeated_ones_wait_their_pause() {
        let mut sup = Supervisor::new("test actor");
        let mut state = 1u32;
        let reopened = |_: &mut u32, _: &str| Ok::<_, InMemoryOnly>(100u32);
        assert_eq!(sup.run(&mut state, "add", |s| *s + 1, reopened), Ok(2));
        let e = sup
            .run(
                &mut state,
                "boom",
                |_| -> u32 { panic!("bad state") },
                reopened,
            )
            .unwrap_err();
        assert!(e.to_string().contains("boom (bad state)"), "{e}");
        assert_eq!(state, 100, "reopened at once after the first panic");
        assert_eq!(sup.run(&mut state, "add", |s| *s + 1, reopened), Ok(101));
        // a second panic soon after: the state waits its pause, requests fail fast
        let _ = sup.run(
            &mut state,
            "boom",
            |_| -> u32 { panic!("again") },
            |_, _| Ok::<_, InMemoryOnly>(7),
        );
        assert_eq!(state, 100, "not reopened yet");
        let e = sup
            .run(
                &mut state,
                "add",
                |s| *s + 1,
                |_, _| Ok::<_, InMemoryOnly>(7),
            )
            .unwrap_err();
        assert!(matches!(e, Unavailable::Recovering { secs: 1, .. }), "{e}");
        assert_eq!(sup.streak(), 2);
    }

    #[test]
    fn a_reopening_that_fails_keeps_the_old_state_serving() {
        let mut sup = Supervisor::new("test actor");
        let mut state = String::from("kept");
        let _ = sup.run(
            &mut state,
            "boom",
            |_| -> () { panic!("x") },
            |_, _| Err(InMemoryOnly("the test actor")),
        );
        assert_eq!(state, "kept");
        assert_eq!(
            sup.run(
                &mut state,
                "read",
                |s| s.clone(),
                |_, _| Err(InMemoryOnly("the test actor"))
            ),
            Ok("kept".to_string())
        );
    }
}

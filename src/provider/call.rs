//! One call, from admission to report: the actor names the endpoint ([`Admit`]), the
//! attempts run with bounded retries, and the outcome goes back to the actor
//! ([`Report`]) — also when the caller stops waiting midway.
//!
//! The call runs in the caller's task, over the state the actor shares (an `Arc`), not
//! inside a handler: the request stays borrowed (a mode session's history is hundreds of
//! kilobytes, copied never), its body is encoded on the kernel's worker threads, and a
//! turn that is cancelled drops the call mid-flight — its slot freed, its audit record
//! `cancelled` — just as it did before the provider was an actor.

use super::actor::{Admit, Circuits, ProviderActor, Report, Shared, Ticket};
use super::backend::Backend;
use super::breaker::Health;
use super::error::ProviderError;
use super::ledger::{Entry, Outcome};
use super::model::{Calibrate, CallMeta, DeltaSink};
use super::slots::Priority;
use super::types::{ChatRequest, ChatResponse};
use actix::Addr;
use backon::{BackoffBuilder, ExponentialBuilder};
use std::time::{Duration, Instant};
use tracing::warn;

/// The longest wait between two attempts, whatever a `Retry-After` asks for.
pub const MAX_RETRY_WAIT: Duration = Duration::from_secs(30);

/// The delays between attempts: exponential from 0.5 s to 8 s with jitter, at most
/// `max_retries` of them.
pub fn backoff(max_retries: u32) -> ExponentialBuilder {
    ExponentialBuilder::new()
        .with_min_delay(Duration::from_millis(500))
        .with_max_delay(Duration::from_secs(8))
        .with_factor(2.0)
        .with_jitter()
        // backon without `std` seeds its jitter with a constant; every process would
        // then retry in lockstep
        .with_jitter_seed(rand::random())
        .with_max_times(max_retries as usize)
}

/// What a call needs besides the request.
pub struct Call<'a> {
    pub addr: &'a Addr<ProviderActor>,
    pub shared: &'a Shared,
    pub circuits: &'a Circuits,
    pub tz: crate::zone::Zone,
    pub meta: &'a CallMeta,
    pub deltas: Option<&'a dyn DeltaSink>,
    pub calibrate: Option<Calibrate<'a>>,
}

impl Call<'_> {
    /// Admission, the attempts on the endpoint admitted, the report.
    ///
    /// While the primary's circuit is closed (as the actor last published it) the call
    /// goes to the primary without asking: that is what admission would answer, and it
    /// keeps a mailbox round trip to another thread off every turn's path. A failure is
    /// reported and waited for, so the caller's next call already sees the circuit it
    /// may have opened; an answer is reported (without waiting) only when it changes
    /// something — a trial, a fallback, a count of failures to reset — so the common
    /// call sends the actor nothing. (A concurrent failure counted just as an answer
    /// skips its report stays counted: "in a row" is approximate under concurrency, by
    /// at most the calls in flight.)
    pub async fn run(self, req: &ChatRequest<'_>) -> Result<ChatResponse, ProviderError> {
        let admitted = if self.circuits.primary_closed() {
            Ok(Ok(Ticket {
                index: 0,
                backend: self.shared.backends[0].clone(),
                trial: false,
            }))
        } else {
            self.addr.send(Admit).await
        };
        let ticket = match admitted {
            Ok(Ok(t)) => t,
            Ok(Err(e)) => {
                // refused without a request: the record says so, naming no endpoint
                let at = Entry {
                    tz: self.tz,
                    meta: self.meta,
                    backend: None,
                };
                warn!(error = %e, "provider call refused");
                self.shared
                    .ledger
                    .audit(at, Outcome::Err(&e), Duration::ZERO, 0);
                self.shared.ledger.failure(at, &e, Duration::ZERO, 0);
                return Err(e);
            }
            Err(_) => return Err(ProviderError::Stopped),
        };
        let mut verdict = Verdict {
            addr: self.addr,
            circuits: self.circuits,
            report: Some(Report {
                index: ticket.index,
                trial: ticket.trial,
                health: Health::Abandoned,
            }),
        };
        let backend = &*ticket.backend;
        let result = self.attempts(backend, req).await;
        verdict.ended(Health::of(&result)).await;
        if let (Ok(resp), Some(calibrate)) = (&result, self.calibrate) {
            if backend.is_primary() {
                calibrate(resp.usage.prompt_tokens);
            }
        }
        result
    }

    /// Bounded retries on network errors, 429 and 5xx: delays from the backoff, or the
    /// server's `Retry-After`, never more than [`MAX_RETRY_WAIT`]. The concurrency slot is
    /// held only while a request is in flight, not while waiting to retry. Every
    /// attempt's outcome goes to the audit trail, the call's to the usage log.
    async fn attempts(
        &self,
        backend: &Backend,
        req: &ChatRequest<'_>,
    ) -> Result<ChatResponse, ProviderError> {
        let ledger = &self.shared.ledger;
        let at = Entry {
            tz: self.tz,
            meta: self.meta,
            backend: Some(backend),
        };
        let mut delays = self.shared.backoff.build();
        let mut attempt = 0;
        loop {
            let (result, latency) = {
                let _slot = backend.slots.acquire(Priority::of(self.meta.purpose)).await;
                // a turn cancelled mid-call drops this future: the guard records that
                let mut pending = Pending {
                    at,
                    ledger,
                    started: Instant::now(),
                    attempt,
                    armed: true,
                };
                let result = backend.model.complete_with(req, self.deltas).await;
                pending.armed = false;
                (result, pending.started.elapsed())
            };
            match result {
                Ok(resp) => {
                    if resp.finish_reason.as_deref() == Some("length") {
                        warn!(completion = resp.usage.completion_tokens, "the model hit its output limit (finish_reason=length); the reply is cut short");
                    }
                    ledger.usage(at, &resp, latency, attempt);
                    ledger.audit(at, Outcome::Ok(&resp), latency, attempt);
                    return Ok(resp);
                }
                Err(e) => {
                    ledger.audit(at, Outcome::Err(&e), latency, attempt);
                    let next = e.is_retryable().then(|| delays.next()).flatten();
                    let Some(computed) = next else {
                        warn!(attempts = attempt + 1, provider = %backend.name, error = %e, "provider call failed");
                        ledger.failure(at, &e, latency, attempt);
                        return Err(e);
                    };
                    let wait = retry_wait(&e, computed);
                    warn!(attempt = attempt + 1, wait_ms = wait.as_millis() as u64, error = %e, "provider call failed; retrying");
                    tokio::time::sleep(wait).await;
                    if let Some(d) = self.deltas {
                        d.retry();
                    }
                    attempt += 1;
                }
            }
        }
    }
}

/// Tells the actor how the call ended: [`Verdict::ended`], or [`Health::Abandoned`] when
/// dropped before (the caller stopped waiting).
struct Verdict<'a> {
    addr: &'a Addr<ProviderActor>,
    circuits: &'a Circuits,
    report: Option<Report>,
}

impl Verdict<'_> {
    async fn ended(&mut self, health: Health) {
        let Some(mut r) = self.report.take() else {
            return;
        };
        r.health = health;
        // the common case tells the actor nothing it does not know: an answer from the
        // primary while its circuit is closed with no failure counted
        if health == Health::Answered && r.index == 0 && !r.trial && self.circuits.primary_clean() {
            return;
        }
        if health == Health::Failed {
            // waited for: the circuit this may open is published before the caller goes on
            let _ = self.addr.send(r).await;
        } else {
            self.addr.do_send(r);
        }
    }
}

impl Drop for Verdict<'_> {
    fn drop(&mut self) {
        // an abandoned call matters only when it was a half-open circuit's trial
        if let Some(r) = self.report.take().filter(|r| r.trial) {
            self.addr.do_send(r);
        }
    }
}

/// Records an attempt that never ended because its future was dropped.
struct Pending<'a> {
    at: Entry<'a>,
    ledger: &'a super::ledger::Ledger,
    started: Instant,
    attempt: u32,
    armed: bool,
}

impl Drop for Pending<'_> {
    fn drop(&mut self) {
        if self.armed {
            let latency = self.started.elapsed();
            self.ledger
                .audit(self.at, Outcome::Cancelled, latency, self.attempt);
        }
    }
}

/// How long to wait before the next attempt: the server's `Retry-After` if it sent one,
/// else the backoff's delay — either way at most [`MAX_RETRY_WAIT`].
pub fn retry_wait(e: &ProviderError, computed: Duration) -> Duration {
    match e {
        ProviderError::Http {
            retry_after: Some(d),
            ..
        } => *d,
        _ => computed,
    }
    .min(MAX_RETRY_WAIT)
}

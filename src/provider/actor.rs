//! The provider actor: owns the endpoints (their clients and slots), the retry policy,
//! the usage/audit writer — the [`Shared`] state it hands to each call — and, alone, the
//! circuit breaker of each endpoint. It answers [`Admit`] (which endpoint takes this
//! call, or a fast failure) while the primary's circuit is not closed, and [`Report`]
//! (how a call ended) for every call. Both handlers are a few comparisons; no handler
//! awaits anything, so its mailbox is never behind an LLM call. After each change it
//! publishes the circuits ([`Published`]), so the `status` line and the common case — the
//! primary's circuit closed, every call goes there — never wait on the mailbox.
//!
//! It runs on a thread of its own (`homebot-provider`, the actor kit's
//! [`ActorThread`]), started with the provider, so an admission never waits behind the
//! ModeManager's fsyncs, and a provider made before the kernel (tests inject one) is
//! already live. The thread belongs to the provider's handles, not to the kernel's
//! shutdown: it stops, and is joined, when the last [`super::Provider`] handle is dropped
//! (after the kernel's shutdown flushed its log writer). Its state, the breakers, is
//! reached only through its supervised cell.

use super::backend::Backend;
use super::breaker::{Admit as Verdict, Breaker, Health, State};
use super::error::ProviderError;
use super::ledger::Ledger;
pub use crate::actor::ActorThread;
use crate::actor::Supervised;
use crate::config::BreakerSettings;
use actix::prelude::*;
use backon::ExponentialBuilder;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant};
use tracing::{info, warn};

/// What every call uses and nothing changes after start: the endpoints (primary first),
/// the log writer, the retry policy.
pub struct Shared {
    pub backends: Vec<Arc<Backend>>,
    pub ledger: Ledger,
    /// Delays between attempts; `max_times` is the retry budget.
    pub backoff: ExponentialBuilder,
    pub breaker: BreakerSettings,
}

/// One endpoint's circuit as `status` shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CircuitView {
    /// `primary`, `fallback-1`, …
    pub name: String,
    /// `model @ url`.
    pub summary: String,
    pub state: State,
    /// Failed calls in a row that open it.
    pub failures: u32,
    /// Times it opened since start.
    pub opened: u64,
}

/// What the actor publishes after every change of a circuit, for readers that must not
/// wait on its mailbox: the views for the `status` line, and whether the primary's
/// circuit is closed — then every call goes to the primary, and a call needs no
/// admission (see [`super::call`]).
#[derive(Default)]
pub struct Published {
    views: RwLock<Vec<CircuitView>>,
    primary_closed: AtomicBool,
    /// Closed with no failure counted: an answer from the primary changes nothing.
    primary_clean: AtomicBool,
}

impl Published {
    pub fn views(&self) -> Vec<CircuitView> {
        match self.views.read() {
            Ok(v) => v.clone(),
            Err(poisoned) => poisoned.into_inner().clone(),
        }
    }

    pub fn primary_closed(&self) -> bool {
        self.primary_closed.load(Ordering::Acquire)
    }

    pub fn primary_clean(&self) -> bool {
        self.primary_clean.load(Ordering::Acquire)
    }
}

pub type Circuits = Arc<Published>;

pub struct ProviderActor {
    state: Supervised<Breakers>,
    /// The endpoints, for the admission while the breakers recover from a panic.
    shared: Arc<Shared>,
    /// The circuits as last published, for `GetCircuits` then.
    published: Circuits,
}

/// The actor's state: a circuit per endpoint, and where it publishes them.
struct Breakers {
    shared: Arc<Shared>,
    breakers: Vec<Breaker>,
    published: Circuits,
}

impl ProviderActor {
    /// Every circuit closed. A panic (a bug) fails its request only, is logged, and the
    /// circuits start over closed (after the capped pause when panics repeat; meanwhile
    /// calls go to the primary).
    fn new(shared: Arc<Shared>, published: Circuits) -> Self {
        let state = Breakers::closed(shared.clone(), published.clone());
        state.publish();
        let reopen = |b: &mut Breakers, _: &str| {
            let fresh = Breakers::closed(b.shared.clone(), b.published.clone());
            fresh.publish();
            Ok::<_, std::convert::Infallible>(fresh)
        };
        Self {
            state: Supervised::reopened_by("the provider actor", state, reopen),
            shared,
            published,
        }
    }
}

impl Breakers {
    /// Every circuit closed, nothing counted: the state at start, and after a panic (the
    /// breakers hold nothing that must survive one).
    fn closed(shared: Arc<Shared>, published: Circuits) -> Self {
        let breakers = shared
            .backends
            .iter()
            .map(|_| Breaker::new(shared.breaker))
            .collect();
        Self {
            shared,
            breakers,
            published,
        }
    }

    fn views(&self) -> Vec<CircuitView> {
        self.shared
            .backends
            .iter()
            .zip(&self.breakers)
            .map(|(b, k)| CircuitView {
                name: b.name.clone(),
                summary: b.summary(),
                state: k.state(),
                failures: k.settings().failures,
                opened: k.opened(),
            })
            .collect()
    }

    fn publish(&self) {
        let v = self.views();
        let state = self.breakers[0].state();
        let closed = matches!(state, State::Closed { .. });
        let clean = state == State::Closed { failures: 0 };
        match self.published.views.write() {
            Ok(mut p) => *p = v,
            Err(poisoned) => *poisoned.into_inner() = v,
        }
        self.published
            .primary_closed
            .store(closed, Ordering::Release);
        self.published.primary_clean.store(clean, Ordering::Release);
    }
}

impl Breakers {
    fn admit(&mut self, now: Instant) -> Result<Ticket, ProviderError> {
        let mut refused = None;
        for (i, b) in self.breakers.iter_mut().enumerate() {
            let before = b.state();
            match b.admit(now) {
                Verdict::Yes { trial } => {
                    if trial {
                        info!(
                            provider = %self.shared.backends[i].name,
                            "circuit half-open: this call is the trial"
                        );
                    }
                    if before != b.state() {
                        self.publish();
                    }
                    return Ok(Ticket {
                        index: i,
                        backend: self.shared.backends[i].clone(),
                        trial,
                    });
                }
                Verdict::No { retry_in } => {
                    refused.get_or_insert(retry_in);
                }
            }
        }
        Err(ProviderError::CircuitOpen {
            failures: self.shared.breaker.failures,
            // while a trial runs the wait is its length, unknown: say a second
            retry_in_secs: (refused.unwrap_or_default().as_secs_f64().ceil() as u64).max(1),
        })
    }

    fn report(&mut self, now: Instant, r: &Report) {
        let Some(b) = self.breakers.get_mut(r.index) else {
            return;
        };
        let before = b.state();
        b.record(now, r.trial, r.health);
        let after = b.state();
        if before == after {
            return;
        }
        let name = &self.shared.backends[r.index].name;
        match after {
            State::Open { .. } => warn!(
                provider = %name,
                failures = self.shared.breaker.failures,
                cooldown_secs = self.shared.breaker.cooldown.as_secs(),
                "circuit open: calls fail fast or go to a fallback for the cool-down"
            ),
            State::Closed { failures: 0 } if !matches!(before, State::Closed { .. }) => {
                info!(provider = %name, "circuit closed: the endpoint answers again")
            }
            _ => {}
        }
        self.publish();
    }
}

impl Actor for ProviderActor {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Context<Self>) {
        // every call sends two messages; a busy house should not park its senders
        ctx.set_mailbox_capacity(1024);
    }
}

/// The endpoint that takes a call.
pub struct Ticket {
    pub index: usize,
    pub backend: Arc<Backend>,
    /// This call decides a half-open circuit.
    pub trial: bool,
}

/// Which endpoint takes the next call — the first whose circuit admits it — or
/// [`ProviderError::CircuitOpen`] when none does.
#[derive(Message)]
#[rtype(result = "Result<Ticket, ProviderError>")]
pub struct Admit;

/// How a call admitted with a [`Ticket`] ended.
#[derive(Message)]
#[rtype(result = "()")]
pub struct Report {
    pub index: usize,
    pub trial: bool,
    pub health: Health,
}

/// The circuits now (and published for the `status` line).
#[derive(Message)]
#[rtype(result = "Vec<CircuitView>")]
pub struct GetCircuits;

impl Handler<Admit> for ProviderActor {
    type Result = Result<Ticket, ProviderError>;
    fn handle(&mut self, _: Admit, _: &mut Context<Self>) -> Self::Result {
        let now = Instant::now();
        self.state
            .run("admit", |a| a.admit(now))
            .unwrap_or_else(|_| {
                Ok(Ticket {
                    index: 0,
                    backend: self.shared.backends[0].clone(),
                    trial: false,
                })
            })
    }
}

impl Handler<Report> for ProviderActor {
    type Result = ();
    fn handle(&mut self, r: Report, _: &mut Context<Self>) {
        let now = Instant::now();
        let _ = self.state.run("report", |a| a.report(now, &r));
    }
}

impl Handler<GetCircuits> for ProviderActor {
    type Result = MessageResult<GetCircuits>;
    fn handle(&mut self, _: GetCircuits, _: &mut Context<Self>) -> Self::Result {
        let views = self.state.run("circuits", |b| b.views());
        MessageResult(views.unwrap_or_else(|_| self.published.views()))
    }
}

/// Start the actor on its own thread; dropping the returned [`ActorThread`] stops the
/// actor (which drops its share of the state — the last share drains the log writer) and
/// waits for the thread.
pub fn start(shared: Arc<Shared>) -> (Addr<ProviderActor>, Circuits, ActorThread) {
    let published: Circuits = Arc::default();
    let p = published.clone();
    let (addr, thread) =
        ActorThread::start("homebot-provider", move || ProviderActor::new(shared, p))
            .expect("a thread can be started at provider start-up");
    (addr, published, thread)
}

/// How long until an open circuit lets a trial call through (zero once it may).
pub fn retry_in(state: State, now: Instant) -> Duration {
    match state {
        State::Open { until } => until.saturating_duration_since(now),
        _ => Duration::ZERO,
    }
}

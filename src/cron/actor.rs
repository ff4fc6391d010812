//! The Cron actor and its state: the book of reminders (`reminders.json`), the deliveries
//! under way and the timer, in a supervised cell ([`crate::actor::Supervised`]) that reads
//! the book afresh from disk after a panic. Its handlers are in `messages`.

use super::delivery::{deliver, RetryPolicy};
use super::messages::Delivered;
use super::ReminderError;
use crate::actor::{Supervised, Tasks};
use crate::clock::SharedClock;
use crate::modes::ModesHandle;
use crate::outbound::Doors;
use crate::reminders::{store, BookError, ReminderBook};
use crate::zone::Zone;
use actix::prelude::*;
use chrono::{DateTime, FixedOffset};
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;
use tracing::{info, warn};

/// The longest single sleep of the reminder timer: it wakes at least this often to
/// re-read the clock (a suspended machine, a clock that jumped).
const MAX_SLEEP: Duration = Duration::from_secs(3600);

/// The Cron actor's name in supervision messages.
const ACTOR: &str = "the cron actor";

/// The actor: its state, reachable only through the supervised cell.
pub struct Cron {
    pub(super) state: Supervised<Schedule>,
}

/// What the Cron actor owns.
pub(super) struct Schedule {
    pub(super) modes: ModesHandle,
    period: Duration,
    pub(super) clock: SharedClock,
    pub(super) tz: Zone,
    path: PathBuf,
    pub(super) book: ReminderBook,
    doors: Arc<Doors>,
    retry: RetryPolicy,
    /// Reminders being delivered (still pending in the book until it succeeds), and the
    /// task delivering each (aborted when the reminder is cancelled meanwhile).
    pub(super) delivering: HashMap<u32, tokio::task::AbortHandle>,
    /// `reminders.json` could not be read: nothing is written over it.
    read_only: Option<String>,
    timer: Option<SpawnHandle>,
    /// Where deliveries run (the kernel's background tasks: its shutdown cancels them).
    tasks: Tasks,
}

pub struct CronSetup {
    pub modes: ModesHandle,
    pub period: Duration,
    pub clock: SharedClock,
    pub tz: Zone,
    /// `reminders.json`.
    pub path: PathBuf,
    pub doors: Arc<Doors>,
    pub retry: RetryPolicy,
    pub tasks: Tasks,
}

impl Cron {
    /// Load the reminders (a corrupt file is set aside: the warning comes back). A file
    /// that cannot be read at all (permissions, I/O) is left alone and never written over:
    /// reminders are refused until it is fixed and homebot restarted.
    pub fn new(s: CronSetup) -> (Self, Option<String>) {
        let (book, warning, read_only) = match store::load(&s.path) {
            Ok((b, w)) => (b, w, None),
            Err(e) => {
                let why = format!("{e}; reminders are off until it can be read (then restart)");
                (ReminderBook::default(), Some(why.clone()), Some(why))
            }
        };
        let state = Schedule {
            modes: s.modes,
            period: s.period,
            clock: s.clock,
            tz: s.tz,
            path: s.path,
            book,
            doors: s.doors,
            retry: s.retry,
            delivering: HashMap::new(),
            read_only,
            timer: None,
            tasks: s.tasks,
        };
        // a panic reads the book afresh from `reminders.json`
        let state = Supervised::reopened_by(ACTOR, state, |old: &mut Schedule, hit: &str| {
            old.reloaded(hit)
        });
        (Self { state }, warning)
    }
}

impl Schedule {
    /// This state with its book read again from disk; deliveries under way and the
    /// timer carry over.
    fn reloaded(&mut self, hit: &str) -> Result<Schedule, store::StoreError> {
        let (book, warning) = store::load(&self.path)?;
        if let Some(w) = warning {
            warn!("{w}");
        }
        warn!(hit, "the cron actor was restarted from disk");
        Ok(Schedule {
            modes: self.modes.clone(),
            period: self.period,
            clock: self.clock.clone(),
            tz: self.tz,
            path: self.path.clone(),
            book,
            doors: self.doors.clone(),
            retry: self.retry,
            delivering: std::mem::take(&mut self.delivering),
            read_only: None,
            timer: self.timer.take(),
            tasks: self.tasks.clone(),
        })
    }

    pub(super) fn now(&self) -> DateTime<FixedOffset> {
        self.clock.now().with_timezone(&self.tz).fixed_offset()
    }

    pub(super) fn save(&self) -> Result<(), ReminderError> {
        self.save_book(&self.book)
    }

    fn save_book(&self, book: &ReminderBook) -> Result<(), ReminderError> {
        if let Some(why) = &self.read_only {
            return Err(ReminderError::Store(why.clone()));
        }
        store::save(&self.path, book).map_err(|e| {
            warn!(error = %e, "reminders could not be saved");
            ReminderError::Store(e.to_string())
        })
    }

    /// Change a copy of the book, save it, and keep it only if the save succeeded: memory
    /// and disk never disagree about what will ring.
    pub(super) fn commit<T>(
        &mut self,
        change: impl FnOnce(&mut ReminderBook) -> Result<T, BookError>,
    ) -> Result<T, ReminderError> {
        let mut next = self.book.clone();
        let out = change(&mut next)?;
        self.save_book(&next)?;
        self.book = next;
        Ok(out)
    }

    /// Ring what is due, then sleep until the next one.
    pub(super) fn tick(&mut self, ctx: &mut Context<Cron>) {
        let now = self.now();
        let skip: Vec<u32> = self.delivering.keys().copied().collect();
        let due = self.book.take_due(now, &skip);
        for r in &due.dropped {
            warn!(id = r.id, late_minutes = r.late_minutes(now), text = %r.text, "reminder more than six hours late; dropped");
        }
        if !due.dropped.is_empty() {
            let _ = self.save();
        }
        // reminders due together for one chat ring in the order they were due: each
        // delivery (which may wait and retry) starts when the one before it for that chat
        // has ended — delivered, given up, or cancelled (its sender then drops)
        let mut before: std::collections::HashMap<
            (String, String),
            tokio::sync::oneshot::Receiver<()>,
        > = std::collections::HashMap::new();
        for r in due.ring {
            let message = r.message(now);
            let doors = self.doors.clone();
            let retry = self.retry;
            let me = ctx.address();
            let id = r.id;
            let origin = r.origin.clone();
            info!(id, channel = %origin.channel, target = %origin.target, "reminder due");
            let (done, next) = tokio::sync::oneshot::channel::<()>();
            let prev = before.insert((origin.channel.clone(), origin.target.clone()), next);
            let task = self.tasks.spawn(async move {
                if let Some(prev) = prev {
                    let _ = prev.await;
                }
                let result = deliver(&doors, &origin, &message, retry).await;
                me.do_send(Delivered { id, result });
                drop(done);
            });
            self.delivering.insert(r.id, task.abort_handle());
        }
        self.arm(ctx);
    }

    /// Re-arm the timer for the next due reminder.
    pub(super) fn arm(&mut self, ctx: &mut Context<Cron>) {
        if let Some(h) = self.timer.take() {
            ctx.cancel_future(h);
        }
        let now = self.now();
        let skip: Vec<u32> = self.delivering.keys().copied().collect();
        let Some(next) = self
            .book
            .pending()
            .filter(|r| !skip.contains(&r.id))
            .map(|r| r.due_at)
            .next()
        else {
            return;
        };
        let wait = (next - now)
            .to_std()
            .unwrap_or(Duration::ZERO)
            .min(MAX_SLEEP);
        self.timer = Some(ctx.run_later(wait, |cron: &mut Cron, ctx| {
            let _ = cron.state.run("timer", |s| {
                s.timer = None;
                s.tick(ctx);
            });
        }));
    }
}

impl Actor for Cron {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Context<Self>) {
        if let Ok(period) = self.state.run("start", |s| s.period) {
            ctx.run_interval(period, |cron, _| {
                let _ = cron.state.run("expiry", |s| s.modes.nudge_expiry());
            });
        }
        // reminders that came due while homebot was down ring now, marked late
        let _ = self.state.run("start", |s| s.tick(ctx));
    }
}

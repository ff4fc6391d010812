//! The Cron actor: scheduled jobs. It owns
//! - the mode-expiry job: every `cron.expiry_check_secs` it asks the ModeManager to expire
//!   a session whose `expires_at` has passed (the ModeManager also checks before every
//!   turn, which covers a gateway that was down at 00:10);
//! - the household's reminders ([`crate::reminders`]): it keeps `reminders.json`, sleeps
//!   until the next one is due (no polling: the timer is re-armed after every change, on
//!   the injected clock), and rings it through the outbound door of the channel that set
//!   it. A failed delivery is retried with backoff for a while, then marked undelivered.
//!
//! Callers use [`CronHandle`]; firing never starts an LLM turn and never writes into a
//! mode session (a reminder is not part of any conversation's prefix).

mod delivery;

use crate::clock::SharedClock;
use crate::modes::ModesHandle;
use crate::outbound::Doors;
use crate::reminders::{store, when, BookError, Origin, Reminder, ReminderBook};
use crate::supervise::Supervisor;
use actix::prelude::*;
use chrono::{DateTime, FixedOffset};
use chrono_tz::Tz;
pub use delivery::{deliver, RetryPolicy};
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;
use tracing::{info, warn};

/// The longest single sleep of the reminder timer: it wakes at least this often to
/// re-read the clock (a suspended machine, a clock that jumped).
const MAX_SLEEP: Duration = Duration::from_secs(3600);

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ReminderError {
    #[error(transparent)]
    When(#[from] when::WhenError),
    #[error(transparent)]
    Book(#[from] BookError),
    #[error("the reminder could not be saved: {0}")]
    Store(String),
    #[error("the cron actor has stopped")]
    Gone,
    #[error(transparent)]
    Unavailable(#[from] crate::supervise::Unavailable),
}

/// The Cron actor's name in supervision messages.
const ACTOR: &str = "the cron actor";

pub struct Cron {
    modes: ModesHandle,
    period: Duration,
    clock: SharedClock,
    tz: Tz,
    path: PathBuf,
    book: ReminderBook,
    doors: Arc<Doors>,
    retry: RetryPolicy,
    /// Reminders being delivered (still pending in the book until it succeeds), and the
    /// task delivering each (aborted when the reminder is cancelled meanwhile).
    delivering: HashMap<u32, tokio::task::AbortHandle>,
    /// `reminders.json` could not be read: nothing is written over it.
    read_only: Option<String>,
    timer: Option<SpawnHandle>,
    /// Restarts after a panic ([`crate::supervise`]): the book is read again from disk.
    sup: Supervisor,
}

pub struct CronSetup {
    pub modes: ModesHandle,
    pub period: Duration,
    pub clock: SharedClock,
    pub tz: Tz,
    /// `reminders.json`.
    pub path: PathBuf,
    pub doors: Arc<Doors>,
    pub retry: RetryPolicy,
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
        let cron = Self {
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
            sup: Supervisor::new(ACTOR),
        };
        (cron, warning)
    }

    /// Run `f` supervised: a panic in it reads the book afresh from `reminders.json`.
    fn supervised<R>(
        &mut self,
        what: &'static str,
        f: impl FnOnce(&mut Cron) -> R,
    ) -> Result<R, crate::supervise::Unavailable> {
        let mut sup = std::mem::replace(&mut self.sup, Supervisor::new(ACTOR));
        let r = sup.run(self, what, f, |old, hit| old.reloaded(hit));
        self.sup = sup;
        r
    }

    /// This actor with its book read again from disk; deliveries under way and the
    /// timer carry over.
    fn reloaded(&mut self, hit: &str) -> Result<Cron, store::StoreError> {
        let (book, warning) = store::load(&self.path)?;
        if let Some(w) = warning {
            warn!("{w}");
        }
        warn!(hit, "the cron actor was restarted from disk");
        Ok(Cron {
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
            sup: Supervisor::new(ACTOR),
        })
    }

    fn now(&self) -> DateTime<FixedOffset> {
        self.clock.now().with_timezone(&self.tz).fixed_offset()
    }

    fn save(&self) -> Result<(), ReminderError> {
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
    fn commit<T>(
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
    fn tick(&mut self, ctx: &mut Context<Self>) {
        let now = self.now();
        let skip: Vec<u32> = self.delivering.keys().copied().collect();
        let due = self.book.take_due(now, &skip);
        for r in &due.dropped {
            warn!(id = r.id, late_minutes = r.late_minutes(now), text = %r.text, "reminder more than six hours late; dropped");
        }
        if !due.dropped.is_empty() {
            let _ = self.save();
        }
        for r in due.ring {
            let message = r.message(now);
            let doors = self.doors.clone();
            let retry = self.retry;
            let me = ctx.address();
            let id = r.id;
            let origin = r.origin.clone();
            info!(id, channel = %origin.channel, target = %origin.target, "reminder due");
            let task = tokio::spawn(async move {
                let result = deliver(&doors, &origin, &message, retry).await;
                me.do_send(Delivered { id, result });
            });
            self.delivering.insert(r.id, task.abort_handle());
        }
        self.arm(ctx);
    }

    /// Re-arm the timer for the next due reminder.
    fn arm(&mut self, ctx: &mut Context<Self>) {
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
        self.timer = Some(ctx.run_later(wait, |cron, ctx| {
            cron.timer = None;
            cron.tick(ctx);
        }));
    }
}

impl Actor for Cron {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Context<Self>) {
        ctx.run_interval(self.period, |cron, _| cron.modes.nudge_expiry());
        // reminders that came due while homebot was down ring now, marked late
        self.tick(ctx);
    }
}

#[derive(Message)]
#[rtype(result = "Result<Reminder, ReminderError>")]
pub struct SetReminder {
    pub in_seconds: Option<i64>,
    pub at: Option<String>,
    pub text: String,
    pub origin: Origin,
}

/// Whose reminders a caller may see and cancel: a chat sees only its own (a guest in a
/// QQ group must not read, nor cancel, a private chat's reminders); the owner (terminal,
/// `homebot reminders`) sees the household's.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Scope {
    Household,
    Chat { channel: String, chat_id: String },
}

impl Scope {
    fn covers(&self, r: &Reminder) -> bool {
        match self {
            Scope::Household => true,
            Scope::Chat { channel, chat_id } => {
                r.origin.channel == *channel && r.origin.chat_id == *chat_id
            }
        }
    }
}

#[derive(Message)]
#[rtype(result = "Vec<Reminder>")]
pub struct ListReminders {
    /// Finished ones too (fired, undelivered, cancelled, dropped), newest first.
    pub all: bool,
    pub scope: Scope,
}

#[derive(Message)]
#[rtype(result = "Result<Reminder, ReminderError>")]
pub struct CancelReminder {
    pub id: u32,
    pub scope: Scope,
}

/// Re-read the clock now (tests move an injected clock, then wake the timer).
#[derive(Message)]
#[rtype(result = "()")]
pub struct Wake;

/// The reminders being delivered right now (their ids).
#[derive(Message)]
#[rtype(result = "Vec<u32>")]
pub struct Delivering;

impl Handler<Delivering> for Cron {
    type Result = MessageResult<Delivering>;
    fn handle(&mut self, _: Delivering, _: &mut Context<Self>) -> Self::Result {
        let ids = self.supervised("delivering", |c| {
            let mut ids: Vec<u32> = c.delivering.keys().copied().collect();
            ids.sort();
            ids
        });
        MessageResult(ids.unwrap_or_default())
    }
}

#[derive(Message)]
#[rtype(result = "()")]
struct Delivered {
    id: u32,
    result: Result<(), crate::outbound::DeliveryError>,
}

impl Handler<SetReminder> for Cron {
    type Result = Result<Reminder, ReminderError>;
    fn handle(&mut self, m: SetReminder, ctx: &mut Context<Self>) -> Self::Result {
        self.supervised("set-reminder", |c| {
            crate::failpoint::panic_once("cron.set_reminder");
            let now = c.now();
            let due = when::resolve(c.clock.now(), c.tz, m.in_seconds, m.at.as_deref())?;
            let r = c.commit(|b| b.add(now, due, &m.text, m.origin).cloned())?;
            info!(id = r.id, due = %r.due_at, "reminder set");
            c.arm(ctx);
            Ok(r)
        })?
    }
}

impl Handler<ListReminders> for Cron {
    type Result = MessageResult<ListReminders>;
    fn handle(&mut self, m: ListReminders, _: &mut Context<Self>) -> Self::Result {
        let list = self.supervised("list-reminders", |c| {
            let list: Vec<Reminder> = if m.all {
                c.book.all().cloned().collect()
            } else {
                c.book.pending().cloned().collect()
            };
            list.into_iter().filter(|r| m.scope.covers(r)).collect()
        });
        MessageResult(list.unwrap_or_default())
    }
}

impl Handler<CancelReminder> for Cron {
    type Result = Result<Reminder, ReminderError>;
    fn handle(&mut self, m: CancelReminder, ctx: &mut Context<Self>) -> Self::Result {
        self.supervised("cancel-reminder", |c| {
            let now = c.now();
            // another chat's reminder is as if it did not exist
            if !c.book.get(m.id).is_some_and(|r| m.scope.covers(r)) {
                return Err(BookError::NotPending(m.id).into());
            }
            let r = c.commit(|b| b.cancel(m.id, now).cloned())?;
            // being delivered right now: stop it, it must not ring after all
            if let Some(task) = c.delivering.remove(&m.id) {
                task.abort();
            }
            c.arm(ctx);
            Ok(r)
        })?
    }
}

impl Handler<Wake> for Cron {
    type Result = ();
    fn handle(&mut self, _: Wake, ctx: &mut Context<Self>) {
        let _ = self.supervised("wake", |c| c.tick(ctx));
    }
}

impl Handler<Delivered> for Cron {
    type Result = ();
    fn handle(&mut self, m: Delivered, ctx: &mut Context<Self>) {
        let _ = self.supervised("delivered", |c| {
            c.delivering.remove(&m.id);
            let now = c.now();
            match m.result {
                Ok(()) => {
                    info!(id = m.id, "reminder delivered");
                    // crash test: delivered, not yet marked fired
                    crate::failpoint::hit("reminder.before_marked");
                    c.book.mark_fired(m.id, now);
                }
                Err(e) => {
                    warn!(id = m.id, error = %e, "reminder undelivered; shown by `homebot reminders`");
                    c.book.mark_undelivered(m.id, now, &e.to_string());
                }
            }
            let _ = c.save();
            c.arm(ctx);
        });
    }
}

/// The cloneable handle everything else uses.
#[derive(Clone)]
pub struct CronHandle {
    addr: Addr<Cron>,
}

impl CronHandle {
    pub fn new(addr: Addr<Cron>) -> Self {
        Self { addr }
    }

    pub async fn set(
        &self,
        in_seconds: Option<i64>,
        at: Option<String>,
        text: String,
        origin: Origin,
    ) -> Result<Reminder, ReminderError> {
        self.addr
            .send(SetReminder {
                in_seconds,
                at,
                text,
                origin,
            })
            .await
            .map_err(|_| ReminderError::Gone)?
    }

    /// The household's reminders (the owner's view).
    pub async fn list(&self, all: bool) -> Result<Vec<Reminder>, ReminderError> {
        self.list_in(all, Scope::Household).await
    }

    pub async fn list_in(&self, all: bool, scope: Scope) -> Result<Vec<Reminder>, ReminderError> {
        self.addr
            .send(ListReminders { all, scope })
            .await
            .map_err(|_| ReminderError::Gone)
    }

    pub async fn cancel(&self, id: u32) -> Result<Reminder, ReminderError> {
        self.cancel_in(id, Scope::Household).await
    }

    pub async fn cancel_in(&self, id: u32, scope: Scope) -> Result<Reminder, ReminderError> {
        self.addr
            .send(CancelReminder { id, scope })
            .await
            .map_err(|_| ReminderError::Gone)?
    }

    /// Ring whatever is due by the clock now.
    pub async fn wake(&self) {
        let _ = self.addr.send(Wake).await;
    }

    /// The reminders being delivered right now: a ring starts exactly when its id appears.
    pub async fn delivering(&self) -> Vec<u32> {
        self.addr.send(Delivering).await.unwrap_or_default()
    }
}

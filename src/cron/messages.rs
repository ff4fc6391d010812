//! The Cron actor's messages and handlers: each runs in the actor's supervised cell.

use super::{Cron, ReminderError};
use crate::reminders::{when, BookError, Origin, Reminder};
use actix::prelude::*;
use tracing::{info, warn};

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
        let ids = self.state.run("delivering", |c| {
            let mut ids: Vec<u32> = c.delivering.keys().copied().collect();
            ids.sort();
            ids
        });
        MessageResult(ids.unwrap_or_default())
    }
}

#[derive(Message)]
#[rtype(result = "()")]
pub(super) struct Delivered {
    pub(super) id: u32,
    pub(super) result: Result<(), crate::outbound::DeliveryError>,
}

impl Handler<SetReminder> for Cron {
    type Result = Result<Reminder, ReminderError>;
    fn handle(&mut self, m: SetReminder, ctx: &mut Context<Self>) -> Self::Result {
        self.state.run("set-reminder", |c| {
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
        let list = self.state.run("list-reminders", |c| {
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
        self.state.run("cancel-reminder", |c| {
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
        let _ = self.state.run("wake", |c| c.tick(ctx));
    }
}

impl Handler<Delivered> for Cron {
    type Result = ();
    fn handle(&mut self, m: Delivered, ctx: &mut Context<Self>) {
        let _ = self.state.run("delivered", |c| {
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

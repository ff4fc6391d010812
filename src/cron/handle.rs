//! [`CronHandle`]: how everything else reaches the Cron actor.

use super::messages::{CancelReminder, Delivering, ListReminders, Scope, SetReminder, Wake};
use super::{Cron, ReminderError};
use crate::reminders::{Origin, Reminder};
use actix::prelude::*;

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

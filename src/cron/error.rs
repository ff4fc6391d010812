//! Why a reminder could not be set, listed or cancelled.

use crate::reminders::{when, BookError};

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
    Unavailable(#[from] crate::actor::Unavailable),
}

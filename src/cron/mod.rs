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

//!
//! Layout: `actor` — the [`Cron`] actor, its state in a supervised cell (a panic reads
//! `reminders.json` afresh) and its timer; `messages` — what it answers; `handle` —
//! [`CronHandle`]; `error` — [`ReminderError`]; `delivery` — a reminder rung through a
//! channel's door, retried with backoff.

mod actor;
mod delivery;
mod error;
mod handle;
mod messages;

pub use actor::{Cron, CronSetup};
pub use delivery::{deliver, RetryPolicy};
pub use error::ReminderError;
pub use handle::CronHandle;
pub use messages::{CancelReminder, Delivering, ListReminders, Scope, SetReminder, Wake};

//! Reminders and timers ("十分钟后提醒我关火"), owned by the Cron actor.
//!
//! - [`when`] — when a reminder rings: `in_seconds` or `at` ("HH:MM" / RFC 3339), bounded;
//! - [`book`] — `ReminderBook`, every reminder and its state (pure; at-least-once firing);
//! - [`store`] — `reminders.json` in the workspace, replaced atomically, 0600;
//! - `text` — the reminder list as text ([`render`]).

pub mod book;
pub mod store;
pub mod when;
pub use book::{BookError, Origin, Reminder, ReminderBook, State};

mod text;

pub use text::render;

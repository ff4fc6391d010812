//! Reminders and timers ("十分钟后提醒我关火"), owned by the Cron actor.
//!
//! - [`when`] — when a reminder rings: `in_seconds` or `at` ("HH:MM" / RFC 3339), bounded;
//! - [`book`] — `ReminderBook`, every reminder and its state (pure; at-least-once firing);
//! - [`store`] — `reminders.json` in the workspace, replaced atomically, 0600.

pub mod book;
pub mod store;
pub mod when;

pub use book::{BookError, Origin, Reminder, ReminderBook, State};

/// The reminder list (`/reminders`, `homebot reminders`): one line each.
pub fn render(list: &[Reminder]) -> String {
    if list.is_empty() {
        return "没有提醒。".into();
    }
    let mut out = String::new();
    for r in list {
        let when = r.due_at.format("%m-%d %H:%M:%S");
        let state = match &r.state {
            State::Pending => "待响".to_string(),
            State::Fired {
                late_minutes: 0, ..
            } => "已响".to_string(),
            State::Fired { late_minutes, .. } => format!("已响（晚了 {late_minutes} 分钟）"),
            State::Undelivered { error, .. } => format!("未送达：{error}"),
            State::Cancelled { .. } => "已取消".to_string(),
            State::Dropped { late_minutes, .. } => {
                format!("已作废（homebot 停机，晚了 {late_minutes} 分钟）")
            }
        };
        out.push_str(&format!(
            "#{} {when} {} · {}:{} · {} · {state}\n",
            r.id, r.text, r.origin.channel, r.origin.target, r.origin.speaker_id
        ));
    }
    out
}

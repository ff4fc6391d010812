//! The household's reminders as text (`render`): what `/reminders` and `list_reminders` show.

use super::book::{Reminder, State};

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

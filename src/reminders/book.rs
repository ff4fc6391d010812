//! `ReminderBook`: every reminder of the household and its state, synchronous and
//! runtime-free (the Cron actor owns one and adds time and delivery).
//!
//! Firing is **at-least-once**: a due reminder stays `pending` while it is delivered and
//! is marked `fired` only when its delivery succeeded (or `undelivered` when the retries
//! ran out). A crash in between delivers it again at the next start — a cook may hear
//! "该关火了" twice, but never not at all.

use chrono::{DateTime, FixedOffset};
use serde::{Deserialize, Serialize};

/// At most this many reminders may wait at once, for the whole household.
pub const MAX_PENDING: usize = 50;
/// … and at most this many of them from one chat, so one chat cannot take every slot.
pub const MAX_PENDING_PER_CHAT: usize = 20;
/// A reminder more than this late (the gateway was down) is reported once and dropped.
pub const MAX_LATE_MINUTES: i64 = 6 * 60;
/// Finished reminders kept for `homebot reminders --all`.
const KEEP_FINISHED: usize = 200;
/// Longest reminder text.
pub const MAX_TEXT_CHARS: usize = 500;

/// Who set a reminder and where it rings: the turn that set it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Origin {
    pub channel: String,
    pub chat_id: String,
    pub speaker_id: String,
    /// The channel's outbound target for this chat (a satellite id, `group:<id>`, …).
    pub target: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "state", rename_all = "lowercase")]
pub enum State {
    Pending,
    Fired {
        at: String,
        /// Minutes after its time it rang (the gateway was down when it came due).
        #[serde(default, skip_serializing_if = "is_zero")]
        late_minutes: i64,
    },
    /// Every delivery attempt failed.
    Undelivered {
        at: String,
        error: String,
    },
    Cancelled {
        at: String,
    },
    /// Came due more than six hours before homebot could ring it.
    Dropped {
        at: String,
        late_minutes: i64,
    },
}

fn is_zero(n: &i64) -> bool {
    *n == 0
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Reminder {
    pub id: u32,
    pub text: String,
    pub due_at: DateTime<FixedOffset>,
    pub created_at: DateTime<FixedOffset>,
    pub origin: Origin,
    #[serde(flatten)]
    pub state: State,
}

impl Reminder {
    pub fn is_pending(&self) -> bool {
        matches!(self.state, State::Pending)
    }

    /// Minutes between its time and `now` (0 when on time or early).
    pub fn late_minutes(&self, now: DateTime<FixedOffset>) -> i64 {
        ((now - self.due_at).num_seconds() / 60).max(0)
    }

    /// The words delivered: the text, marked when late.
    pub fn message(&self, now: DateTime<FixedOffset>) -> String {
        match self.late_minutes(now) {
            0 => format!("提醒：{}", self.text),
            n => format!("提醒：{}（晚了 {n} 分钟）", self.text),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BookError {
    #[error("there are already {MAX_PENDING} pending reminders; cancel one first")]
    Full,
    #[error("this chat already has {MAX_PENDING_PER_CHAT} pending reminders; cancel one first")]
    ChatFull,
    #[error("the reminder text is empty")]
    Empty,
    #[error("the reminder text is longer than {MAX_TEXT_CHARS} characters")]
    TooLong,
    #[error("no pending reminder has id {0}")]
    NotPending(u32),
}

/// What came due: deliver these; drop-reports were marked already.
#[derive(Debug, Default, PartialEq)]
pub struct Due {
    pub ring: Vec<Reminder>,
    pub dropped: Vec<Reminder>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ReminderBook {
    next_id: u32,
    reminders: Vec<Reminder>,
}

fn stamp(t: DateTime<FixedOffset>) -> String {
    t.to_rfc3339_opts(chrono::SecondsFormat::Secs, false)
}

impl ReminderBook {
    pub fn add(
        &mut self,
        now: DateTime<FixedOffset>,
        due_at: DateTime<FixedOffset>,
        text: &str,
        origin: Origin,
    ) -> Result<&Reminder, BookError> {
        let text = text.trim();
        if text.is_empty() {
            return Err(BookError::Empty);
        }
        if text.chars().count() > MAX_TEXT_CHARS {
            return Err(BookError::TooLong);
        }
        if self.pending().count() >= MAX_PENDING {
            return Err(BookError::Full);
        }
        let same_chat = |r: &&Reminder| {
            r.origin.channel == origin.channel && r.origin.chat_id == origin.chat_id
        };
        if self.pending().filter(same_chat).count() >= MAX_PENDING_PER_CHAT {
            return Err(BookError::ChatFull);
        }
        self.next_id = self.next_id.max(1);
        let id = self.next_id;
        self.next_id += 1;
        self.reminders.push(Reminder {
            id,
            text: text.to_string(),
            due_at,
            created_at: now,
            origin,
            state: State::Pending,
        });
        self.prune();
        Ok(self.reminders.last().expect("pushed just above"))
    }

    pub fn cancel(&mut self, id: u32, now: DateTime<FixedOffset>) -> Result<&Reminder, BookError> {
        let r = self
            .reminders
            .iter_mut()
            .find(|r| r.id == id && r.is_pending())
            .ok_or(BookError::NotPending(id))?;
        r.state = State::Cancelled { at: stamp(now) };
        Ok(r)
    }

    pub fn get(&self, id: u32) -> Option<&Reminder> {
        self.reminders.iter().find(|r| r.id == id)
    }

    /// Pending reminders, soonest first.
    pub fn pending(&self) -> impl Iterator<Item = &Reminder> {
        let mut v: Vec<&Reminder> = self.reminders.iter().filter(|r| r.is_pending()).collect();
        v.sort_by_key(|r| (r.due_at, r.id));
        v.into_iter()
    }

    /// Every reminder kept, newest first.
    pub fn all(&self) -> impl Iterator<Item = &Reminder> {
        self.reminders.iter().rev()
    }

    pub fn next_due(&self) -> Option<DateTime<FixedOffset>> {
        self.pending().map(|r| r.due_at).next()
    }

    /// The pending reminders due at `now`, in order (`skip` are already being delivered).
    /// Those more than six hours late are marked dropped instead.
    pub fn take_due(&mut self, now: DateTime<FixedOffset>, skip: &[u32]) -> Due {
        let mut due: Vec<&mut Reminder> = self
            .reminders
            .iter_mut()
            .filter(|r| r.is_pending() && r.due_at <= now && !skip.contains(&r.id))
            .collect();
        due.sort_by_key(|r| (r.due_at, r.id));
        let mut out = Due::default();
        for r in due {
            let late = r.late_minutes(now);
            if late > MAX_LATE_MINUTES {
                r.state = State::Dropped {
                    at: stamp(now),
                    late_minutes: late,
                };
                out.dropped.push(r.clone());
            } else {
                out.ring.push(r.clone());
            }
        }
        out
    }

    pub fn mark_fired(&mut self, id: u32, now: DateTime<FixedOffset>) {
        if let Some(r) = self
            .reminders
            .iter_mut()
            .find(|r| r.id == id && r.is_pending())
        {
            r.state = State::Fired {
                at: stamp(now),
                late_minutes: r.late_minutes(now),
            };
        }
    }

    pub fn mark_undelivered(&mut self, id: u32, now: DateTime<FixedOffset>, error: &str) {
        if let Some(r) = self
            .reminders
            .iter_mut()
            .find(|r| r.id == id && r.is_pending())
        {
            r.state = State::Undelivered {
                at: stamp(now),
                error: error.to_string(),
            };
        }
    }

    /// Keep every pending reminder and the newest finished ones.
    fn prune(&mut self) {
        let finished = self.reminders.iter().filter(|r| !r.is_pending()).count();
        let mut excess = finished.saturating_sub(KEEP_FINISHED);
        self.reminders.retain(|r| {
            if excess > 0 && !r.is_pending() {
                excess -= 1;
                false
            } else {
                true
            }
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(s: &str) -> DateTime<FixedOffset> {
        DateTime::parse_from_rfc3339(s).unwrap()
    }

    fn origin() -> Origin {
        Origin {
            channel: "qq".into(),
            chat_id: "group:5550001".into(),
            speaker_id: "mom".into(),
            target: "group:5550001".into(),
        }
    }

    #[test]
    fn due_in_order_late_marked_stale_dropped() {
        let mut b = ReminderBook::default();
        let now = t("2026-10-22T19:50:00+08:00");
        let a = b
            .add(now, t("2026-10-22T20:00:00+08:00"), "关火", origin())
            .unwrap()
            .id;
        let c = b
            .add(now, t("2026-10-22T20:00:00+08:00"), "下面条", origin())
            .unwrap()
            .id;
        let early = b
            .add(now, t("2026-10-22T19:55:00+08:00"), "翻面", origin())
            .unwrap()
            .id;
        assert_eq!(b.next_due(), Some(t("2026-10-22T19:55:00+08:00")));
        assert!(b
            .take_due(t("2026-10-22T19:54:59+08:00"), &[])
            .ring
            .is_empty());
        let due = b.take_due(t("2026-10-22T20:00:00+08:00"), &[]);
        let ids: Vec<u32> = due.ring.iter().map(|r| r.id).collect();
        assert_eq!(
            ids,
            [early, a, c],
            "by time, then in the order they were set"
        );
        assert_eq!(
            due.ring[1].message(t("2026-10-22T20:00:00+08:00")),
            "提醒：关火"
        );
        assert_eq!(
            due.ring[0].message(t("2026-10-22T20:00:00+08:00")),
            "提醒：翻面（晚了 5 分钟）"
        );
        // being delivered: not handed out twice
        assert!(b
            .take_due(t("2026-10-22T20:00:01+08:00"), &[early, a, c])
            .ring
            .is_empty());
        b.mark_fired(a, t("2026-10-22T20:00:00+08:00"));
        assert!(!b.get(a).unwrap().is_pending());
        // the gateway was down all night: more than six hours late is dropped, once
        let later = b
            .add(now, t("2026-10-22T21:00:00+08:00"), "收衣服", origin())
            .unwrap()
            .id;
        let morning = t("2026-10-23T08:00:00+08:00");
        let due = b.take_due(morning, &[early, c]);
        assert_eq!(due.dropped.len(), 1);
        assert_eq!(due.dropped[0].id, later);
        assert!(
            b.take_due(morning, &[early, c]).dropped.is_empty(),
            "reported once"
        );
    }

    #[test]
    fn limits_and_cancel() {
        let mut b = ReminderBook::default();
        let now = t("2026-10-22T19:50:00+08:00");
        let due = t("2026-10-22T20:00:00+08:00");
        assert_eq!(
            b.add(now, due, "  ", origin()).unwrap_err(),
            BookError::Empty
        );
        assert_eq!(
            b.add(now, due, &"长".repeat(MAX_TEXT_CHARS + 1), origin())
                .unwrap_err(),
            BookError::TooLong
        );
        let in_chat = |i: usize| Origin {
            chat_id: format!("group:{}", i % 3),
            ..origin()
        };
        for i in 0..MAX_PENDING {
            b.add(now, due, &format!("第{i}个"), in_chat(i)).unwrap();
        }
        assert_eq!(
            b.add(now, due, "再一个", origin()).unwrap_err(),
            BookError::Full
        );
        b.cancel(3, now).unwrap();
        assert_eq!(b.cancel(3, now).unwrap_err(), BookError::NotPending(3));
        assert!(
            b.add(now, due, "再一个", in_chat(3)).is_ok(),
            "a slot came free"
        );
        // one chat cannot take every slot
        let mut one = ReminderBook::default();
        for i in 0..MAX_PENDING_PER_CHAT {
            one.add(now, due, &format!("{i}"), origin()).unwrap();
        }
        assert_eq!(
            one.add(now, due, "x", origin()).unwrap_err(),
            BookError::ChatFull
        );
        assert!(one.add(now, due, "x", in_chat(1)).is_ok());
        // ids are never reused
        assert_eq!(b.all().next().unwrap().id, (MAX_PENDING + 1) as u32);
    }

    #[test]
    fn the_file_form_round_trips() {
        let mut b = ReminderBook::default();
        let now = t("2026-10-22T19:50:00+08:00");
        b.add(now, t("2026-10-22T20:00:00+08:00"), "关火", origin())
            .unwrap();
        b.mark_undelivered(1, now, "qq: not connected");
        let json = serde_json::to_string_pretty(&b).unwrap();
        assert!(json.contains("\"state\": \"undelivered\""), "{json}");
        let back: ReminderBook = serde_json::from_str(&json).unwrap();
        assert_eq!(back, b);
    }
}

//! `ChatHistories`: every normal chat's log, the most recently used chats kept in memory
//! with only the tail of each that a request can replay.

use super::carried::{Carried, CarriedSession};
use super::file_safe;
use super::tail::load_tail;
use crate::history::{self, HistoryLog, Loaded, Record};
use chrono::{DateTime, FixedOffset};
use std::collections::HashMap;
use std::path::{Path, PathBuf};

const MAX_CACHED_CHATS: usize = 256;

/// Records replayed by a normal chat when nobody says otherwise (the config default).
const DEFAULT_REPLAYED: usize = 20;

pub struct ChatHistories {
    pub(super) dir: PathBuf,
    /// key → the chat's history and when it was last used.
    pub(super) cache: HashMap<String, (HistoryLog, u64)>,
    pub(super) uses: u64,
    /// Records of a chat kept in memory (at least what a request replays).
    pub(super) keep: usize,
    /// Which ended session each chat carries.
    pub(super) carried: Carried,
}

impl ChatHistories {
    pub fn new(dir: &Path) -> Self {
        Self {
            dir: dir.to_path_buf(),
            cache: HashMap::new(),
            uses: 0,
            keep: keep_for(DEFAULT_REPLAYED),
            carried: Carried::load(dir),
        }
    }

    /// The ended mode session `channel`/`chat_id` carries at `now`, if any.
    pub fn carried(
        &self,
        channel: &str,
        chat_id: &str,
        now: DateTime<FixedOffset>,
    ) -> Option<CarriedSession> {
        self.carried.get(channel, chat_id, now)
    }

    /// A mode session ended: the chats that took part in it (from its `records`) carry
    /// it for a day.
    pub fn session_ended(
        &mut self,
        records: &[Record],
        session: CarriedSession,
        now: DateTime<FixedOffset>,
    ) -> std::io::Result<()> {
        let chats = super::carried::participants(records);
        if chats.is_empty() {
            return Ok(());
        }
        self.carried.ended(&chats, session, now)
    }

    /// Where the checkpoint of a chat's older turns is kept: `<chat>.checkpoint.json`
    /// beside its log (`context::checkpoint` reads and writes it).
    pub fn checkpoint_path(&self, channel: &str, chat_id: &str) -> PathBuf {
        self.path(channel, chat_id)
            .with_extension("checkpoint.json")
    }

    /// A request replays at most `turns` records of a chat (`agent.normal_history_turns`).
    pub fn set_replayed(&mut self, turns: usize) {
        self.keep = keep_for(turns);
    }

    /// Records of a chat kept in memory.
    pub fn replayed_keep(&self) -> usize {
        self.keep
    }

    pub fn set_keep(&mut self, keep: usize) {
        self.keep = keep;
    }

    pub fn path(&self, channel: &str, chat_id: &str) -> PathBuf {
        self.dir
            .join(file_safe(channel))
            .join(format!("{}.jsonl", file_safe(chat_id)))
    }

    /// The chat's history, loaded on first use. Problems with the file (a torn tail set
    /// aside, an unreadable file) come back as warnings; the chat then starts with what
    /// could be read.
    pub fn log(&mut self, channel: &str, chat_id: &str) -> (HistoryLog, Vec<String>) {
        let key = format!("{channel}\u{0}{chat_id}");
        self.uses += 1;
        if let Some((l, used)) = self.cache.get_mut(&key) {
            *used = self.uses;
            return (l.clone(), Vec::new());
        }
        let path = self.path(channel, chat_id);
        let (log, warnings) = match load_tail(&path, self.keep) {
            Ok(Some((records, offset, warnings))) => {
                (HistoryLog::from_tail(records, offset), warnings)
            }
            // torn, not a file, or unreadable as a tail: the full loader repairs and reports
            other => {
                let loaded = match other {
                    Err(e) => Err(e),
                    _ => history::load_records(&path),
                }
                .unwrap_or_else(|e| Loaded {
                    records: Vec::new(),
                    warnings: vec![format!(
                        "{}: {e}; starting this chat without history",
                        path.display()
                    )],
                });
                let log = HistoryLog::from_records(loaded.records);
                log.forget_before(log.len().saturating_sub(self.keep));
                (log, loaded.warnings)
            }
        };
        if self.cache.len() >= MAX_CACHED_CHATS {
            // the chat used longest ago goes (it reloads from its file when it talks again)
            if let Some(old) = self
                .cache
                .iter()
                .min_by_key(|(_, (_, used))| *used)
                .map(|(k, _)| k.clone())
            {
                self.cache.remove(&old);
            }
        }
        self.cache.insert(key, (log.clone(), self.uses));
        (log, warnings)
    }

    /// Append a turn to the chat's file (fsynced), then to its history in memory.
    pub fn append(&mut self, record: Record) -> (std::io::Result<()>, Vec<String>) {
        let (r, warnings) = self.append_unsynced(record);
        (r.and_then(|f| f.sync_data()), warnings)
    }

    /// [`ChatHistories::append`] without the fsync: the file, to sync before the record
    /// is relied on.
    pub fn append_unsynced(
        &mut self,
        record: Record,
    ) -> (std::io::Result<std::fs::File>, Vec<String>) {
        // the in-memory log first: loading it after the append would count the record twice
        let (log, warnings) = self.log(&record.channel, &record.chat_id);
        let path = self.path(&record.channel, &record.chat_id);
        let r = history::append_record_unsynced(&path, &record);
        if r.is_ok() {
            log.push(record);
            // let go of the oldest in chunks, so the tail is not moved every turn
            if log.held() >= 2 * self.keep {
                log.forget_before(log.len() - self.keep);
            }
        }
        (r, warnings)
    }
}

/// Records kept in memory for a chat that replays `turns`: every record a request can
/// replay (at most `turns`), twice over, and a margin.
fn keep_for(turns: usize) -> usize {
    2 * turns + 16
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::chats::file_name::MAX_NAME;

    #[test]
    fn file_safe_keeps_distinct_ids_distinct_and_short() {
        assert_eq!(file_safe("local"), "local");
        assert_ne!(file_safe("group:1"), file_safe("group_1"));
        assert!(!file_safe("../x").contains('/'));
        assert!(!file_safe("..").starts_with('.'));
        let long_a = "a".repeat(300);
        let long_b = format!("{}b", "a".repeat(299));
        assert!(file_safe(&long_a).len() <= MAX_NAME);
        assert_ne!(file_safe(&long_a), file_safe(&long_b));
        assert!(file_safe(&"语".repeat(200)).len() <= MAX_NAME);
    }

    #[test]
    fn a_very_long_chat_id_is_recorded() {
        let d = tempfile::tempdir().unwrap();
        let mut chats = ChatHistories::new(d.path());
        let id = "x".repeat(400);
        let r = Record {
            timestamp: "2026-10-22T20:00:00+08:00".into(),
            channel: "voice".into(),
            chat_id: id.clone(),
            speaker_id: "guest".into(),
            user: "u".into(),
            assistant: "a".into(),
            error: None,
            speaker_name: None,
            sent: None,
            place: None,
            tool_results: Vec::new(),
        };
        chats.append(r).0.unwrap();
        let mut fresh = ChatHistories::new(d.path());
        assert_eq!(fresh.log("voice", &id).0.len(), 1);
    }

    fn rec(i: usize) -> Record {
        Record {
            timestamp: "2026-10-22T20:00:00+08:00".into(),
            channel: "qq".into(),
            chat_id: "group:1".into(),
            speaker_id: "mom".into(),
            user: format!("第{i}问"),
            assistant: format!("第{i}答"),
            error: None,
            speaker_name: None,
            sent: None,
            place: None,
            tool_results: Vec::new(),
        }
    }

    #[test]
    fn a_long_chat_holds_only_its_tail_and_keeps_the_file_s_indices() {
        let d = tempfile::tempdir().unwrap();
        let mut chats = ChatHistories::new(d.path());
        chats.set_replayed(10);
        let keep = chats.replayed_keep();
        for i in 0..500 {
            chats.append(rec(i)).0.unwrap();
        }
        let (log, _) = chats.log("qq", "group:1");
        assert_eq!(log.len(), 500);
        assert!(log.held() < 2 * keep, "{} held", log.held());
        let view = log.view();
        // the records a request can replay are all there, at their own indices
        view.with_range(500 - 2 * 10, |records, _| {
            assert_eq!(records.len(), 20);
            assert_eq!(records[0].user, "第480问");
        });
        // loaded again: only the tail is read, at the same indices
        let mut fresh = ChatHistories::new(d.path());
        fresh.set_replayed(10);
        let (log, warnings) = fresh.log("qq", "group:1");
        assert!(warnings.is_empty(), "{warnings:?}");
        assert_eq!((log.len(), log.held()), (500, keep));
        log.view().with_range(499, |records, _| {
            assert_eq!(records[0].user, "第499问");
        });
    }

    #[test]
    fn a_torn_or_damaged_file_still_loads_through_the_full_loader() {
        let d = tempfile::tempdir().unwrap();
        let mut chats = ChatHistories::new(d.path());
        for i in 0..3 {
            chats.append(rec(i)).0.unwrap();
        }
        let path = chats.path("qq", "group:1");
        let mut f = std::fs::OpenOptions::new()
            .append(true)
            .open(&path)
            .unwrap();
        std::io::Write::write_all(&mut f, b"not json\n{\"torn").unwrap();
        let mut fresh = ChatHistories::new(d.path());
        let (log, warnings) = fresh.log("qq", "group:1");
        assert_eq!(log.len(), 3, "{warnings:?}");
        assert!(!warnings.is_empty());
    }

    #[test]
    fn the_chats_used_least_recently_are_the_ones_let_go() {
        let d = tempfile::tempdir().unwrap();
        let mut chats = ChatHistories::new(d.path());
        chats.append(rec(0)).0.unwrap();
        let (busy, _) = chats.log("qq", "group:1");
        for wake in 0..(2 * MAX_CACHED_CHATS) {
            chats.log("qq", "group:1"); // the group keeps talking
            chats.log("voice", &format!("wake-{wake}"));
        }
        assert!(chats.cache.len() <= MAX_CACHED_CHATS);
        let (still, _) = chats.log("qq", "group:1");
        assert!(
            busy.view().same_log(&still.view()),
            "a busy chat is never evicted"
        );
    }
}

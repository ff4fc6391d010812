//! Normal-operation chat histories: outside a run mode each chat (a QQ group, a voice
//! session, a terminal) has its own `chats/<channel>/<chat>.jsonl`, in the same record
//! format as a mode session (see [`crate::history`]). Not mode logic: the ModeManager owns
//! an instance because it is the one writer of every history file.
//!
//! Only recently used chats stay in memory (voice makes a new chat per wake); an evicted
//! one reloads from its file. File names come from peer-controlled ids, so they are made
//! safe and bounded ([`file_safe`]).

use crate::history::{self, HistoryLog, Loaded, Record};
use std::collections::{HashMap, VecDeque};
use std::path::{Path, PathBuf};

const MAX_CACHED_CHATS: usize = 256;
/// Longest file-name stem made from an id; longer ids keep a prefix and a hash.
const MAX_NAME: usize = 96;

pub struct ChatHistories {
    dir: PathBuf,
    cache: HashMap<String, HistoryLog>,
    /// Load order of `cache`, for eviction.
    order: VecDeque<String>,
}

impl ChatHistories {
    pub fn new(dir: &Path) -> Self {
        Self {
            dir: dir.to_path_buf(),
            cache: HashMap::new(),
            order: VecDeque::new(),
        }
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
        if let Some(l) = self.cache.get(&key) {
            return (l.clone(), Vec::new());
        }
        let path = self.path(channel, chat_id);
        let loaded = history::load_records(&path).unwrap_or_else(|e| Loaded {
            records: Vec::new(),
            warnings: vec![format!(
                "{}: {e}; starting this chat without history",
                path.display()
            )],
        });
        let log = HistoryLog::from_records(loaded.records);
        self.cache.insert(key.clone(), log.clone());
        self.order.push_back(key);
        while self.order.len() > MAX_CACHED_CHATS {
            if let Some(old) = self.order.pop_front() {
                self.cache.remove(&old);
            }
        }
        (log, loaded.warnings)
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
        }
        (r, warnings)
    }
}

/// An id as a file name: safe characters kept; if anything had to change (or the id is
/// long), a hash of the original keeps distinct ids distinct and the name bounded.
pub fn file_safe(s: &str) -> String {
    let cleaned: String = s
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.') {
                c
            } else {
                '_'
            }
        })
        .collect();
    if cleaned == s && !s.starts_with('.') && !s.is_empty() && s.len() <= MAX_NAME {
        return cleaned;
    }
    let mut h: u64 = 0xcbf29ce484222325;
    for b in s.bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x100000001b3);
    }
    let stem: String = cleaned
        .trim_start_matches('.')
        .chars()
        .take(MAX_NAME - 17)
        .collect();
    format!("{stem}-{h:016x}")
}

#[cfg(test)]
mod tests {
    use super::*;

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
            prompt: None,
        };
        chats.append(r).0.unwrap();
        let mut fresh = ChatHistories::new(d.path());
        assert_eq!(fresh.log("voice", &id).0.len(), 1);
    }
}

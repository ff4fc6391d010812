//! The scene-memory tests' kit: turns whose channel states their scene, times given
//! explicitly, a store on a real SQLite file, and one observation at a time.

use super::super::*;
use crate::config::MemoryConfig;
use crate::turn::Turn;
use chrono::{DateTime, FixedOffset};

pub(super) const DAY: i64 = 86_400;

/// A member's turn of `channel`/`chat` whose channel states `peer` as its scene (a QQ
/// group states `group_<id>`).
pub(crate) fn turn_in(channel: &str, chat: &str, peer: &str, text: &str) -> Turn {
    let facts = crate::turn::Facts {
        trust: crate::turn::Trust::Member,
        memory_peer: Some(peer.to_string()),
        ..Default::default()
    };
    Turn::new(channel, chat, "qq:5", text, facts)
}

pub(super) fn at(day: u32, hour: u32) -> DateTime<FixedOffset> {
    DateTime::parse_from_rfc3339(&format!("2026-03-{day:02}T{hour:02}:00:00+08:00")).unwrap()
}

/// [`turn_in`] by another speaker.
pub(super) fn turn_in_by(
    channel: &str,
    chat: &str,
    speaker: &str,
    text: &str,
) -> crate::turn::Turn {
    let mut t = turn_in(channel, chat, &chat.replace(':', "_"), text);
    t.speaker_id = speaker.to_string();
    t
}

pub(super) fn open(dir: &tempfile::TempDir) -> Store {
    Store::open(
        &dir.path().join("memory/memory.db"),
        MemoryConfig::default(),
    )
    .unwrap()
}

pub(super) fn scene(channel: &str, chat: &str, text: &str, t: DateTime<FixedOffset>) -> TurnScene {
    TurnScene::of(
        &turn_in(channel, chat, &chat.replace(':', "_"), text),
        t,
        &MemoryConfig::default(),
    )
}

pub(super) fn observe(
    s: &mut Store,
    channel: &str,
    chat: &str,
    text: &str,
    t: DateTime<FixedOffset>,
) -> Observed {
    let sc = scene(channel, chat, text, t);
    let obs = s.observe(&sc, &[], t.timestamp()).unwrap();
    assert_eq!(obs.len(), 1);
    obs[0].observed
}

pub(super) fn count(s: &Store, table: &str) -> i64 {
    s.conn
        .query_row(&format!("SELECT COUNT(*) FROM {table}"), [], |r| r.get(0))
        .unwrap()
}

//! Maintenance: links that are not used fade, twin scenes are merged, old evidence goes.
//!
//! - **Decay**: a link's strength halves every `link_half_life_days` since it was last
//!   used (recalled or committed); below `link_floor` the link is removed. The memory
//!   itself stays (searchable by wording, listed by `homebot memory`). Decay is computed
//!   from the time of the last decay, so running it twice at one instant changes nothing.
//! - **Dedupe**: every key is normalized again; scenes whose keys are twins (written by
//!   an older homebot or by hand) become one — occurrences and feature counts added,
//!   links kept at their strongest — under the oldest scene's id. Idempotent.
//! - Evidence older than `evidence_days` is forgotten; a scene with no link, unseen for
//!   ten times as long, is dropped (it holds nothing; a recurrence grows it again).

use super::{MemoryError, Store};
use crate::memory::key::SceneKey;
use rusqlite::params;
use std::collections::BTreeMap;

const DAY: i64 = 86_400;

/// What one maintenance pass changed.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Maintained {
    pub links_decayed: usize,
    pub links_removed: usize,
    pub scenes_merged: usize,
    pub evidence_dropped: usize,
    pub scenes_dropped: usize,
}

/// A strength `s` last decayed at `since`, at `now`.
pub fn decayed(s: f64, since: i64, now: i64, half_life_days: f64) -> f64 {
    let days = (now - since).max(0) as f64 / DAY as f64;
    s * 0.5f64.powf(days / half_life_days)
}

impl Store {
    /// Dedupe, then decay and expire (see the module doc).
    pub fn maintain(&mut self, now: i64) -> Result<Maintained, MemoryError> {
        let mut m = Maintained {
            scenes_merged: self.dedupe()?,
            ..Default::default()
        };
        let (hl, floor) = (self.cfg.link_half_life_days, self.cfg.link_floor);
        let evidence_cutoff = now - self.cfg.evidence_days as i64 * DAY;
        let scene_cutoff = now - self.cfg.evidence_days as i64 * DAY * 10;
        let path = self.path.clone();
        let db = |source| MemoryError::Db {
            path: path.clone(),
            source,
        };
        let tx = self.conn.transaction().map_err(db)?;
        let links: Vec<(i64, i64, f64, i64)> = {
            let mut st = tx
                .prepare("SELECT scene_id, memory_id, strength, decayed_at FROM scene_memories")
                .map_err(db)?;
            let rows = st
                .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)))
                .map_err(db)?;
            rows.collect::<rusqlite::Result<_>>().map_err(db)?
        };
        for (scene, memory, s, since) in links {
            if since >= now {
                continue;
            }
            let s2 = decayed(s, since, now, hl);
            if s2 < floor {
                tx.execute(
                    "DELETE FROM scene_memories WHERE scene_id = ?1 AND memory_id = ?2",
                    params![scene, memory],
                )
                .map_err(db)?;
                m.links_removed += 1;
            } else {
                tx.execute(
                    "UPDATE scene_memories SET strength = ?3, decayed_at = ?4 WHERE scene_id = ?1 AND memory_id = ?2",
                    params![scene, memory, s2, now],
                )
                .map_err(db)?;
                m.links_decayed += 1;
            }
        }
        m.evidence_dropped = tx
            .execute("DELETE FROM evidence WHERE seen_at < ?1", [evidence_cutoff])
            .map_err(db)?;
        m.scenes_dropped = tx
            .execute(
                "DELETE FROM scenes WHERE last_seen < ?1
                 AND id NOT IN (SELECT scene_id FROM scene_memories)",
                [scene_cutoff],
            )
            .map_err(db)?;
        tx.commit().map_err(db)?;
        Ok(m)
    }

    /// Merge twin scenes (see the module doc); how many scenes were merged away.
    pub fn dedupe(&mut self) -> Result<usize, MemoryError> {
        let path = self.path.clone();
        let db = |source| MemoryError::Db {
            path: path.clone(),
            source,
        };
        let tx = self.conn.transaction().map_err(db)?;
        let scenes: Vec<(i64, String)> = {
            let mut st = tx
                .prepare("SELECT id, key FROM scenes ORDER BY id")
                .map_err(db)?;
            let rows = st
                .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
                .map_err(db)?;
            rows.collect::<rusqlite::Result<_>>().map_err(db)?
        };
        let mut groups: BTreeMap<String, Vec<(i64, String)>> = BTreeMap::new();
        for (id, key) in scenes {
            match SceneKey::parse(&key) {
                Ok(k) => groups
                    .entry(k.as_str().to_string())
                    .or_default()
                    .push((id, key)),
                Err(e) => {
                    tracing::warn!(scene = id, key = %key, error = %e, "scene key cannot be normalized; left as it is")
                }
            }
        }
        let mut merged = 0;
        for (norm, members) in groups {
            let (keep, keep_key) = members[0].clone();
            for (twin, _) in &members[1..] {
                tx.execute(
                    "UPDATE scenes SET
                       occurrences = occurrences + (SELECT occurrences FROM scenes WHERE id = ?2),
                       created_at = MIN(created_at, (SELECT created_at FROM scenes WHERE id = ?2)),
                       last_seen = MAX(last_seen, (SELECT last_seen FROM scenes WHERE id = ?2))
                     WHERE id = ?1",
                    params![keep, twin],
                )
                .map_err(db)?;
                tx.execute(
                    "INSERT INTO scene_features (scene_id, feature, count)
                     SELECT ?1, feature, count FROM scene_features WHERE scene_id = ?2 AND true
                     ON CONFLICT(scene_id, feature) DO UPDATE SET count = count + excluded.count",
                    params![keep, twin],
                )
                .map_err(db)?;
                tx.execute(
                    "INSERT INTO scene_memories (scene_id, memory_id, strength, decayed_at, last_used)
                     SELECT ?1, memory_id, strength, decayed_at, last_used FROM scene_memories WHERE scene_id = ?2 AND true
                     ON CONFLICT(scene_id, memory_id) DO UPDATE SET
                       strength = MAX(strength, excluded.strength),
                       decayed_at = MAX(decayed_at, excluded.decayed_at),
                       last_used = MAX(last_used, excluded.last_used)",
                    params![keep, twin],
                )
                .map_err(db)?;
                tx.execute("DELETE FROM scenes WHERE id = ?1", [twin])
                    .map_err(db)?;
                merged += 1;
            }
            if keep_key != norm {
                tx.execute(
                    "UPDATE scenes SET key = ?2 WHERE id = ?1",
                    params![keep, norm],
                )
                .map_err(db)?;
            }
        }
        tx.commit().map_err(db)?;
        Ok(merged)
    }
}

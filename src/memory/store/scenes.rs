//! Emergence: how turns become evidence, evidence becomes a scene, and later turns join.
//!
//! For each key of a turn (in one transaction):
//! - a scene of that key exists → the turn joins it when its similarity to the scene's
//!   profile reaches `join_threshold` (a scene anchored by a commit and never seen yet
//!   adopts the turn); otherwise the turn is kept as evidence;
//! - no scene yet → the turn is compared with the evidence of its key; the most similar
//!   piece at or above the threshold and the turn together make the scene (it is
//!   recognized on the second occurrence). Only that one piece of evidence is consumed:
//!   other evidence, of this key or any other, stays (creating one scene must
//!   not wipe unrelated evidence). Otherwise the turn becomes evidence.
//!
//! Evidence is per key, so weak features never carry a turn into another place's scene.

use super::{exec, row, MemoryError, Store, EVIDENCE_PER_KEY, EVIDENCE_TOTAL, FEATURES_PER_SCENE};
use crate::memory::fingerprint::{similarity, weight, with_identity, Weighted};
use crate::memory::key::SceneKey;
use crate::memory::TurnScene;
use rusqlite::{params, Connection, OptionalExtension};

/// What one turn did to one of its keys.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Observed {
    /// First occurrence (or none similar yet): kept as evidence.
    Evidence,
    /// Second similar occurrence: the scene was recognized.
    Emerged,
    /// The scene recurred and the turn joined it.
    Joined,
    /// The key's scene exists but this turn was not like it: kept as evidence.
    Apart,
    /// No new scene: `memory.max_scenes` reached (the turn stays evidence).
    ScenesFull,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Observation {
    pub key: SceneKey,
    pub observed: Observed,
    pub similarity: f64,
}

/// A scene's profile: its key's identity features at full weight, each weak feature at
/// its weight times the share of the scene's occurrences that had it.
pub fn profile(key: &SceneKey, occurrences: i64, features: &[(String, i64)]) -> Weighted {
    let occ = occurrences.max(1) as f64;
    with_identity(
        key,
        features
            .iter()
            .map(|(f, count)| (f.clone(), weight(f) * (*count as f64 / occ).min(1.0))),
    )
}

fn load_features(tx: &Connection, scene: i64) -> rusqlite::Result<Vec<(String, i64)>> {
    let mut st =
        tx.prepare_cached("SELECT feature, count FROM scene_features WHERE scene_id = ?1")?;
    let rows = st.query_map([scene], |r| Ok((r.get(0)?, r.get(1)?)))?;
    rows.collect()
}

fn add_features(tx: &Connection, scene: i64, weak: &[String]) -> rusqlite::Result<()> {
    for f in weak {
        exec(
            tx,
            "INSERT INTO scene_features (scene_id, feature, count) VALUES (?1, ?2, 1)
             ON CONFLICT(scene_id, feature) DO UPDATE SET count = count + 1",
            params![scene, f],
        )?;
    }
    // a long-lived scene keeps its most frequent features; the rarest words go
    exec(tx, TRIM_FEATURES, params![scene, FEATURES_PER_SCENE])?;
    Ok(())
}

/// The statement that trims a scene's features to its most frequent.
pub(in crate::memory) const TRIM_FEATURES: &str =
    "DELETE FROM scene_features WHERE scene_id = ?1 AND feature NOT IN (
         SELECT feature FROM scene_features WHERE scene_id = ?1
         ORDER BY count DESC, feature LIMIT ?2)";

fn add_evidence(
    tx: &Connection,
    key: &SceneKey,
    weak: &[String],
    now: i64,
) -> rusqlite::Result<()> {
    let json = serde_json::to_string(weak).expect("a list of strings serializes");
    exec(
        tx,
        "INSERT INTO evidence (key, features, seen_at) VALUES (?1, ?2, ?3)",
        params![key.as_str(), json, now],
    )?;
    exec(
        tx,
        "DELETE FROM evidence WHERE key = ?1 AND id NOT IN (
             SELECT id FROM evidence WHERE key = ?1 ORDER BY seen_at DESC, id DESC LIMIT ?2)",
        params![key.as_str(), EVIDENCE_PER_KEY],
    )?;
    exec(
        tx,
        "DELETE FROM evidence WHERE id NOT IN (
             SELECT id FROM evidence ORDER BY seen_at DESC, id DESC LIMIT ?1)",
        params![EVIDENCE_TOTAL],
    )?;
    Ok(())
}

/// One turn as every key of it is observed: its weak features, when, and the rules.
struct Seen<'a> {
    weak: &'a [String],
    now: i64,
    /// `memory.join_threshold`.
    join: f64,
    /// `memory.max_scenes`.
    max_scenes: i64,
}

impl Store {
    /// Record one turn's situation (see the module doc). A turn under the `none` policy
    /// has no keys and changes nothing. A savepoint of its own: all or nothing, inside
    /// a [`Store::begin_batch`] or as a transaction by itself.
    pub fn observe(
        &mut self,
        scene: &TurnScene,
        tools: &[String],
        now: i64,
    ) -> Result<Vec<Observation>, MemoryError> {
        let mut out = Vec::new();
        if scene.is_none() {
            return Ok(out);
        }
        let weak: Vec<String> = scene.weak.iter().chain(tools).cloned().collect();
        let seen = Seen {
            weak: &weak,
            now,
            join: self.cfg.join_threshold,
            max_scenes: self.cfg.max_scenes as i64,
        };
        let tx = self.conn.savepoint().map_err(|e| MemoryError::Db {
            path: self.path.clone(),
            source: e,
        })?;
        let result = (|| -> rusqlite::Result<()> {
            for key in &scene.keys {
                let turn = scene.features_for(key, tools);
                let (observed, sim) = observe_key(&tx, key, &turn, &seen)?;
                out.push(Observation {
                    key: key.clone(),
                    observed,
                    similarity: sim,
                });
            }
            Ok(())
        })();
        result.and_then(|_| tx.commit()).map_err(|e| self.err(e))?;
        Ok(out)
    }
}

/// Observe one key of a turn: join its scene or stay apart from it, or — no scene yet —
/// let one emerge from the most similar evidence, or leave evidence.
fn observe_key(
    tx: &Connection,
    key: &SceneKey,
    turn: &Weighted,
    seen: &Seen<'_>,
) -> rusqlite::Result<(Observed, f64)> {
    let existing: Option<(i64, i64)> = row(
        tx,
        "SELECT id, occurrences FROM scenes WHERE key = ?1",
        [key.as_str()],
        |r| Ok((r.get(0)?, r.get(1)?)),
    )
    .optional()?;
    let Some((id, occ)) = existing else {
        return match best_evidence(tx, key, turn, seen.join)? {
            Some(best) => emerge(tx, key, best, seen),
            None => {
                add_evidence(tx, key, seen.weak, seen.now)?;
                Ok((Observed::Evidence, 0.0))
            }
        };
    };
    let sim = if occ == 0 {
        1.0
    } else {
        similarity(turn, &profile(key, occ, &load_features(tx, id)?))
    };
    if sim >= seen.join {
        exec(
            tx,
            "UPDATE scenes SET occurrences = occurrences + 1, last_seen = ?2 WHERE id = ?1",
            params![id, seen.now],
        )?;
        add_features(tx, id, seen.weak)?;
        Ok((Observed::Joined, sim))
    } else {
        add_evidence(tx, key, seen.weak, seen.now)?;
        Ok((Observed::Apart, sim))
    }
}

/// The evidence of `key` most similar to the turn, if any reaches `join`: its id, its
/// features and the similarity.
fn best_evidence(
    tx: &Connection,
    key: &SceneKey,
    turn: &Weighted,
    join: f64,
) -> rusqlite::Result<Option<(i64, Vec<String>, f64)>> {
    let mut best: Option<(i64, Vec<String>, f64)> = None;
    let mut st = tx.prepare_cached(
        "SELECT id, features FROM evidence WHERE key = ?1 ORDER BY seen_at DESC, id DESC",
    )?;
    let rows = st.query_map([key.as_str()], |r| {
        Ok((r.get::<_, i64>(0)?, r.get::<_, String>(1)?))
    })?;
    for row in rows {
        let (id, json) = row?;
        // a row that does not parse is someone's hand edit: skip it
        let Ok(ev) = serde_json::from_str::<Vec<String>>(&json) else {
            continue;
        };
        let evw = with_identity(key, ev.iter().map(|f| (f.clone(), weight(f))));
        let sim = similarity(turn, &evw);
        if sim >= join && best.as_ref().is_none_or(|b| sim > b.2) {
            best = Some((id, ev, sim));
        }
    }
    Ok(best)
}

/// A scene emerges from the turn and its most similar evidence (which it absorbs), unless
/// the scenes are full: then the turn is evidence too.
fn emerge(
    tx: &Connection,
    key: &SceneKey,
    (ev_id, ev, sim): (i64, Vec<String>, f64),
    seen: &Seen<'_>,
) -> rusqlite::Result<(Observed, f64)> {
    let scenes: i64 = row(tx, "SELECT COUNT(*) FROM scenes", [], |r| r.get(0))?;
    if scenes >= seen.max_scenes {
        add_evidence(tx, key, seen.weak, seen.now)?;
        return Ok((Observed::ScenesFull, sim));
    }
    exec(
        tx,
        "INSERT INTO scenes (key, occurrences, origin, created_at, last_seen)
         VALUES (?1, 2, 'emerged', ?2, ?2)",
        params![key.as_str(), seen.now],
    )?;
    let id = tx.last_insert_rowid();
    add_features(tx, id, &ev)?;
    add_features(tx, id, seen.weak)?;
    exec(tx, "DELETE FROM evidence WHERE id = ?1", [ev_id])?;
    Ok((Observed::Emerged, sim))
}

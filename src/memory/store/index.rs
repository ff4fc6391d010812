//! The recall index: a read-only snapshot of scenes, links and memories, rebuilt by the
//! memory thread after each write (and when another process changed the database).
//! Recall and search read it without I/O, so building a prompt never waits for the
//! disk. Its size is bounded by `memory.max_memories` and `memory.max_scenes`.

use super::maintain::decayed;
use super::scenes::profile;
use super::{MemoryError, Store};
use crate::config::MemoryConfig;
use crate::memory::fingerprint::{similarity, Weighted};
use crate::memory::key::SceneKey;
use crate::memory::topic::topic_words;
use crate::memory::TurnScene;
use std::collections::BTreeMap;
use std::sync::{Arc, OnceLock};

#[derive(Debug, Clone)]
pub struct LinkEntry {
    pub memory: i64,
    pub strength: f64,
    pub decayed_at: i64,
    pub last_used: i64,
}

#[derive(Debug, Clone)]
pub struct SceneEntry {
    pub id: i64,
    pub key: SceneKey,
    pub occurrences: i64,
    pub origin: String,
    pub last_seen: i64,
    /// Weak features with their counts, most frequent first.
    pub features: Vec<(String, i64)>,
    pub profile: Weighted,
    pub links: Vec<LinkEntry>,
}

#[derive(Debug, Clone)]
pub struct MemoryEntry {
    pub content: String,
    pub created_at: i64,
    pub origin: String,
    /// Content words, segmented on the first search (not when the index is built, so
    /// start-up never builds the segmentation dictionary); shared with the next
    /// snapshot while the content is the same.
    words: Arc<OnceLock<Vec<String>>>,
}

impl MemoryEntry {
    fn words(&self) -> &[String] {
        self.words.get_or_init(|| topic_words(&self.content, 64))
    }
}

#[derive(Debug, Clone, Default)]
pub struct Index {
    pub scenes: Vec<SceneEntry>,
    /// Shared with the snapshot before while no memory was kept, forgotten or changed:
    /// snapshots follow the observations (up to five a second) and the memories rarely
    /// change, so most snapshots allocate nothing for them (rebuilding the ~2,000 of a
    /// full store every time scattered their copies over the memory thread's heap,
    /// which grew with the turns; see docs/operations.md#soak).
    pub memories: Arc<BTreeMap<i64, MemoryEntry>>,
    /// Scenes whose key could not be read (left for `dedupe` to report).
    pub unreadable: usize,
}

/// One memory recalled for a turn.
#[derive(Debug, Clone, PartialEq)]
pub struct Recalled {
    pub memory: i64,
    pub scene: i64,
    pub key: SceneKey,
    pub content: String,
    pub score: f64,
}

/// Where a scene of `key` stands for a turn: `2i` when it is the turn's `i`-th key
/// itself, `2i + 1` when it is wider than it (covers it), the lowest such; `None` when it
/// covers none of the turn's keys. Even: the turn's own scene.
fn tier(turn: &TurnScene, key: &SceneKey) -> Option<usize> {
    turn.keys
        .iter()
        .enumerate()
        .filter(|(_, k)| key.covers(k))
        .map(|(i, k)| 2 * i + usize::from(k != key))
        .min()
}

/// Tokens a text will cost, roughly: a CJK character is about one, other text about
/// four characters each (never zero for a non-empty text).
pub fn estimate_tokens(s: &str) -> usize {
    let (mut cjk, mut other) = (0usize, 0usize);
    for c in s.chars() {
        if (c as u32) >= 0x2E80 {
            cjk += 1;
        } else {
            other += 1;
        }
    }
    cjk + other.div_ceil(4)
}

impl Store {
    /// Read everything recall and listing need.
    pub fn snapshot(&self) -> Result<Index, MemoryError> {
        self.snapshot_after(None)
    }

    /// [`Store::snapshot`], reusing the segmentation of memories `prev` already holds.
    pub fn snapshot_after(&self, prev: Option<&Index>) -> Result<Index, MemoryError> {
        let read = || -> rusqlite::Result<Index> {
            let mut idx = Index {
                memories: match prev {
                    Some(p) if self.same_memories(&p.memories)? => p.memories.clone(),
                    _ => Arc::new(self.read_memories(prev)?),
                },
                ..Index::default()
            };
            let mut features: BTreeMap<i64, Vec<(String, i64)>> = BTreeMap::new();
            let mut st = self.conn.prepare_cached(
                "SELECT scene_id, feature, count FROM scene_features ORDER BY count DESC, feature",
            )?;
            for row in st.query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))? {
                let (s, f, c) = row?;
                features.entry(s).or_default().push((f, c));
            }
            let mut links: BTreeMap<i64, Vec<LinkEntry>> = BTreeMap::new();
            let mut st = self.conn.prepare_cached(
                "SELECT scene_id, memory_id, strength, decayed_at, last_used FROM scene_memories",
            )?;
            for row in st.query_map([], |r| {
                Ok((
                    r.get::<_, i64>(0)?,
                    LinkEntry {
                        memory: r.get(1)?,
                        strength: r.get(2)?,
                        decayed_at: r.get(3)?,
                        last_used: r.get(4)?,
                    },
                ))
            })? {
                let (s, l) = row?;
                links.entry(s).or_default().push(l);
            }
            let mut st = self.conn.prepare_cached(
                "SELECT id, key, occurrences, origin, last_seen FROM scenes ORDER BY key",
            )?;
            for row in st.query_map([], |r| {
                Ok((
                    r.get::<_, i64>(0)?,
                    r.get::<_, String>(1)?,
                    r.get::<_, i64>(2)?,
                    r.get::<_, String>(3)?,
                    r.get::<_, i64>(4)?,
                ))
            })? {
                let (id, raw, occurrences, origin, last_seen) = row?;
                let Ok(key) = SceneKey::parse(&raw) else {
                    idx.unreadable += 1;
                    continue;
                };
                let features = features.remove(&id).unwrap_or_default();
                idx.scenes.push(SceneEntry {
                    id,
                    profile: profile(&key, occurrences, &features),
                    key,
                    occurrences,
                    origin,
                    last_seen,
                    features,
                    links: links.remove(&id).unwrap_or_default(),
                });
            }
            Ok(idx)
        };
        read().map_err(|e| self.err(e))
    }

    /// Whether the database holds exactly the memories of `known` (read without copying
    /// a row).
    fn same_memories(&self, known: &BTreeMap<i64, MemoryEntry>) -> rusqlite::Result<bool> {
        let mut st = self.conn.prepare_cached(MEMORIES_BY_ID)?;
        let mut rows = st.query([])?;
        let mut known = known.iter();
        while let Some(r) = rows.next()? {
            let Some((id, m)) = known.next() else {
                return Ok(false);
            };
            if r.get::<_, i64>(0)? != *id
                || r.get_ref(1)?.as_str()? != m.content
                || r.get::<_, i64>(2)? != m.created_at
                || r.get_ref(3)?.as_str()? != m.origin
            {
                return Ok(false);
            }
        }
        Ok(known.next().is_none())
    }

    /// Every memory, each keeping the segmentation `prev` holds for the same content.
    fn read_memories(&self, prev: Option<&Index>) -> rusqlite::Result<BTreeMap<i64, MemoryEntry>> {
        let mut out = BTreeMap::new();
        let mut st = self.conn.prepare_cached(MEMORIES_BY_ID)?;
        for row in st.query_map([], |r| {
            Ok((
                r.get::<_, i64>(0)?,
                r.get::<_, String>(1)?,
                r.get(2)?,
                r.get(3)?,
            ))
        })? {
            let (id, content, created_at, origin) = row?;
            let words = match prev.and_then(|p| p.memories.get(&id)) {
                Some(m) if m.content == content => m.words.clone(),
                _ => Arc::default(),
            };
            out.insert(
                id,
                MemoryEntry {
                    content,
                    created_at,
                    origin,
                    words,
                },
            );
        }
        Ok(out)
    }
}

/// The memories as a snapshot reads them (by id: the order of [`Index::memories`]).
const MEMORIES_BY_ID: &str = "SELECT id, content, created_at, origin FROM memories ORDER BY id";

impl Index {
    /// The memories of the scenes that cover the turn's keys: a scene of one of the
    /// turn's own keys always (the key is the situation, however unlike the words), a
    /// wider one (`chan:qq` above a group) when it is like the turn (`recall_threshold`).
    /// Ranked by the turn's key they came by — its first key (the room its channel
    /// states) first, a key's own scene before a wider one — then by score = scene
    /// similarity × link strength (decayed to `now`). At most `recall_max_memories`, and
    /// within `recall_max_tokens`.
    pub fn recall(&self, turn: &TurnScene, cfg: &MemoryConfig, now: i64) -> Vec<Recalled> {
        if turn.is_none() || cfg.recall_max_memories == 0 {
            return Vec::new();
        }
        // memory → (tier, score, the scene it scored in): nothing is copied until chosen,
        // since a scene may hold hundreds of memories of which five are recalled
        let mut best: BTreeMap<i64, (usize, f64, usize)> = BTreeMap::new();
        for (si, s) in self.scenes.iter().enumerate() {
            let Some(tier) = tier(turn, &s.key) else {
                continue;
            };
            // a scene anchored by a commit and not seen since has no situation to compare:
            // its key is all there is, and the key covers the turn
            let sim = if s.occurrences == 0 {
                1.0
            } else {
                similarity(&turn.features_for(&s.key, &[]), &s.profile)
            };
            let own = tier % 2 == 0;
            if !own && sim < cfg.recall_threshold {
                continue;
            }
            for l in &s.links {
                let strength = decayed(l.strength, l.decayed_at, now, cfg.link_half_life_days);
                if !self.memories.contains_key(&l.memory) || strength < cfg.link_floor {
                    continue;
                }
                let score = sim * strength;
                if best
                    .get(&l.memory)
                    .is_none_or(|b| tier < b.0 || (tier == b.0 && score > b.1))
                {
                    best.insert(l.memory, (tier, score, si));
                }
            }
        }
        let mut ranked: Vec<(i64, usize, f64, usize)> = best
            .into_iter()
            .map(|(m, (tier, score, si))| (m, tier, score, si))
            .collect();
        ranked.sort_by(|a, b| a.1.cmp(&b.1).then(b.2.total_cmp(&a.2)).then(b.0.cmp(&a.0)));
        let mut out = Vec::new();
        let mut tokens = 0;
        for (memory, _, score, si) in ranked {
            if out.len() >= cfg.recall_max_memories {
                break;
            }
            let content = &self.memories[&memory].content;
            let t = estimate_tokens(content) + 4;
            if tokens + t > cfg.recall_max_tokens {
                continue;
            }
            tokens += t;
            out.push(Recalled {
                memory,
                scene: self.scenes[si].id,
                key: self.scenes[si].key.clone(),
                content: content.clone(),
                score,
            });
        }
        out
    }

    /// Memories by wording: shared content words (and the query as a phrase), best
    /// first — among those `visible` allows (given a memory's id, its origin and the keys
    /// of the scenes it is linked to).
    pub fn search(
        &self,
        query: &str,
        limit: usize,
        visible: impl Fn(i64, &str, &[&SceneKey]) -> bool,
    ) -> Vec<(i64, String, f64)> {
        let q = query.trim().to_lowercase();
        if q.is_empty() {
            return Vec::new();
        }
        let mut keys: BTreeMap<i64, Vec<&SceneKey>> = BTreeMap::new();
        for s in &self.scenes {
            for l in &s.links {
                keys.entry(l.memory).or_default().push(&s.key);
            }
        }
        let words = topic_words(&q, 16);
        let mut hits: Vec<(i64, String, f64)> = self
            .memories
            .iter()
            .filter(|(id, m)| {
                visible(
                    **id,
                    &m.origin,
                    keys.get(id).map(Vec::as_slice).unwrap_or_default(),
                )
            })
            .filter_map(|(id, m)| {
                let shared = words.iter().filter(|w| m.words().contains(w)).count();
                let mut score = if words.is_empty() {
                    0.0
                } else {
                    shared as f64 / words.len() as f64
                };
                if m.content.to_lowercase().contains(&q) {
                    score = score.max(1.0);
                }
                (score > 0.0).then(|| (*id, m.content.clone(), score))
            })
            .collect();
        hits.sort_by(|a, b| b.2.total_cmp(&a.2).then(b.0.cmp(&a.0)));
        hits.truncate(limit);
        hits
    }
}

//! Recall by wording, beside the scene: when scene recall brings fewer memories than
//! `memory.wording_below` (by default: none), the memories whose words best match the
//! user's join the turn's memory block — the same search `memory_search` runs, among the
//! memories the chat may see by the same rule (the caller's `visible`: a chat's own
//! branch of scenes and what was kept from it, never another chat's), each holding at
//! least `wording_min_score` of the message's content words. At most
//! `wording_max_memories` and `wording_max_tokens`; a memory scene recall brought is not
//! brought again. They go in a block of their own, labelled as found by wording
//! ([`WORDING_LABEL`]), where the scene block goes.

use super::fingerprint::TurnScene;
use super::key::SceneKey;
use super::store::index::{estimate_tokens, Index, Recalled};
use crate::config::MemoryConfig;

/// The label of the block of memories recalled by wording.
pub const WORDING_LABEL: &str = "按字面找到的记忆";

/// One memory recalled by wording.
#[derive(Debug, Clone, PartialEq)]
pub struct Worded {
    pub memory: i64,
    pub content: String,
    /// The share of the message's content words it holds (1 for the whole phrase).
    pub score: f64,
}

/// The memories `text` finds by wording for a turn of `scene` whose scene recall brought
/// `by_scene` (see the module doc). Nothing for a turn under the `none` policy: it takes
/// no part in recall of either kind.
pub fn recall(
    index: &Index,
    cfg: &MemoryConfig,
    scene: &TurnScene,
    text: &str,
    by_scene: &[Recalled],
    visible: impl Fn(i64, &str, &[&SceneKey]) -> bool,
) -> Vec<Worded> {
    if scene.is_none() || by_scene.len() >= cfg.wording_below || cfg.wording_max_memories == 0 {
        return Vec::new();
    }
    // the query `memory_search` would take: at most `max_query_chars` of the words
    let query: String = text.chars().take(cfg.max_query_chars).collect();
    let limit = cfg.wording_max_memories + by_scene.len();
    let mut out = Vec::new();
    let mut tokens = 0;
    for (memory, content, score) in index.search(&query, limit, visible) {
        if out.len() >= cfg.wording_max_memories || score < cfg.wording_min_score {
            break;
        }
        if by_scene.iter().any(|r| r.memory == memory) {
            continue;
        }
        let t = estimate_tokens(&content) + 4;
        if tokens + t > cfg.wording_max_tokens {
            continue;
        }
        tokens += t;
        out.push(Worded {
            memory,
            content,
            score,
        });
    }
    out
}

/// The block of memories recalled by wording, or `None` when there are none.
pub fn section_of(found: &[Worded]) -> Option<crate::prompt::TailSection> {
    if found.is_empty() {
        return None;
    }
    let mut body = String::from(
        "和用户这次的用词相近的记忆（系统按字面找到，这个场合没有记下的约定；不一定适用，相关时参考）：\n",
    );
    for w in found {
        body.push_str(&super::lines::memory_line(w.memory, &w.content));
        body.push('\n');
    }
    Some(crate::prompt::TailSection {
        label: WORDING_LABEL.into(),
        body,
    })
}

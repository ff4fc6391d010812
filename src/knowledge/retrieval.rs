//! `Knowledge`: each mode's folders, snippet budget and objective template, the parsed
//! paragraphs cached by path, length and modification time, and the ranking that picks the
//! best of them for the user's words.

use super::files::{collect_files, split_chunks};
use super::snippets::MAX_SNIPPETS;
use super::terms::{query_terms, terms_of};
use super::{conservative_tokens, snippet_text, tail_section, Snippet, MAX_FILES, MAX_TOTAL_BYTES};
use crate::modes::ModeRegistry;
use crate::prompt::TailSection;
use crate::prompt::{frozen_objective, SNIPPET_NOTE};
use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::SystemTime;
use tracing::debug;

/// The knowledge folders of every mode, with a cache of their parsed files.
pub struct Knowledge {
    pub(super) folders: HashMap<String, Vec<(String, PathBuf)>>,
    /// Each mode's snippet budget per request (`context.retrieval_tokens`).
    pub(super) budgets: HashMap<String, usize>,
    /// Each mode's `context.objective` template.
    pub(super) objectives: HashMap<String, String>,
    pub(super) cache: Mutex<HashMap<PathBuf, CachedFile>>,
}

pub(super) struct CachedFile {
    pub(super) len: u64,
    pub(super) modified: Option<SystemTime>,
    pub(super) chunks: Vec<Arc<Chunk>>,
}

/// A paragraph and its terms, worked out once per version of its file.
pub(super) struct Chunk {
    pub(super) text: String,
    pub(super) terms: HashSet<String>,
}

impl Knowledge {
    pub fn for_registry(ws_root: &Path, registry: &ModeRegistry) -> Self {
        let folders = registry
            .modes()
            .iter()
            .map(|m| (m.manifest.id.clone(), m.knowledge_dirs(ws_root)))
            .collect();
        let budgets = registry
            .modes()
            .iter()
            .map(|m| {
                let t = m
                    .manifest
                    .context
                    .as_ref()
                    .map_or(crate::modes::manifest::DEFAULT_RETRIEVAL_TOKENS, |c| {
                        c.retrieval_tokens()
                    });
                (m.manifest.id.clone(), t as usize)
            })
            .collect();
        let objectives = registry
            .modes()
            .iter()
            .filter_map(|m| {
                let o = m.manifest.context.as_ref()?.objective.as_ref()?;
                Some((m.manifest.id.clone(), o.trim().to_string()))
            })
            .filter(|(_, o)| !o.is_empty())
            .collect();
        Self {
            folders,
            budgets,
            objectives,
            cache: Mutex::new(HashMap::new()),
        }
    }

    /// The per-request blocks of `mode_id`'s context policy for the user's words:
    /// `[OBJECTIVE]` (its template, `{query}` filled in) and `[资料]` (the snippets of
    /// its knowledge within its budget), each only when there is something to say.
    /// What the session's `frozen` prompt already says is not repeated: a constant
    /// objective ([`frozen_objective`]) and the [`SNIPPET_NOTE`].
    ///
    /// A snippet whose text the window already holds (`seen`: under exact replay, the
    /// messages earlier turns sent and the request replays) is not sent again, so a
    /// cooking session asking about one dish all evening carries one copy of its recipe
    /// in the window, not one per turn; it is sent again once compaction or a trim has
    /// taken the copy out of the window. Under lean replay nothing is replayed and
    /// `seen` says no.
    pub fn sections_for(
        &self,
        mode_id: &str,
        query: &str,
        frozen: &str,
        seen: &dyn Fn(&str) -> bool,
    ) -> Vec<TailSection> {
        let mut out = Vec::new();
        if let Some(o) = self.objectives.get(mode_id) {
            let in_frozen = frozen_objective(o).is_some_and(|b| frozen.contains(&b));
            if !in_frozen {
                out.push(TailSection {
                    label: "OBJECTIVE".into(),
                    body: o.replace("{query}", query.trim()),
                });
            }
        }
        let budget = self.budgets.get(mode_id).copied().unwrap_or(0);
        let mut snippets = self.retrieve(mode_id, query, budget);
        snippets.retain(|s| !seen(&snippet_text(s)));
        out.extend(tail_section(&snippets, !frozen.contains(SNIPPET_NOTE)));
        out
    }

    /// The best paragraphs of `mode_id`'s knowledge for `query`, within `max_tokens`
    /// (counted conservatively: a CJK character is a token, other text four chars one).
    /// Reads the disk (cached); cheap for the small folders a household keeps.
    pub fn retrieve(&self, mode_id: &str, query: &str, max_tokens: usize) -> Vec<Snippet> {
        let Some(folders) = self.folders.get(mode_id) else {
            return Vec::new();
        };
        if max_tokens == 0 {
            return Vec::new();
        }
        let terms = query_terms(query);
        if terms.is_empty() {
            return Vec::new();
        }
        let chunks = self.chunks(folders);
        if chunks.is_empty() {
            return Vec::new();
        }
        let n = chunks.len() as f64;
        let idf: HashMap<&str, f64> = terms
            .iter()
            .map(|t| {
                let df = chunks.iter().filter(|(_, c)| c.terms.contains(t)).count() as f64;
                (t.as_str(), ((n + 1.0) / (df + 0.5)).ln().max(0.0))
            })
            .collect();
        let mut scored: Vec<Snippet> = chunks
            .iter()
            .filter_map(|(source, c)| {
                let matched: Vec<&String> = terms.iter().filter(|t| c.terms.contains(*t)).collect();
                // one shared bigram is chance ("怎么", "一下"); two are a topic
                if matched.len() < 2 {
                    return None;
                }
                let score: f64 = matched.iter().map(|t| idf[t.as_str()]).sum();
                (score > 0.0).then(|| Snippet {
                    source: source.clone(),
                    text: c.text.clone(),
                    score,
                })
            })
            .collect();
        scored.sort_by(|a, b| {
            b.score
                .total_cmp(&a.score)
                .then_with(|| a.source.cmp(&b.source))
        });
        let mut out = Vec::new();
        let mut used = 0;
        for s in scored.into_iter().take(MAX_SNIPPETS * 4) {
            let cost = conservative_tokens(&s.text) + conservative_tokens(&s.source) + 2;
            if used + cost > max_tokens {
                continue;
            }
            used += cost;
            out.push(s);
            if out.len() == MAX_SNIPPETS {
                break;
            }
        }
        out
    }

    /// Every paragraph of the folders with its source, from the cache where unchanged.
    fn chunks(&self, folders: &[(String, PathBuf)]) -> Vec<(String, Arc<Chunk>)> {
        let mut files = Vec::new();
        for (name, dir) in folders {
            collect_files(dir, dir, name, 0, &mut files);
        }
        if files.len() > MAX_FILES {
            debug!(
                files = files.len(),
                limit = MAX_FILES,
                "knowledge folder holds more files than are searched"
            );
            files.truncate(MAX_FILES);
        }
        let mut cache = self
            .cache
            .lock()
            .expect("knowledge cache is never poisoned");
        // files no longer there leave the cache
        cache.retain(|p, _| files.iter().any(|(_, f, _)| f == p));
        let mut out = Vec::new();
        let mut total = 0u64;
        for (source, path, meta) in files {
            total += meta.len();
            if total > MAX_TOTAL_BYTES {
                debug!(
                    limit = MAX_TOTAL_BYTES,
                    "knowledge past the total size searched is left out"
                );
                break;
            }
            let modified = meta.modified().ok();
            let fresh = cache
                .get(&path)
                .is_some_and(|c| c.len == meta.len() && c.modified == modified);
            if !fresh {
                let Ok(text) = std::fs::read_to_string(&path) else {
                    continue;
                };
                let chunks = split_chunks(&text)
                    .into_iter()
                    .map(|text| {
                        Arc::new(Chunk {
                            terms: terms_of(&text),
                            text,
                        })
                    })
                    .collect();
                cache.insert(
                    path.clone(),
                    CachedFile {
                        len: meta.len(),
                        modified,
                        chunks,
                    },
                );
            }
            for c in &cache[&path].chunks {
                out.push((source.clone(), c.clone()));
            }
        }
        out
    }
}

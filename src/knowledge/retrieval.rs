//! `Knowledge`: each mode's folders, snippet budget and objective template, the parsed
//! paragraphs cached by path, length and modification time, and the ranking that picks the
//! best of them for the user's words.

use super::files::{collect_files, split_chunks};
use super::snippets::{snippet_cost, RefShare, Retrieved, Shares, MAX_SNIPPETS};
use super::terms::{query_terms, terms_of};
use super::{snippet_text, tail_section, Snippet, MAX_FILES, MAX_TOTAL_BYTES};
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
    /// its knowledge, per reference within its share of the budget), each only when
    /// there is something to say, and what each reference got ([`Shares`]).
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
    ) -> (Vec<TailSection>, Shares) {
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
        let mut snippets = Vec::new();
        let mut shares = Shares::new();
        for got in self.retrieve_per_reference(mode_id, query, budget) {
            let (held, sent): (Vec<Snippet>, Vec<Snippet>) = got
                .snippets
                .into_iter()
                .partition(|s| seen(&snippet_text(s)));
            shares.push(RefShare {
                name: got.name,
                cap: got.cap,
                tokens: sent.iter().map(snippet_cost).sum(),
                sent: sent.iter().map(|s| s.source.clone()).collect(),
                held: held.len(),
            });
            snippets.extend(sent);
        }
        out.extend(tail_section(&snippets, !frozen.contains(SNIPPET_NOTE)));
        (out, shares)
    }

    /// The best paragraphs of `mode_id`'s knowledge for `query`, within `max_tokens`,
    /// reference by reference ([`Self::retrieve_per_reference`]).
    pub fn retrieve(&self, mode_id: &str, query: &str, max_tokens: usize) -> Vec<Snippet> {
        self.retrieve_per_reference(mode_id, query, max_tokens)
            .into_iter()
            .flat_map(|g| g.snippets)
            .collect()
    }

    /// The best paragraphs of each of `mode_id`'s knowledge references for `query`, in
    /// the order the mode lists them: up to [`MAX_SNIPPETS`] a reference, each reference
    /// within half of `max_tokens` still left after the references before it (counted
    /// conservatively: a CJK character is a token, other text four chars one) — so
    /// one large reference cannot take the whole budget. A reference that matches
    /// nothing is left out. Reads the disk (cached); cheap for the small folders a
    /// household keeps.
    pub fn retrieve_per_reference(
        &self,
        mode_id: &str,
        query: &str,
        max_tokens: usize,
    ) -> Vec<Retrieved> {
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
                let df = chunks
                    .iter()
                    .filter(|(_, _, c)| c.terms.contains(t))
                    .count() as f64;
                (t.as_str(), ((n + 1.0) / (df + 0.5)).ln().max(0.0))
            })
            .collect();
        let mut scored: Vec<(usize, Snippet)> = chunks
            .iter()
            .filter_map(|(reference, source, c)| {
                let matched: Vec<&String> = terms.iter().filter(|t| c.terms.contains(*t)).collect();
                // one shared bigram is chance ("怎么", "一下"); two are a topic
                if matched.len() < 2 {
                    return None;
                }
                let score: f64 = matched.iter().map(|t| idf[t.as_str()]).sum();
                (score > 0.0).then(|| {
                    let snippet = Snippet {
                        source: source.clone(),
                        text: c.text.clone(),
                        score,
                    };
                    (*reference, snippet)
                })
            })
            .collect();
        scored.sort_by(|(_, a), (_, b)| {
            b.score
                .total_cmp(&a.score)
                .then_with(|| a.source.cmp(&b.source))
        });
        let mut left = max_tokens;
        let mut out = Vec::new();
        for (i, (name, _)) in folders.iter().enumerate() {
            let cap = left / 2;
            let mut used = 0;
            let mut snippets = Vec::new();
            let mine = scored.iter().filter(|(r, _)| *r == i).map(|(_, s)| s);
            for s in mine.take(MAX_SNIPPETS * 4) {
                let cost = snippet_cost(s);
                if used + cost > cap {
                    continue;
                }
                used += cost;
                snippets.push(s.clone());
                if snippets.len() == MAX_SNIPPETS {
                    break;
                }
            }
            left -= used;
            if !snippets.is_empty() {
                out.push(Retrieved {
                    name: name.clone(),
                    cap,
                    snippets,
                });
            }
        }
        out
    }

    /// Every paragraph of the folders with its source, from the cache where unchanged.
    fn chunks(&self, folders: &[(String, PathBuf)]) -> Vec<(usize, String, Arc<Chunk>)> {
        let mut files = Vec::new();
        // which reference each file is of (its index in `folders`)
        let mut of = Vec::new();
        for (i, (name, dir)) in folders.iter().enumerate() {
            collect_files(dir, dir, name, 0, &mut files);
            of.resize(files.len(), i);
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
        for ((source, path, meta), reference) in files.into_iter().zip(of) {
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
                out.push((reference, source.clone(), c.clone()));
            }
        }
        out
    }
}

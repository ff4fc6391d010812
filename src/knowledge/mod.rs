//! The per-request blocks of a mode's context policy: its `[OBJECTIVE]`, and retrieval
//! over its knowledge folders: the few paragraphs that best match the
//! user's words go into the request's dynamic tail, bounded in tokens. No embedding
//! model: a small lexical ranking that works for Chinese without a segmenter —
//! Chinese text is compared by character bigrams, other text by lower-cased words —
//! weighted by how rare a term is across the mode's paragraphs (IDF), so "红烧肉怎么做"
//! finds the 红烧肉 paragraph through 红烧 / 烧肉 while 怎么 counts for little.
//!
//! Only the active mode's folders are searched (knowledge never crosses modes), and only
//! what the file tools would also show: regular `.md` / `.txt` files, no dotfiles, no
//! symlinks leading out, at most [`MAX_FILES`] files of at most [`MAX_FILE_BYTES`] each.
//! Parsed files are cached by path, length and modification time, so a turn re-reads
//! only what changed.

use crate::modes::ModeRegistry;
use crate::prompt::TailSection;
use crate::prompt::{frozen_objective, SNIPPET_NOTE};
use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::SystemTime;
use tracing::debug;

/// Files looked at per mode; the rest are ignored (and logged once per scan).
pub const MAX_FILES: usize = 200;
/// Largest knowledge file read; bigger ones are skipped.
pub const MAX_FILE_BYTES: u64 = 256 * 1024;
/// The most bytes of a mode's knowledge searched (files past it, in name order, are not):
/// retrieval runs on the turn's path, so its work stays small whatever the folder holds.
pub const MAX_TOTAL_BYTES: u64 = 4 * 1024 * 1024;
/// Folder depth searched below a knowledge folder.
const MAX_DEPTH: usize = 4;
/// Longest paragraph kept whole; longer ones are cut into pieces of this many chars.
const MAX_CHUNK_CHARS: usize = 600;
/// Query terms considered (a very long message is not a longer search).
const MAX_QUERY_TERMS: usize = 64;
/// Snippets put in one tail at most.
const MAX_SNIPPETS: usize = 3;

/// The tail section's label.
pub const LABEL: &str = "资料";

/// One retrieved paragraph.
#[derive(Debug, Clone, PartialEq)]
pub struct Snippet {
    /// `<knowledge name>/<path inside the folder>`.
    pub source: String,
    pub text: String,
    pub score: f64,
}

/// The knowledge folders of every mode, with a cache of their parsed files.
pub struct Knowledge {
    folders: HashMap<String, Vec<(String, PathBuf)>>,
    /// Each mode's snippet budget per request (`context.retrieval_tokens`).
    budgets: HashMap<String, usize>,
    /// Each mode's `context.objective` template.
    objectives: HashMap<String, String>,
    cache: Mutex<HashMap<PathBuf, CachedFile>>,
}

struct CachedFile {
    len: u64,
    modified: Option<SystemTime>,
    chunks: Vec<Arc<Chunk>>,
}

/// A paragraph and its terms, worked out once per version of its file.
struct Chunk {
    text: String,
    terms: HashSet<String>,
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

/// Snippets as the tail section the model sees, the [`SNIPPET_NOTE`] first when `note`;
/// `None` when there are none.
pub fn tail_section(snippets: &[Snippet], note: bool) -> Option<TailSection> {
    if snippets.is_empty() {
        return None;
    }
    let mut body = String::new();
    if note {
        body.push_str(SNIPPET_NOTE);
        body.push('\n');
    }
    for s in snippets {
        // a file anyone may have written: it must not end the block or open another
        body.push_str(&format!(
            "— {}:\n{}\n",
            crate::prompt::defang(&s.source),
            snippet_text(s)
        ));
    }
    Some(TailSection {
        label: LABEL.into(),
        body,
    })
}

/// The sources a `[资料]` block's body names ([`tail_section`]'s "— source:" lines).
pub fn sources_in(body: &str) -> Vec<String> {
    body.lines()
        .filter_map(|l| l.strip_prefix("— ")?.strip_suffix(':'))
        .map(str::to_string)
        .collect()
}

/// A snippet's text as a `[资料]` block shows it (what a window is searched for).
pub fn snippet_text(s: &Snippet) -> String {
    crate::prompt::defang(s.text.trim())
}

/// Regular `.md` / `.txt` files below `dir` (no dotfiles, nothing leading out of `root`).
fn collect_files(
    root: &Path,
    dir: &Path,
    name: &str,
    depth: usize,
    out: &mut Vec<(String, PathBuf, std::fs::Metadata)>,
) {
    if depth > MAX_DEPTH || out.len() > MAX_FILES {
        return;
    }
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let mut entries: Vec<_> = entries.flatten().collect();
    entries.sort_by_key(|e| e.file_name());
    for e in entries {
        let file_name = e.file_name().to_string_lossy().into_owned();
        if file_name.starts_with('.') {
            continue;
        }
        // symlink_metadata: a link is never followed (it could lead anywhere)
        let Ok(meta) = std::fs::symlink_metadata(e.path()) else {
            continue;
        };
        if meta.is_dir() {
            collect_files(root, &e.path(), name, depth + 1, out);
        } else if meta.is_file() && meta.len() <= MAX_FILE_BYTES {
            let ext = Path::new(&file_name)
                .extension()
                .map(|x| x.to_string_lossy().to_lowercase());
            if matches!(ext.as_deref(), Some("md" | "txt" | "markdown")) {
                let rel = e.path().strip_prefix(root).map(Path::to_path_buf);
                let rel = rel.unwrap_or_else(|_| PathBuf::from(&file_name));
                out.push((format!("{name}/{}", rel.display()), e.path(), meta));
            }
        }
    }
}

/// Paragraphs: blank-line separated blocks, a heading kept with the text under it,
/// long ones cut at [`MAX_CHUNK_CHARS`].
fn split_chunks(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut heading: Option<String> = None;
    for block in text.split("\n\n") {
        let block = block.trim();
        if block.is_empty() {
            continue;
        }
        if block.starts_with('#') && !block.contains('\n') {
            heading = Some(block.to_string());
            continue;
        }
        // a paragraph keeps its nearest heading: its own first line when it has one
        // (the file's title above it would repeat the source shown with the snippet)
        let whole = match heading.take().filter(|_| !block.starts_with('#')) {
            Some(h) => format!("{h}\n{block}"),
            None => block.to_string(),
        };
        let chars: Vec<char> = whole.chars().collect();
        for piece in chars.chunks(MAX_CHUNK_CHARS) {
            out.push(piece.iter().collect());
        }
    }
    if let Some(h) = heading {
        out.push(h);
    }
    out
}

fn is_cjk(c: char) -> bool {
    matches!(c as u32, 0x3400..=0x4DBF | 0x4E00..=0x9FFF | 0xF900..=0xFAFF | 0x20000..=0x2FA1F)
}

/// The terms of a text: bigrams of each run of CJK characters (a lone character is a
/// term of its own), lower-cased alphanumeric words of two characters or more.
fn terms_of(text: &str) -> HashSet<String> {
    let mut out = HashSet::new();
    let mut run: Vec<char> = Vec::new();
    let mut word = String::new();
    let flush_run = |run: &mut Vec<char>, out: &mut HashSet<String>| {
        if run.len() == 1 {
            out.insert(run[0].to_string());
        }
        for w in run.windows(2) {
            out.insert(w.iter().collect());
        }
        run.clear();
    };
    let flush_word = |word: &mut String, out: &mut HashSet<String>| {
        if word.chars().count() >= 2 {
            out.insert(std::mem::take(word));
        }
        word.clear();
    };
    for c in text.chars() {
        if is_cjk(c) {
            flush_word(&mut word, &mut out);
            run.push(c);
        } else if c.is_alphanumeric() {
            flush_run(&mut run, &mut out);
            word.extend(c.to_lowercase());
        } else {
            flush_run(&mut run, &mut out);
            flush_word(&mut word, &mut out);
        }
    }
    flush_run(&mut run, &mut out);
    flush_word(&mut word, &mut out);
    out
}

/// The query's terms in the order they first occur, at most [`MAX_QUERY_TERMS`] (a long
/// message keeps its opening words, whatever the code points of their characters).
fn query_terms(query: &str) -> Vec<String> {
    let chars: Vec<char> = query.chars().collect();
    let mut out: Vec<String> = Vec::new();
    let mut seen: HashSet<String> = HashSet::new();
    let mut push = |t: String, out: &mut Vec<String>| {
        if seen.insert(t.clone()) {
            out.push(t);
        }
    };
    let mut word = String::new();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if is_cjk(c) {
            let run_end = (i..chars.len())
                .find(|&j| !is_cjk(chars[j]))
                .unwrap_or(chars.len());
            if run_end - i == 1 {
                push(c.to_string(), &mut out);
            }
            for w in chars[i..run_end].windows(2) {
                push(w.iter().collect(), &mut out);
            }
            i = run_end;
            continue;
        }
        if c.is_alphanumeric() {
            word.extend(c.to_lowercase());
        } else if !word.is_empty() {
            let w = std::mem::take(&mut word);
            if w.chars().count() >= 2 {
                push(w, &mut out);
            }
        }
        i += 1;
        if i < chars.len() && is_cjk(chars[i]) && !word.is_empty() {
            let w = std::mem::take(&mut word);
            if w.chars().count() >= 2 {
                push(w, &mut out);
            }
        }
    }
    if word.chars().count() >= 2 {
        push(word, &mut out);
    }
    out.truncate(MAX_QUERY_TERMS);
    out
}

/// An upper bound of the tokens of `s` for any tokenizer in use: a CJK character is one
/// token, other text one per four characters.
pub fn conservative_tokens(s: &str) -> usize {
    let (cjk, other) = s.chars().fold((0usize, 0usize), |(c, o), ch| {
        if is_cjk(ch) {
            (c + 1, o)
        } else {
            (c, o + 1)
        }
    });
    cjk + other.div_ceil(4)
}

#[cfg(test)]
mod tests;

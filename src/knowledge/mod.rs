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
//!
//! Layout: `retrieval` — `Knowledge`, its cache and the ranking; `files` — which files are
//! read, within which bounds, cut into paragraphs; `terms` — the lexical terms; `snippets` —
//! the chosen paragraphs and the `[资料]` block.

#[cfg(test)]
mod tests;

mod files;
mod retrieval;
mod snippets;
mod terms;

pub use files::{MAX_FILES, MAX_FILE_BYTES, MAX_TOTAL_BYTES};
pub use retrieval::Knowledge;
pub use snippets::{
    snippet_cost, snippet_text, sources_in, tail_section, RefShare, Retrieved, Shares, Snippet,
    LABEL,
};
pub use terms::conservative_tokens;

//! What the story reads back: a file's text, and what went wrong with a reply.

use crate::turn::Reply;
use std::path::Path;

/// What went wrong with a reply that is not an answer. The one place the demo reads
/// a reply's outcome.
pub fn failure(r: &Reply) -> Option<String> {
    r.problem()
}

/// `path`'s text, if it is there.
pub fn read(path: &Path) -> Option<String> {
    std::fs::read_to_string(path).ok()
}

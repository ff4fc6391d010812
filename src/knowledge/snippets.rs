//! A retrieved paragraph (`Snippet`) and the `[资料]` block of the request's tail that carries
//! the chosen ones.

use crate::prompt::TailSection;
use crate::prompt::SNIPPET_NOTE;

/// Snippets of one knowledge reference put in one tail at most.
pub(super) const MAX_SNIPPETS: usize = 3;

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

/// What one knowledge reference of a mode gave for a request: its snippets, best first,
/// within `cap` tokens (half of the mode's budget still left when its turn came).
#[derive(Debug, Clone, PartialEq)]
pub struct Retrieved {
    pub name: String,
    pub cap: usize,
    pub snippets: Vec<Snippet>,
}

/// What each reference got for a request, for the audit (the references that matched,
/// in the order the mode lists them).
pub type Shares = Vec<RefShare>;
pub use crate::provider::KnowledgeShare as RefShare;

/// What a snippet costs against the budget: its text and source, counted
/// conservatively, and its line.
pub fn snippet_cost(s: &Snippet) -> usize {
    super::conservative_tokens(&s.text) + super::conservative_tokens(&s.source) + 2
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

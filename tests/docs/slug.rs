//! GitHub's heading anchors (its `github-slugger`): the heading's text in lower case,
//! every character dropped that is not a letter, a digit, `-`, `_` or a space (so CJK
//! stays, punctuation and symbols go), each space a `-`; a heading whose anchor was
//! already taken in the file gets `-1`, then `-2`, ….

use std::collections::HashMap;

/// The anchor of a heading's text, before duplicates are counted.
pub fn slug(text: &str) -> String {
    text.trim()
        .to_lowercase()
        .chars()
        .filter_map(|c| match c {
            ' ' => Some('-'),
            '-' | '_' => Some(c),
            c if c.is_alphanumeric() => Some(c),
            _ => None,
        })
        .collect()
}

/// The anchors of one file's headings, in order.
#[derive(Default)]
pub struct Slugs {
    taken: HashMap<String, usize>,
}

impl Slugs {
    /// The anchor of the next heading, `text`.
    pub fn next(&mut self, text: &str) -> String {
        let base = slug(text);
        let mut anchor = base.clone();
        while self.taken.contains_key(&anchor) {
            let n = self.taken.get_mut(&base).expect("the base is taken");
            *n += 1;
            anchor = format!("{base}-{n}");
        }
        self.taken.insert(anchor.clone(), 0);
        anchor
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn anchors_are_made_as_github_makes_them() {
        assert_eq!(slug("Limits (connections)"), "limits-connections");
        assert_eq!(
            slug("The bill of a session under both caches"),
            "the-bill-of-a-session-under-both-caches"
        );
        assert_eq!(slug("Replay: exact or lean"), "replay-exact-or-lean");
        assert_eq!(slug("QQ (OneBot v11)"), "qq-onebot-v11");
        assert_eq!(
            slug("`homebot demo` — the story"),
            "homebot-demo--the-story"
        );
        assert_eq!(slug("snake_case and-dash"), "snake_case-and-dash");
        assert_eq!(slug("做饭模式（cooking）"), "做饭模式cooking");
    }

    #[test]
    fn a_repeated_heading_gets_a_number() {
        let mut s = Slugs::default();
        let got: Vec<String> = ["Notes", "Notes", "Notes-1", "Notes"]
            .iter()
            .map(|h| s.next(h))
            .collect();
        assert_eq!(got, ["notes", "notes-1", "notes-1-1", "notes-2"]);
    }
}

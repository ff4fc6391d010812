//! Which kept cases a new session gets: up to `use` of them, the most similar to the
//! session's first words by shared content words (homebot's are the memory's topic words,
//! handed in as a [`WordsFn`] so this module never imports the memory); ties, and a
//! session with no first words, go to the most recent.

use super::Case;

/// Topic words compared per text.
const WORDS: usize = 24;

/// Up to `max` distinct content words of a text.
pub type WordsFn = fn(&str, usize) -> Vec<String>;

/// Up to `n` of `cases` (oldest first, as stored) for a session whose first words are
/// `first`: the most content words (by `words`) in common first, the newer first among
/// equals; without `words` or `first`, the newest.
pub fn pick(cases: &[Case], first: Option<&str>, n: usize, words: Option<WordsFn>) -> Vec<Case> {
    let (mine, words) = match (first, words) {
        (Some(t), Some(f)) => (f(t, WORDS), Some(f)),
        _ => (Vec::new(), None),
    };
    let overlap = |c: &Case| {
        let Some(f) = words else { return 0 };
        let theirs = f(&c.user, WORDS);
        mine.iter().filter(|w| theirs.contains(w)).count()
    };
    let mut scored: Vec<(usize, usize, &Case)> = cases
        .iter()
        .enumerate()
        .map(|(i, c)| (overlap(c), i, c))
        .collect();
    // most overlap, then the newest (the larger index)
    scored.sort_by(|a, b| b.0.cmp(&a.0).then(b.1.cmp(&a.1)));
    scored
        .into_iter()
        .take(n)
        .map(|(_, _, c)| c.clone())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::modes::examples::{CaseScene, Judged};

    fn case(id: &str, user: &str) -> Case {
        Case {
            id: id.into(),
            user: user.into(),
            answer: "答".into(),
            scene: CaseScene {
                channel: "qq".into(),
                chat_id: "group_1".into(),
                room: None,
            },
            at: "2026-12-01T18:00:00+08:00".into(),
            judged: Judged::Thanked,
            session_id: "cook-1".into(),
        }
    }

    /// A stand-in for the topic words: two-character pieces.
    fn pairs(t: &str, max: usize) -> Vec<String> {
        let c: Vec<char> = t.chars().collect();
        c.windows(2).map(|w| w.iter().collect()).take(max).collect()
    }

    #[test]
    fn the_most_similar_first_then_the_newest() {
        let cases = [
            case("cooking-1", "红烧肉怎么做才不腻"),
            case("cooking-2", "蒸鱼要蒸几分钟"),
            case("cooking-3", "番茄炒蛋先放什么"),
        ];
        let got = pick(&cases, Some("今晚想做红烧肉"), 1, Some(pairs));
        assert_eq!(got[0].id, "cooking-1");
        let got = pick(&cases, Some("清蒸鲈鱼蒸几分钟"), 2, Some(pairs));
        assert_eq!(got[0].id, "cooking-2");
        // the second has nothing in common: the newest of the rest
        assert_eq!(got[1].id, "cooking-3");
        // no first words: the most recent
        let ids: Vec<String> = pick(&cases, None, 2, Some(pairs))
            .into_iter()
            .map(|c| c.id)
            .collect();
        assert_eq!(ids, ["cooking-3", "cooking-2"]);
        assert!(pick(&[], Some("红烧肉"), 2, Some(pairs)).is_empty());
        // without a way to compare: the newest
        assert_eq!(pick(&cases, Some("红烧肉"), 1, None)[0].id, "cooking-3");
    }
}

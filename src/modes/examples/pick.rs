//! Which kept cases a new session gets: up to `use` of them, the most similar to the
//! session's first words by shared topic words ([`crate::memory::topic::topic_words`]);
//! ties, and a session with no first words, go to the most recent.

use super::Case;

/// Topic words compared per text.
const WORDS: usize = 24;

/// Up to `n` of `cases` (oldest first, as stored) for a session whose first words are
/// `first`: the most topic words in common first, the newer first among equals.
pub fn pick(cases: &[Case], first: Option<&str>, n: usize) -> Vec<Case> {
    let words = first
        .map(|t| crate::memory::topic::topic_words(t, WORDS))
        .unwrap_or_default();
    let overlap = |c: &Case| {
        let theirs = crate::memory::topic::topic_words(&c.user, WORDS);
        words.iter().filter(|w| theirs.contains(w)).count()
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

    #[test]
    fn the_most_similar_first_then_the_newest() {
        let cases = [
            case("cooking-1", "红烧肉怎么做才不腻"),
            case("cooking-2", "蒸鱼要蒸几分钟"),
            case("cooking-3", "番茄炒蛋先放什么"),
        ];
        let got = pick(&cases, Some("今晚想做红烧肉"), 1);
        assert_eq!(got[0].id, "cooking-1");
        let got = pick(&cases, Some("清蒸鲈鱼蒸几分钟"), 2);
        assert_eq!(got[0].id, "cooking-2");
        // the second has nothing in common: the newest of the rest
        assert_eq!(got[1].id, "cooking-3");
        // no first words: the most recent
        let ids: Vec<String> = pick(&cases, None, 2).into_iter().map(|c| c.id).collect();
        assert_eq!(ids, ["cooking-3", "cooking-2"]);
        assert!(pick(&[], Some("红烧肉"), 2).is_empty());
    }
}

//! Which kept cases a new session gets: up to `use` of them, the most similar to the
//! session's first words and scene. Words first — shared content words (homebot's are the
//! memory's topic words, handed in as a [`WordsFn`] so this module never imports the
//! memory): they say what the session is about (the dish, the task). Among cases as close
//! in words, the scene decides ([`scene_score`]): a case said in the same room, then in the
//! same chat, shows how this audience is answered (the kitchen speaker's short spoken
//! steps, a group's fuller lists). Then the newest. Words that name nothing leave it to the
//! scene; a session entered by a command (`/mode enter`) has neither and gets the newest.

use super::{Case, CaseScene};

/// Topic words compared per text.
const WORDS: usize = 24;

/// Up to `max` distinct content words of a text.
pub type WordsFn = fn(&str, usize) -> Vec<String>;

/// How close a case's scene is to the session's: 2 for the same room (both known), plus 1
/// for the same chat (channel and chat id); 0 when nothing matches or no scene is known.
pub fn scene_score(case: &CaseScene, session: Option<&CaseScene>) -> u8 {
    let Some(s) = session else { return 0 };
    let room = matches!((&case.room, &s.room), (Some(a), Some(b)) if a == b);
    let chat = case.channel == s.channel && case.chat_id == s.chat_id;
    2 * u8::from(room) + u8::from(chat)
}

/// Up to `n` of `cases` (oldest first, as stored) for a session whose first words are
/// `first`, said in `scene`: the most content words (by `words`) in common first, then the
/// closest scene, then the newest; without `words` or `first`, the scene, then the newest.
pub fn pick(
    cases: &[Case],
    first: Option<&str>,
    scene: Option<&CaseScene>,
    n: usize,
    words: Option<WordsFn>,
) -> Vec<Case> {
    let (mine, words) = match (first, words) {
        (Some(t), Some(f)) => (f(t, WORDS), Some(f)),
        _ => (Vec::new(), None),
    };
    let overlap = |c: &Case| {
        let Some(f) = words else { return 0 };
        let theirs = f(&c.user, WORDS);
        mine.iter().filter(|w| theirs.contains(w)).count()
    };
    let mut scored: Vec<(usize, u8, usize, &Case)> = cases
        .iter()
        .enumerate()
        .map(|(i, c)| (overlap(c), scene_score(&c.scene, scene), i, c))
        .collect();
    // most overlap, then the closest scene, then the newest (the larger index)
    scored.sort_by(|a, b| b.0.cmp(&a.0).then(b.1.cmp(&a.1)).then(b.2.cmp(&a.2)));
    scored
        .into_iter()
        .take(n)
        .map(|(_, _, _, c)| c.clone())
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
        let got = pick(&cases, Some("今晚想做红烧肉"), None, 1, Some(pairs));
        assert_eq!(got[0].id, "cooking-1");
        let got = pick(&cases, Some("清蒸鲈鱼蒸几分钟"), None, 2, Some(pairs));
        assert_eq!(got[0].id, "cooking-2");
        // the second has nothing in common: the newest of the rest
        assert_eq!(got[1].id, "cooking-3");
        // no first words: the most recent
        let ids: Vec<String> = pick(&cases, None, None, 2, Some(pairs))
            .into_iter()
            .map(|c| c.id)
            .collect();
        assert_eq!(ids, ["cooking-3", "cooking-2"]);
        assert!(pick(&[], Some("红烧肉"), None, 2, Some(pairs)).is_empty());
        // without a way to compare: the newest
        assert_eq!(
            pick(&cases, Some("红烧肉"), None, 1, None)[0].id,
            "cooking-3"
        );
    }

    fn said_in(id: &str, user: &str, chat: &str, room: Option<&str>) -> Case {
        let mut c = case(id, user);
        c.scene.chat_id = chat.into();
        c.scene.room = room.map(Into::into);
        c
    }

    #[test]
    fn among_cases_as_close_in_words_the_scene_decides() {
        let cases = [
            said_in("cooking-1", "红烧肉怎么做", "group_1", Some("厨房")),
            said_in("cooking-2", "红烧肉怎么做", "group_2", None),
            said_in("cooking-3", "红烧肉怎么做", "group_3", None),
            said_in("cooking-4", "蒸鱼几分钟", "group_2", Some("厨房")),
        ];
        let kitchen = CaseScene {
            channel: "qq".into(),
            chat_id: "group_2".into(),
            room: Some("厨房".into()),
        };
        // the words first: the three about 红烧肉 before the one about fish in the same room
        // and chat; among them the kitchen's, then the same chat's, then the newest
        let ids = |got: Vec<Case>| got.into_iter().map(|c| c.id).collect::<Vec<_>>();
        let got = pick(&cases, Some("做红烧肉"), Some(&kitchen), 3, Some(pairs));
        assert_eq!(ids(got), ["cooking-1", "cooking-2", "cooking-3"]);
        // no first words: the scene alone, room and chat first
        let got = pick(&cases, None, Some(&kitchen), 3, Some(pairs));
        assert_eq!(ids(got), ["cooking-4", "cooking-1", "cooking-2"]);
        // an unknown scene changes nothing: the newest
        let got = pick(&cases, None, None, 1, Some(pairs));
        assert_eq!(ids(got), ["cooking-4"]);
        // a room is matched only when both know it
        let roomless = CaseScene {
            room: None,
            ..kitchen.clone()
        };
        assert_eq!(scene_score(&cases[0].scene, Some(&roomless)), 0);
        assert_eq!(scene_score(&cases[1].scene, Some(&roomless)), 1);
        assert_eq!(scene_score(&cases[3].scene, Some(&kitchen)), 3);
    }
}

//! A QQ message's own scene policy, typed at the start of its words: `#不记` keeps this
//! message out of scene memory (`none`: nothing of it is kept, nothing recalled for it),
//! `#记` lets it take part (`auto`) where its group or the channel says `none`. The
//! marker (`＃` as well as `#`) is followed by a space, a colon or a comma (either
//! width), or ends the words; it is taken off the words before anyone reads them — the
//! model and the chat's history never see it. Which policy a turn takes: the message's
//! marker, else its group's (`[memory.groups]`), else the channel's (`[memory.channels]`).

use super::target::Target;
use crate::config::{MemoryConfig, ScenePolicy};

/// The marker that keeps a message out of scene memory.
pub const NONE_MARK: &str = "#不记";
/// The marker that lets a message take part in scene memory.
pub const AUTO_MARK: &str = "#记";

/// The policy the words' leading marker asks for, and the words without it (trimmed);
/// words without a marker are returned as they are.
pub fn scene_marker(text: &str) -> (Option<ScenePolicy>, &str) {
    let words = text.trim_start();
    let Some(rest) = words.strip_prefix('#').or_else(|| words.strip_prefix('＃')) else {
        return (None, text);
    };
    for (mark, policy) in [
        (NONE_MARK, ScenePolicy::None),
        (AUTO_MARK, ScenePolicy::Auto),
    ] {
        let Some(after) = rest.strip_prefix(&mark[1..]) else {
            continue;
        };
        let ends = after
            .chars()
            .next()
            .is_none_or(|c| c.is_whitespace() || matches!(c, ':' | '：' | ',' | '，'));
        if ends {
            let after = after.trim_start_matches(|c: char| {
                c.is_whitespace() || matches!(c, ':' | '：' | ',' | '，')
            });
            return (Some(policy), after.trim_end());
        }
    }
    (None, text)
}

/// The scene policy of a message to `target`: its marker's, else its group's, else
/// `None` (the channel's, which the kernel applies).
pub fn policy(
    memory: &MemoryConfig,
    target: &Target,
    marked: Option<ScenePolicy>,
) -> Option<ScenePolicy> {
    marked.or_else(|| match target {
        Target::Group { group_id, .. } => memory.groups.get(group_id.as_str()).copied(),
        Target::Private { .. } => None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_leading_marker_sets_the_policy_and_is_taken_off_the_words() {
        use ScenePolicy::{Auto, None as Off};
        for (text, want, words) in [
            ("#不记 我下周要做手术", Some(Off), "我下周要做手术"),
            ("＃不记：我下周要做手术", Some(Off), "我下周要做手术"),
            ("  #不记,明天", Some(Off), "明天"),
            ("#不记", Some(Off), ""),
            ("#记 记住：周末去外婆家", Some(Auto), "记住：周末去外婆家"),
            (
                "#记：在这个群里回答要简短",
                Some(Auto),
                "在这个群里回答要简短",
            ),
        ] {
            assert_eq!(scene_marker(text), (want, words), "{text:?}");
        }
        // a word that merely begins like a marker is the words
        for text in [
            "#记账 三十块",
            "#不记得了",
            "不记 这个",
            "今天 #不记",
            "#标签",
        ] {
            assert_eq!(scene_marker(text), (None, text), "{text:?}");
        }
    }

    #[test]
    fn the_marker_before_the_group_before_the_channel() {
        let mut memory = MemoryConfig::default();
        memory.groups.insert("1027".into(), ScenePolicy::None);
        let group = |id: &str| Target::parse(&format!("group:{id}")).unwrap();
        assert_eq!(
            policy(&memory, &group("1027"), None),
            Some(ScenePolicy::None)
        );
        assert_eq!(
            policy(&memory, &group("1027"), Some(ScenePolicy::Auto)),
            Some(ScenePolicy::Auto)
        );
        assert_eq!(policy(&memory, &group("2048"), None), None);
        let private = Target::parse("private:1027").unwrap();
        assert_eq!(policy(&memory, &private, None), None);
    }
}

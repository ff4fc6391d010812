//! Which of the household's words make the turn before them a case worth keeping.
//!
//! Counted: explicit praise — `/good`, or a whole message that is only praise ("这个好",
//! "很好", "good" …) — and thanks ("谢谢", "thanks" …: the whole message, or its start).
//! Both say the answer served. Not counted: "continued without correcting it" — people
//! go on talking after a poor answer as often as after a good one (they give up on it,
//! or change the subject), so silence is no evidence; nor praise inside a longer message
//! ("很好，但是少放点盐" corrects as much as it praises).

/// Praise that counts only as the whole message.
const PRAISE: &[&str] = &[
    "这个好",
    "很好",
    "太好了",
    "不错",
    "好主意",
    "good",
    "great",
];

/// Thanks: the whole message, or what it starts with.
const THANKS: &[&str] = &["谢谢", "多谢", "thanks", "thank you"];

use super::Judged;

/// The message without the trailing punctuation, emoji-free space and case that do not
/// change what it says ("谢谢！" is "谢谢").
fn bare(text: &str) -> String {
    text.trim()
        .trim_end_matches(|c: char| c.is_ascii_punctuation() || "！。～~，、…".contains(c))
        .trim()
        .to_lowercase()
}

/// What `text` (a whole user message) says about the answer before it, if anything.
pub fn signal_of(text: &str) -> Option<Judged> {
    let b = bare(text);
    if PRAISE.contains(&b.as_str()) {
        return Some(Judged::Praised);
    }
    THANKS
        .iter()
        .any(|t| b.starts_with(t))
        .then_some(Judged::Thanked)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn praise_counts_only_as_the_whole_message_and_thanks_also_as_its_start() {
        assert_eq!(signal_of("这个好"), Some(Judged::Praised));
        assert_eq!(signal_of(" 太好了！"), Some(Judged::Praised));
        assert_eq!(signal_of("Great!"), Some(Judged::Praised));
        assert_eq!(signal_of("谢谢"), Some(Judged::Thanked));
        assert_eq!(signal_of("谢谢，我试试"), Some(Judged::Thanked));
        assert_eq!(signal_of("Thank you so much"), Some(Judged::Thanked));
        // praise inside a longer message, or a plain continuation: not counted
        assert_eq!(signal_of("很好，但是少放点盐"), None);
        assert_eq!(signal_of("这个好难"), None);
        assert_eq!(signal_of("接下来呢"), None);
        assert_eq!(signal_of("不谢谢"), None);
    }
}

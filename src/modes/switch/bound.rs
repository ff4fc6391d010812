//! Single-character verbs (开, 关, 进, 换, 切, 退). 开 also begins 开火 and 开心, 关 also
//! 关火, 关小火 and 关于, 进 also 进度: such a verb counts only right next to the name of
//! what it switches —
//!
//! - **before the name**, with at most one complement between: 开做饭模式, 开个做饭模式,
//!   开一下做饭模式, 换成做饭模式, 切到做饭模式, 关掉做饭模式, 关上做饭模式;
//! - **after the name**, with at most one adverb or request between (给我, 帮我, 先, 赶紧
//!   …), and after the verb at most one tail (一下, 掉, 了, 起来 …) and then a particle,
//!   a new clause or the end: 做饭模式关掉, 把做饭模式关了, 做饭模式给我开一下 — not
//!   做饭模式开火, 做饭模式开着吗, 做饭模式关于什么.
//!
//! Whether the command is then negated, asked, reported or deferred is the judge's.

use super::words::{
    BOUND_BETWEEN, BOUND_COMPLEMENTS, BOUND_TAILS, DURATION_DIGITS_ZH, DURATION_UNITS_ZH,
    FROM_NOW_ZH, LATER_ZH, NEGATIONS_ZH, NEW_CLAUSE_EN, NEW_CLAUSE_ZH, NOT_YET_ZH, PARTICLES,
    RETRACTIONS, TIME_OF_DAY_ZH, UNTIL_ZH,
};

/// Does the verb at byte `at..at + len` of `t` stand right next to one of `names`?
pub fn next_to_name(t: &str, at: usize, len: usize, names: &[String]) -> bool {
    before_name(&t[at + len..], names) || after_name(&t[..at], &t[at + len..], names)
}

/// `rest` (what follows the verb) is a name, after at most one complement.
fn before_name(rest: &str, names: &[String]) -> bool {
    let r = rest.trim_start();
    let starts_named = |s: &str| names.iter().any(|n| s.trim_start().starts_with(n.as_str()));
    starts_named(r)
        || BOUND_COMPLEMENTS
            .iter()
            .filter_map(|c| r.strip_prefix(c))
            .any(starts_named)
}

/// `before` ends with a name (at most [`MAX_BETWEEN`] adverbs, requests, negations,
/// deferrals or times of day between: 做饭模式给我关了, 做饭模式先不关, 做饭模式晚点再关,
/// 做饭模式晚上再开 — the judge then weighs them), and `rest` ends the verb.
fn after_name(before: &str, rest: &str, names: &[String]) -> bool {
    let ends_named = |s: &str| names.iter().any(|n| s.ends_with(n.as_str()));
    let mut b = before.trim_end();
    for _ in 0..=MAX_BETWEEN {
        if ends_named(b) {
            return ends_verb(rest);
        }
        let Some(shorter) = BOUND_BETWEEN
            .iter()
            .chain(NOT_YET_ZH)
            .chain(LATER_ZH)
            .chain(UNTIL_ZH)
            .chain(TIME_OF_DAY_ZH)
            .chain(NEGATIONS_ZH)
            .filter_map(|w| b.strip_suffix(w))
            .min_by_key(|s| s.len())
        else {
            return false;
        };
        b = shorter.trim_end();
    }
    false
}

/// Words between the name and a single-character verb after it, at most.
const MAX_BETWEEN: usize = 3;

/// Nothing, a particle or a new clause after the verb, with at most one tail before it.
fn ends_verb(rest: &str) -> bool {
    let done = |s: &str| {
        let s = s.trim_start();
        s.is_empty() || s.starts_with(PARTICLES) || starts_clause(s)
    };
    done(rest)
        || BOUND_TAILS
            .iter()
            .filter_map(|w| rest.trim_start().strip_prefix(w))
            .any(done)
}

/// Does `rest` open a new clause ([`NEW_CLAUSE_ZH`], [`NEW_CLAUSE_EN`], a retraction, a
/// deferral, a time of day or a time from now: 打开做饭模式｜十分钟后提醒我翻面)?
pub fn starts_clause(rest: &str) -> bool {
    let r = rest.trim_start();
    if NEW_CLAUSE_ZH
        .iter()
        .chain(RETRACTIONS)
        .chain(LATER_ZH)
        .chain(NOT_YET_ZH)
        .chain(UNTIL_ZH)
        .chain(TIME_OF_DAY_ZH)
        .any(|w| !w.is_ascii() && r.starts_with(w))
        || from_now_at(r).is_some()
    {
        return true;
    }
    let first = r
        .split(|c: char| !(c.is_ascii_alphanumeric() || c == '\''))
        .next()
        .unwrap_or_default();
    NEW_CLAUSE_EN.contains(&first)
        || RETRACTIONS
            .iter()
            .any(|w| w.is_ascii() && find_all(r, w).first() == Some(&0))
}

/// Byte offsets where `needle` occurs in `hay`. ASCII needles must stand alone as words
/// (so `end` does not match `weekend`); CJK needles match anywhere.
pub fn find_all(hay: &str, needle: &str) -> Vec<usize> {
    if needle.is_empty() {
        return Vec::new();
    }
    let wordy = needle.is_ascii();
    hay.match_indices(needle)
        .map(|(i, _)| i)
        .filter(|&i| {
            if !wordy {
                return true;
            }
            let before = hay[..i].chars().next_back();
            let after = hay[i + needle.len()..].chars().next();
            let boundary =
                |c: Option<char>| c.is_none_or(|c| !(c.is_ascii_alphanumeric() || c == '\''));
            boundary(before) && boundary(after)
        })
        .collect()
}

/// The byte length of a Chinese time from now at the start of `s`: a number, a unit and
/// 后 / 以后 / 之后 after it or 过 before it (十分钟后, 半小时以后, 一个半小时后, 过五分钟).
pub(super) fn from_now_at(s: &str) -> Option<usize> {
    let (r, passed) = match ["再过", "过"].iter().find_map(|p| s.strip_prefix(p)) {
        Some(r) => (r, true),
        None => (s, false),
    };
    let number: usize = r
        .chars()
        .take_while(|c| DURATION_DIGITS_ZH.contains(*c))
        .map(char::len_utf8)
        .sum();
    if number == 0 {
        return None;
    }
    let unit = DURATION_UNITS_ZH
        .iter()
        .find(|u| r[number..].starts_with(*u))?;
    let end = s.len() - r.len() + number + unit.len();
    match FROM_NOW_ZH.iter().find(|w| s[end..].starts_with(*w)) {
        Some(w) => Some(end + w.len()),
        None => passed.then_some(end),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(t: &str, verb: &str) -> bool {
        let names = vec!["做饭模式".to_string()];
        let pos = t.find(verb).unwrap();
        next_to_name(t, pos, verb.len(), &names)
    }

    #[test]
    fn a_single_character_verb_counts_only_next_to_the_name() {
        for (t, v) in [
            ("开做饭模式", "开"),
            ("开个做饭模式", "开"),
            ("换成做饭模式", "换"),
            ("关掉做饭模式", "关"),
            ("把做饭模式关了", "关"),
            ("做饭模式给我开一下", "开"),
            ("做饭模式关掉吧", "关"),
            ("做饭模式关了吗", "关"),
            ("做饭模式关掉我吃完了", "关"),
            ("做饭模式先不关", "关"),
            ("做饭模式晚点再关吧", "关"),
        ] {
            assert!(at(t, v), "{t}");
        }
        for (t, v) in [
            ("开火做饭模式", "开"),
            ("关于做饭模式", "关"),
            ("做饭模式开火", "开"),
            ("做饭模式里关小火", "关"),
            ("做饭模式开着吗", "开"),
            ("开心做饭模式", "开"),
            ("做饭模式进度", "进"),
            ("做饭模式关小火", "关"),
        ] {
            assert!(!at(t, v), "{t}");
        }
    }
}

//! `mode.json` `offer.answer`: how the backend tells, from an answer alone, that a normal
//! chat's answer was this mode's work — a recipe walked step by step outside cooking
//! mode — so the mode can be offered after it, without a second model call and whatever
//! the user's own words were.
//!
//! The rule, both parts required:
//! - **steps**: the answer walks through at least `steps` steps, counted the most
//!   generous of three ways — lines that begin with a step marker (`1.` `2、` `3)` `（4）`
//!   `第五步` `步骤6` `Step 7`), once per number; `第N步` anywhere (a spoken answer is one
//!   paragraph), once per number; or the different sequence words (先把 然后 接着 再把 最后;
//!   first then next finally), as a spoken answer walks through steps;
//! - **words**: at least `at_least` different phrases of `words` (the mode's own
//!   vocabulary: 下锅, 翻炒, 小火 …) appear in the answer.
//!
//! Steps alone are any how-to (setting up a router); words alone are any talk about food.
//! Both bounded: at most [`MAX_ANSWER_WORDS`] phrases of at most [`MAX_WORD_CHARS`]
//! characters, and only the first [`MAX_SCANNED_CHARS`] characters of an answer are read.

use serde::Deserialize;
use std::collections::BTreeSet;

/// The longest phrase in `offer.answer.words` (as `offer.words`).
pub const MAX_WORD_CHARS: usize = 20;
/// Phrases in `offer.answer.words`, at most.
pub const MAX_ANSWER_WORDS: usize = 100;
/// The largest `at_least` and `steps` a mode may ask for.
pub const MAX_COUNT: usize = 20;
/// Characters of an answer read (a reply is capped well below this anyway).
pub const MAX_SCANNED_CHARS: usize = 20_000;

/// `offer.answer` in `mode.json`.
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct AnswerSigns {
    /// The mode's vocabulary, as it appears in its answers.
    pub words: Vec<String>,
    /// How many different `words` an answer must hold (default 3).
    #[serde(default = "default_at_least")]
    pub at_least: usize,
    /// How many steps an answer must walk through (default 3).
    #[serde(default = "default_steps")]
    pub steps: usize,
}

fn default_at_least() -> usize {
    3
}
fn default_steps() -> usize {
    3
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SignsProblem {
    #[error("offer.answer.words must list 1 to {MAX_ANSWER_WORDS} non-empty phrases of at most {MAX_WORD_CHARS} characters")]
    Words,
    #[error("offer.answer.at_least and offer.answer.steps must be 1 to {MAX_COUNT}")]
    Count,
}

/// How strongly an answer shows a mode's work: (steps, different words). Only a match
/// has one; a larger one is the better match.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Match {
    pub words: usize,
    pub steps: usize,
}

impl AnswerSigns {
    pub fn check(&self) -> Result<(), SignsProblem> {
        let bad = |w: &String| w.trim().is_empty() || w.chars().count() > MAX_WORD_CHARS;
        if self.words.is_empty()
            || self.words.len() > MAX_ANSWER_WORDS
            || self.words.iter().any(bad)
        {
            return Err(SignsProblem::Words);
        }
        let in_range = |n: usize| (1..=MAX_COUNT).contains(&n);
        if !in_range(self.at_least) || !in_range(self.steps) || self.at_least > self.words.len() {
            return Err(SignsProblem::Count);
        }
        Ok(())
    }

    /// Whether `answer` is this mode's work, and how strongly.
    pub fn matches(&self, answer: &str) -> Option<Match> {
        let answer: String = answer.chars().take(MAX_SCANNED_CHARS).collect();
        let steps = steps(&answer);
        if steps < self.steps {
            return None;
        }
        let lower = answer.to_lowercase();
        let words = self
            .words
            .iter()
            .map(|w| w.trim().to_lowercase())
            .filter(|w| lower.contains(w.as_str()))
            .collect::<BTreeSet<_>>()
            .len();
        (words >= self.at_least).then_some(Match { words, steps })
    }
}

/// The steps `text` walks through (see the module's rule).
pub fn steps(text: &str) -> usize {
    let lines = text
        .lines()
        .filter_map(|l| step_number(l.trim_start()))
        .collect::<BTreeSet<_>>()
        .len();
    let inline = text
        .match_indices('第')
        .filter_map(|(i, _)| {
            let (n, rest) = number(&text[i + '第'.len_utf8()..])?;
            rest.starts_with('步').then_some(n)
        })
        .collect::<BTreeSet<_>>()
        .len();
    lines.max(inline).max(sequence_words(text))
}

/// Words that walk a listener from one step to the next.
const SEQUENCE_ZH: &[&str] = &["首先", "先把", "然后", "接着", "随后", "再把", "最后"];
const SEQUENCE_EN: &[&str] = &["first", "then", "next", "after that", "finally"];

/// How many different sequence words `text` uses (English ones as whole words).
fn sequence_words(text: &str) -> usize {
    let zh = SEQUENCE_ZH.iter().filter(|w| text.contains(*w)).count();
    let lower = text.to_lowercase();
    let words: Vec<&str> = lower
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .collect();
    let en = SEQUENCE_EN
        .iter()
        .filter(|phrase| {
            let parts: Vec<&str> = phrase.split(' ').collect();
            words.windows(parts.len()).any(|w| w == parts.as_slice())
        })
        .count();
    zh.max(en)
}

/// The number of a step marker at the start of `line`, if it has one.
fn step_number(line: &str) -> Option<u32> {
    let lower = line.to_lowercase();
    // 第五步 / 第5步, 步骤6 / 步骤 6, step 7
    if let Some(rest) = lower.strip_prefix('第') {
        let (n, rest) = number(rest)?;
        return rest.starts_with('步').then_some(n);
    }
    for word in ["步骤", "step"] {
        if let Some(rest) = lower.strip_prefix(word) {
            return number(rest.trim_start()).map(|(n, _)| n);
        }
    }
    // （4） (4)
    for (open, close) in [('（', '）'), ('(', ')')] {
        if let Some(rest) = lower.strip_prefix(open) {
            let (n, rest) = number(rest)?;
            return rest.starts_with(close).then_some(n);
        }
    }
    // 1. 2、 3) 4）— a number, then its mark, then words (not "1.5 kg")
    let (n, rest) = number(&lower).filter(|(_, r)| !r.starts_with(|c: char| c.is_ascii_digit()))?;
    let mut chars = rest.chars();
    let mark = chars.next()?;
    let after = chars.next();
    let words_follow = after.is_none_or(|c| !c.is_ascii_digit());
    (matches!(mark, '.' | '、' | ')' | '）' | '．' | ':' | '：') && words_follow).then_some(n)
}

/// A leading number (ASCII or 一 … 十) and what follows it.
fn number(s: &str) -> Option<(u32, &str)> {
    let digits = s.len() - s.trim_start_matches(|c: char| c.is_ascii_digit()).len();
    if digits > 0 {
        return s[..digits].parse().ok().map(|n| (n, &s[digits..]));
    }
    let c = s.chars().next()?;
    let n = "一二三四五六七八九十".chars().position(|d| d == c)? as u32 + 1;
    Some((n, &s[c.len_utf8()..]))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cooking() -> AnswerSigns {
        AnswerSigns {
            words: ["下锅", "翻炒", "小火", "焯水", "生抽", "出锅"]
                .map(String::from)
                .to_vec(),
            at_least: 3,
            steps: 3,
        }
    }

    #[test]
    fn step_markers_are_counted_once_per_number_in_either_language() {
        assert_eq!(steps("1. 切块\n2、焯水\n3）下锅\n3) again"), 3);
        assert_eq!(steps("第一步：切\n第二步 焯水\n第3步，炖"), 3);
        assert_eq!(
            steps("步骤1 切\n步骤 2 炒\nStep 3: serve\n（4）装盘\n(5) 吃"),
            5
        );
        // quantities and times are not steps
        assert_eq!(steps("1.5 公斤\n2.0 升\n10:30 开始\n第一次"), 0);
        assert_eq!(steps("五花肉一斤\n- 葱\n- 姜"), 0);
        // spoken: one paragraph
        assert_eq!(steps("第一步切块，第二步焯水，第三步下锅炖。"), 3);
        assert_eq!(
            steps("先把肉切块焯水，然后炒糖色，再把肉下锅，最后小火炖。"),
            4
        );
        assert_eq!(
            steps("First brown the meat, then add the sauce, finally simmer."),
            3
        );
        assert_eq!(
            steps("Authentic, thenceforth, nextdoor"),
            0,
            "whole words only"
        );
        assert_eq!(steps("先生然后说"), 1);
    }

    #[test]
    fn a_recipe_walked_step_by_step_matches_a_list_or_food_talk_alone_does_not() {
        let recipe = "红烧肉这样做：\n1. 五花肉切块，冷水下锅焯水。\n2. 少油小火炒糖色。\n3. 肉块下锅翻炒上色，加生抽。\n4. 小火炖四十分钟，收汁出锅。";
        let m = cooking().matches(recipe).expect("a recipe");
        assert_eq!((m.steps, m.words), (4, 6));
        let router = "1. 插上电源\n2. 连上网线\n3. 打开管理页面";
        assert_eq!(cooking().matches(router), None, "steps alone");
        let talk = "红烧肉要先焯水，再下锅翻炒，最后小火慢炖，生抽少放。";
        assert_eq!(cooking().matches(talk), None, "words alone");
        let two = "1. 焯水\n2. 下锅翻炒小火炖";
        assert_eq!(cooking().matches(two), None, "too few steps");
        let spoken = "先把五花肉焯水，然后小火炒糖色，再把肉下锅翻炒，最后小火炖四十分钟就能出锅。";
        assert!(cooking().matches(spoken).is_some(), "a spoken recipe");
    }

    #[test]
    fn the_rule_is_bounded_where_a_mode_file_sets_it() {
        assert_eq!(cooking().check(), Ok(()));
        let mut s = cooking();
        s.at_least = 7;
        assert_eq!(s.check(), Err(SignsProblem::Count), "more than its words");
        s.at_least = 0;
        assert_eq!(s.check(), Err(SignsProblem::Count));
        let mut s = cooking();
        s.words.push(" ".into());
        assert_eq!(s.check(), Err(SignsProblem::Words));
        s.words = vec!["x".into(); MAX_ANSWER_WORDS + 1];
        assert_eq!(s.check(), Err(SignsProblem::Words));
        let json = r#"{"words": ["下锅"], "at_least": 1}"#;
        let s: AnswerSigns = serde_json::from_str(json).unwrap();
        assert_eq!(s.steps, 3, "defaults");
        assert!(serde_json::from_str::<AnswerSigns>(r#"{"words": ["a"], "x": 1}"#).is_err());
    }
}

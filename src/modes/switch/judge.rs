//! Does the user's own sentence *command* something? The parser behind the mode guard and
//! the `set_strategy` guard: one [`Lexicon`] (names, verbs, whole-command phrases) in,
//! one [`Verdict`] out.
//!
//! Only a segment (see [`super::clause`]) that holds a name counts, and in it the verb:
//!
//! 1. **Negation scope.** A negation anywhere before the verb in its segment negates it:
//!    不/不要/不能/不可以/不许/不准/禁止/请勿/别/没/不想…, "don't", "shouldn't", "not", "never"…
//!    A-not-A forms are not negations: 能不能 / 可不可以 / 行不行 are polite requests,
//!    要不要 / 会不会 / 是不是 / 有没有 are questions. A phrase of the lexicon is a whole
//!    command, negation included ("不用计划｜直接做").
//! 2. **Reports and hypotheses.** A reporting word before the verb (他说, 我觉得, 问, said,
//!    told, think…) or a conditional (如果, 要是, 万一, …的话, unless…) — it is about the
//!    command, not the command.
//! 3. **Questions.** An interrogative anywhere in the segment (为什么, 什么时候, 是什么,
//!    怎么, 哪, 多久, 会不会…; why, what, when, how, where, whether, if…), a segment that
//!    opens with an English auxiliary ("will cooking mode end soon?"), or a final
//!    吗/呢/？ make it a question — unless it is a polite request: a request word (可以,
//!    能, 能不能, 请, 帮我, 好吗, 麻烦…; "can you", "please", "let's") and no
//!    interrogative ("可以结束做饭模式了吗" asks politely; "做饭模式结束了吗" asks about
//!    it). A past marker (昨天, 刚才, 之前, 已经…) is about what happened.
//! 4. **Not a command.** The name used as a modifier ("做饭模式的按钮") and a perfective
//!    了/过 after the verb or after the name that follows it ("做饭模式结束了", "打开过做饭
//!    模式") report a state — unless a request word asks for it ("做饭模式可以结束了").
//! 5. **Retraction.** A later segment that takes it back (算了, 不用了, 不对, 取消, "never
//!    mind", "forget it", or a negated verb of the same command) cancels it.
//!
//! When in doubt it refuses; the caller's refusal says how to ask.

use super::clause::{blank, contains_any, find_all, normalize, segments, Clause, Lexicon, Role};
use super::words::*;

/// Why the best segment did not command it, most decisive first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Verdict {
    Command,
    /// Taken back by a later segment.
    Retracted,
    Negated,
    /// A how-to question ("怎么打开…").
    HowQuestion,
    /// Any other question, a report of a state, or the name used as a modifier.
    Question,
    /// Someone's words or opinion retold, or a hypothesis ("他说打开…", "如果…").
    Reported,
    /// The name is there, the verb is not (in the same segment).
    NoVerb,
    NotNamed,
}

/// Judge the whole text against one lexicon.
pub fn judge(text: &str, lex: &Lexicon) -> Verdict {
    let segs = segments(&normalize(text), lex);
    let mut best = Verdict::NotNamed;
    for (i, s) in segs.iter().enumerate() {
        if !lex.named_in(&s.text) {
            continue;
        }
        let mut v = judge_segment(s, lex);
        if v == Verdict::Command && segs[i + 1..].iter().any(|later| retracts(later, lex)) {
            v = Verdict::Retracted;
        }
        if v == Verdict::Command {
            return v;
        }
        best = best.min(v);
    }
    best
}

/// Byte spans where the command's verb stands in `t`: its verbs, and its phrases where
/// only a tail follows them.
fn verb_spans(t: &str, lex: &Lexicon) -> Vec<(usize, usize, Role)> {
    lex.marks(t)
        .into_iter()
        .filter(|m| match m.role {
            Role::Name => false,
            Role::Verb => true,
            Role::Phrase => only_tail(&t[m.end()..]),
        })
        .map(|m| (m.at, m.len, m.role))
        .collect()
}

/// Is `rest` nothing but [`PHRASE_TAILS`]?
fn only_tail(rest: &str) -> bool {
    let mut r = rest.trim();
    'strip: while !r.is_empty() {
        for tail in PHRASE_TAILS {
            if let Some(after) = r.strip_prefix(tail) {
                r = after.trim_start();
                continue 'strip;
            }
        }
        return false;
    }
    true
}

fn retracts(c: &Clause, lex: &Lexicon) -> bool {
    if contains_any(&c.text, RETRACTIONS) {
        return true;
    }
    verb_spans(&c.text, lex)
        .into_iter()
        .any(|(pos, _, _)| negated_before(&blank(&c.text[..pos], &lex.phrases)))
}

fn judge_segment(c: &Clause, lex: &Lexicon) -> Verdict {
    let t = &c.text;
    let verbs = verb_spans(t, lex);
    if verbs.is_empty() {
        return Verdict::NoVerb;
    }
    let names: Vec<(usize, usize)> = lex
        .names
        .iter()
        .flat_map(|n| find_all(t, n).into_iter().map(move |p| (p, n.len())))
        .collect();
    // the name as a modifier: "做饭模式的按钮"
    if names
        .iter()
        .any(|&(p, l)| t[p + l..].trim_start().starts_with('的'))
    {
        return Verdict::Question;
    }
    if contains_any(t, HOW_ZH) || contains_any(t, HOW_EN) {
        return Verdict::HowQuestion;
    }
    let question = is_question(c);
    let mut verdict = Verdict::NoVerb;
    for &(pos, len, role) in &verbs {
        // a phrase of the lexicon before the verb is a command of its own, not a negation
        let before = blank(&t[..pos], &lex.phrases);
        let v = if negated_before(&before) {
            Verdict::Negated
        } else if reported_before(&before) || contains_any(t, CONDITIONAL_ANYWHERE_ZH) {
            Verdict::Reported
        } else if question || (role == Role::Verb && reports_state(t, pos, len, &names)) {
            Verdict::Question
        } else {
            Verdict::Command
        };
        if v == Verdict::Command {
            return v;
        }
        verdict = verdict.min(v);
    }
    verdict
}

/// A negation before the verb, in its segment (A-not-A forms are not negations).
pub(super) fn negated_before(before: &str) -> bool {
    let b = blank(before, A_NOT_A_REQUESTS);
    let b = blank(&b, A_NOT_A_QUESTIONS);
    contains_any(&b, NEGATIONS_ZH) || contains_any(&b, NEGATIONS_EN)
}

/// Someone's words or opinion, or a hypothesis, before the verb.
fn reported_before(before: &str) -> bool {
    let b = blank(before, REPORT_OPENERS_ZH);
    contains_any(&b, REPORTS_ZH)
        || contains_any(&b, REPORTS_EN)
        || contains_any(&b, CONDITIONALS_ZH)
        || contains_any(&b, CONDITIONALS_EN)
}

fn polite(t: &str) -> bool {
    contains_any(t, A_NOT_A_REQUESTS)
        || contains_any(t, REQUESTS_ZH)
        || REQUESTS_EN.iter().any(|r| t.starts_with(r))
}

/// Is this segment a question rather than a (possibly polite) request?
fn is_question(c: &Clause) -> bool {
    let t = &c.text;
    let stripped = blank(t, A_NOT_A_REQUESTS);
    let interrogative = contains_any(&stripped, INTERROGATIVES_ZH)
        || contains_any(t, INTERROGATIVES_EN)
        || AUX_EN.iter().any(|a| {
            t.starts_with(&format!("{a} ")) && !REQUESTS_EN.iter().any(|r| t.starts_with(r))
        });
    if interrogative {
        return true;
    }
    if contains_any(t, PAST_MARKERS_ZH) || contains_any(t, PAST_MARKERS_EN) {
        return true; // about what happened, not a request
    }
    let perfective = contains_any(t, PERFECTIVE_QUESTIONS);
    let final_particle = QUESTION_FINALS_ZH.iter().any(|p| t.ends_with(p));
    if !(c.asked || final_particle || perfective) {
        return false;
    }
    // "可以结束做饭模式了吗" asks for it politely; "做饭模式结束了吗" asks about it
    !polite(t)
}

/// A perfective 了/过 right after the verb, or after a name that follows it, reports a
/// state ("做饭模式结束了", "打开过做饭模式") — unless a request word before the verb
/// asks for it ("做饭模式可以结束了").
fn reports_state(t: &str, pos: usize, len: usize, names: &[(usize, usize)]) -> bool {
    let perfective_at = |from: usize| t[from..].trim_start().starts_with(PERFECTIVE);
    let perfective = perfective_at(pos + len)
        || names
            .iter()
            .any(|&(p, l)| p >= pos + len && perfective_at(p + l));
    perfective && !polite(&t[..pos])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn negation_scope_skips_a_not_a_forms() {
        assert!(negated_before("不可以"));
        assert!(negated_before("我不想让你"));
        assert!(negated_before("you shouldn't "));
        assert!(!negated_before("能不能帮我"));
        assert!(!negated_before("please "));
        assert!(!negated_before("cannotx ")); // not a word of its own
    }

    #[test]
    fn reports_and_hypotheses_are_not_requests() {
        assert!(reported_before("他说"));
        assert!(reported_before("如果我"));
        assert!(reported_before("she told me to "));
        assert!(!reported_before("请问可以"));
        assert!(!reported_before("帮我"));
    }

    #[test]
    fn a_phrase_counts_only_with_nothing_but_a_tail_after_it() {
        assert!(only_tail("吧"));
        assert!(only_tail("一下就行了"));
        assert!(only_tail(""));
        assert!(!only_tail("红烧肉吧"));
    }
}

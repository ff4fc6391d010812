//! The switch guard's parser: does the user's own sentence *command* the switch?
//!
//! Only the clause that holds the mode's name counts, and in it the verb:
//!
//! 1. **Clauses.** The text is cut at `，。！？；,.!?;:：` and at English `and`, `but`,
//!    `then`, `so`; a clause remembers whether it ended in a question mark. The name and
//!    the verb must be in the same clause ("做饭模式，开始吧" is not enough).
//! 2. **Negation scope.** A negation anywhere before the verb in its clause negates it:
//!    不/不要/不能/不可以/不许/不准/禁止/请勿/别/没/不想…, "don't", "shouldn't", "not", "never"…
//!    A-not-A forms are not negations: 能不能 / 可不可以 / 行不行 are polite requests,
//!    要不要 / 会不会 / 是不是 / 有没有 are questions.
//! 3. **Questions.** An interrogative anywhere in the clause (为什么, 什么时候, 是什么,
//!    怎么, 哪, 多久, 会不会…; why, what, when, how, where, whether, if…), a clause that opens
//!    with an English auxiliary ("will cooking mode end soon?"), or a sentence-final
//!    吗/呢/？ make it a question — unless it is a polite request: a request word before the
//!    verb (可以, 能, 能不能, 请, 帮我, 麻烦…; "can you", "could you", "please", "let's") and
//!    no interrogative ("可以结束做饭模式了吗" asks politely; "做饭模式结束了吗" asks about
//!    it). A past marker (昨天, 刚才, 之前, 已经…) is about what happened, never a request.
//! 4. **Not a command.** The name used as a modifier ("做饭模式的按钮") and a report of a
//!    state ("做饭模式结束了") do not count.
//! 5. **Retraction.** A later clause that takes it back (算了, 不用了, 不对, 取消, "never
//!    mind", "forget it", or a negated verb of the same action) cancels it.
//!
//! When in doubt the guard refuses; the refusal tells the user how to switch.

/// Why the best clause did not command the switch, most decisive first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Verdict {
    Command,
    /// Taken back by a later clause.
    Retracted,
    Negated,
    /// A how-to question ("怎么打开…").
    HowQuestion,
    /// Any other question, a report of a state, or the name used as a modifier.
    Question,
    /// The name is there, the verb is not (in the same clause).
    NoVerb,
    NotNamed,
}

const BOUNDARIES: &[char] = &[
    '，', ',', '。', '.', '！', '!', '？', '?', '；', ';', '：', ':', '\n', '、',
];
const EN_BOUNDARIES: &[&str] = &[" and ", " but ", " then ", " so "];

/// Question forms and polite-request forms of A-not-A, checked before negations.
const A_NOT_A_REQUESTS: &[&str] = &["能不能", "可不可以", "行不行", "好不好", "可以不可以"];
const A_NOT_A_QUESTIONS: &[&str] = &["要不要", "会不会", "是不是", "有没有", "该不该"];

const NEGATIONS_ZH: &[&str] = &[
    "不要",
    "不用",
    "不想",
    "不必",
    "不可以",
    "不能",
    "不许",
    "不准",
    "不该",
    "不应该",
    "不需要",
    "无需",
    "无须",
    "禁止",
    "请勿",
    "勿",
    "别",
    "甭",
    "没有",
    "没",
    "未",
    "不",
];
const NEGATIONS_EN: &[&str] = &[
    "don't",
    "dont",
    "do not",
    "doesn't",
    "does not",
    "not",
    "never",
    "no need to",
    "shouldn't",
    "should not",
    "can't",
    "cannot",
    "won't",
    "will not",
    "mustn't",
    "must not",
    "wouldn't",
    "stop trying to",
];

const HOW_ZH: &[&str] = &["怎么", "如何", "怎样", "咋"];
const HOW_EN: &[&str] = &["how"];
const INTERROGATIVES_ZH: &[&str] = &[
    "为什么",
    "为何",
    "什么时候",
    "何时",
    "是什么",
    "什么意思",
    "啥意思",
    "什么",
    "啥",
    "哪",
    "几点",
    "多久",
    "多长时间",
    "是否",
    "会不会",
    "是不是",
    "有没有",
    "要不要",
    "该不该",
];
const INTERROGATIVES_EN: &[&str] = &[
    "why", "what", "when", "where", "which", "who", "whether", "if",
];
/// An English clause opening with one of these (and no request form) is a question.
const AUX_EN: &[&str] = &[
    "will", "would", "does", "did", "is", "are", "was", "were", "do", "has", "have", "should",
    "shall", "am",
];
const QUESTION_FINALS_ZH: &[&str] = &["吗", "呢", "嘛", "么"];
const PERFECTIVE_QUESTIONS: &[&str] = &["了吗", "过吗", "了没", "过没", "了么"];
const PAST_MARKERS_ZH: &[&str] = &[
    "昨天", "前天", "刚才", "刚刚", "之前", "上次", "以前", "已经",
];
const PAST_MARKERS_EN: &[&str] = &["yesterday", "already", "earlier", "last time"];

const REQUESTS_ZH: &[&str] = &[
    "可以", "能否", "能", "请", "帮我", "帮忙", "麻烦", "给我", "替我", "你来",
];
const REQUESTS_EN: &[&str] = &[
    "can you",
    "could you",
    "would you",
    "will you",
    "can we",
    "could we",
    "please",
    "let's",
    "lets",
    "i want to",
    "i'd like to",
    "go ahead and",
];
const RETRACTIONS: &[&str] = &[
    "算了",
    "不用了",
    "不要了",
    "不对",
    "取消",
    "当我没说",
    "never mind",
    "nevermind",
    "forget it",
    "cancel that",
    "just kidding",
    "scratch that",
];

/// One clause of the user's text, normalized.
#[derive(Debug, Clone, PartialEq)]
pub struct Clause {
    pub text: String,
    /// The clause ended in a question mark.
    pub asked: bool,
}

/// Lower-case, unify apostrophes and full-width spaces, collapse whitespace.
pub fn normalize(s: &str) -> String {
    let lower = s
        .to_lowercase()
        .replace(['’', '‘'], "'")
        .replace('\u{3000}', " ");
    lower.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Cut normalized text into clauses.
pub fn clauses(text: &str) -> Vec<Clause> {
    let mut text = format!(" {text} ");
    for b in EN_BOUNDARIES {
        text = text.replace(b, " , ");
    }
    let mut out = Vec::new();
    let mut cur = String::new();
    for c in text.chars() {
        if BOUNDARIES.contains(&c) {
            push_clause(&mut out, &cur, c == '?' || c == '？');
            cur.clear();
        } else {
            cur.push(c);
        }
    }
    push_clause(&mut out, &cur, false);
    out
}

fn push_clause(out: &mut Vec<Clause>, text: &str, asked: bool) {
    let t = text.trim();
    if !t.is_empty() {
        out.push(Clause {
            text: t.to_string(),
            asked,
        });
    }
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

fn contains_any(hay: &str, needles: &[&str]) -> bool {
    needles.iter().any(|n| !find_all(hay, n).is_empty())
}

/// `hay` with every occurrence of `forms` blanked out (same byte length kept, so offsets
/// stay valid).
fn blank(hay: &str, forms: &[&str]) -> String {
    let mut s = hay.to_string();
    for f in forms {
        s = s.replace(f, &"_".repeat(f.len()));
    }
    s
}

/// Judge the whole text for one action: `names` of the mode, `verbs` of the action.
pub fn judge(text: &str, names: &[String], verbs: &[String]) -> Verdict {
    let cl = clauses(&normalize(text));
    let mut best = Verdict::NotNamed;
    for (i, c) in cl.iter().enumerate() {
        if !names.iter().any(|n| !find_all(&c.text, n).is_empty()) {
            continue;
        }
        let mut v = judge_clause(c, names, verbs);
        if v == Verdict::Command && cl[i + 1..].iter().any(|later| retracts(later, verbs)) {
            v = Verdict::Retracted;
        }
        if v == Verdict::Command {
            return v;
        }
        best = best.min(v);
    }
    best
}

fn retracts(c: &Clause, verbs: &[String]) -> bool {
    if contains_any(&c.text, RETRACTIONS) {
        return true;
    }
    verbs
        .iter()
        .flat_map(|v| find_all(&c.text, v))
        .any(|pos| negated_before(&c.text[..pos]))
}

fn judge_clause(c: &Clause, names: &[String], verbs: &[String]) -> Verdict {
    let t = &c.text;
    let verb_at: Vec<(usize, usize)> = verbs
        .iter()
        .flat_map(|v| find_all(t, v).into_iter().map(move |p| (p, v.len())))
        .collect();
    if verb_at.is_empty() {
        return Verdict::NoVerb;
    }
    let name_at: Vec<(usize, usize)> = names
        .iter()
        .flat_map(|n| find_all(t, n).into_iter().map(move |p| (p, n.len())))
        .collect();
    // the name as a modifier: "做饭模式的按钮"
    if name_at
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
    for &(pos, len) in &verb_at {
        let v = if negated_before(&t[..pos]) {
            Verdict::Negated
        } else if question || reports_state(t, pos, len, &name_at) {
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

/// A negation before the verb, in its clause (A-not-A forms are not negations).
fn negated_before(before: &str) -> bool {
    let b = blank(before, A_NOT_A_REQUESTS);
    let b = blank(&b, A_NOT_A_QUESTIONS);
    contains_any(&b, NEGATIONS_ZH) || contains_any(&b, NEGATIONS_EN)
}

/// Is this clause a question rather than a (possibly polite) request?
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
    let polite = contains_any(t, A_NOT_A_REQUESTS)
        || contains_any(t, REQUESTS_ZH)
        || REQUESTS_EN.iter().any(|r| t.starts_with(r));
    !polite
}

/// "做饭模式结束了": the name before the verb and a perfective 了 after it report a state.
fn reports_state(t: &str, pos: usize, len: usize, names: &[(usize, usize)]) -> bool {
    let after = t[pos + len..].trim_start();
    names.iter().any(|&(p, _)| p < pos) && after.starts_with('了')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clauses_split_at_punctuation_and_english_conjunctions() {
        let c = clauses(&normalize(
            "打开做饭模式，红烧肉怎么做？ Open it and then stop",
        ));
        let texts: Vec<&str> = c.iter().map(|c| c.text.as_str()).collect();
        assert_eq!(texts, ["打开做饭模式", "红烧肉怎么做", "open it", "stop"]);
        assert!(c[1].asked && !c[0].asked);
    }

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
    fn ascii_words_need_boundaries() {
        assert!(find_all("happy weekend cooking mode", "end").is_empty());
        assert_eq!(find_all("end cooking mode", "end"), vec![0]);
        assert!(find_all("reopened", "open").is_empty());
    }
}

//! Where a clause ends, with or without punctuation, and the text cleaned before.
//!
//! [`clean`] takes out what carries nothing of a command: the assistant's name or a wake
//! word opening a clause ("homebot 打开…", "小助手，…") and fillers (嗯, 呃, 那个, 就是).
//! Speech-to-text often gives no punctuation ("打开做饭模式今晚吃什么"), so the text is
//! then cut in two steps:
//!
//! 1. **Punctuation.** At `，。！？；,.!?;:：、` and at English `and`, `but`, `then`, `so`;
//!    a clause remembers whether it ended in a question mark.
//! 2. **Segments** of a clause, where speech runs two clauses together:
//!    - after a run of sentence-final particles (了 吧 啦 呀 啊 哦 吗 呢) that more words
//!      follow — "我已经洗好菜了｜打开做饭模式", "退出做饭模式吧｜我吃完了" — unless the
//!      particle belongs to a word or to a reporting verb (了解, 为了, 说了, 忘了 …);
//!    - once both the name and the verb of the command have been said (or a phrase that
//!      is a whole command), where a new clause starts: a time (今晚, 现在, 晚点, 明天,
//!      十分钟后), a
//!      person (我, 你), a request of its own (教我, 帮我), a sequence word (然后, 再),
//!      thanks (谢谢), a not-yet word (先不) or a retraction (算了) — "打开做饭模式｜今晚
//!      吃什么", "先给我个计划｜再做", "关闭做饭模式｜等会儿";
//!    - there too, where a question about something else starts at its content noun:
//!      "打开做饭模式｜宫保鸡丁怎么做" — a continuation with a question word after its
//!      first character that neither opens with a word tying it to the command (会, 要,
//!      以后, 的, 了, 有 …) nor mentions the switch (模式, 按钮, 电费, 能, 会, 记录 …).
//!
//!    Anything else stays in the clause of the command and is judged with it, so "打开做饭
//!    模式会怎么样", "打开做饭模式按钮在哪" and "打开做饭模式的按钮在哪" stay questions:
//!    when in doubt, refuse.

pub use super::bound::{find_all, starts_clause};
use super::words::*;

/// What one command is made of: the names of its object, its verbs, and phrases that are
/// a whole command by themselves ("直接做" — name and verb in one). All normalized.
#[derive(Debug, Clone, Default)]
pub struct Lexicon {
    pub names: Vec<String>,
    pub verbs: Vec<String>,
    /// Count only where nothing but a tail (吧, 一下, 就行 …) follows them in their
    /// segment ("直接做吧", not "直接做红烧肉").
    pub phrases: Vec<String>,
    /// Verbs that count only right next to a name (single characters such as 开 and 关,
    /// see [`super::bound`]).
    pub bound: Vec<String>,
}

/// What a word found in a clause is to the command.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    Name,
    Verb,
    Phrase,
}

/// One word of the lexicon found in a text: its role and byte span.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Mark {
    pub role: Role,
    pub at: usize,
    pub len: usize,
}

impl Mark {
    pub fn end(&self) -> usize {
        self.at + self.len
    }
}

impl Lexicon {
    /// Every occurrence of the lexicon's words in `t`, in text order.
    pub fn marks(&self, t: &str) -> Vec<Mark> {
        let mut out = Vec::new();
        for (role, words) in [
            (Role::Name, &self.names),
            (Role::Verb, &self.verbs),
            (Role::Phrase, &self.phrases),
        ] {
            for w in words {
                out.extend(find_all(t, w).into_iter().map(|at| Mark {
                    role,
                    at,
                    len: w.len(),
                }));
            }
        }
        out.extend(self.bound.iter().flat_map(|w| {
            find_all(t, w)
                .into_iter()
                .filter(|&at| super::bound::next_to_name(t, at, w.len(), &self.names))
                .map(|at| Mark {
                    role: Role::Verb,
                    at,
                    len: w.len(),
                })
        }));
        out.sort_by_key(|m| (m.at, std::cmp::Reverse(m.len)));
        // a verb inside a longer one (开 of 打开) is that verb
        let verbs: Vec<Mark> = out
            .iter()
            .filter(|m| m.role == Role::Verb)
            .copied()
            .collect();
        out.retain(|m| {
            m.role != Role::Verb
                || !verbs
                    .iter()
                    .any(|v| v.len > m.len && v.at <= m.at && m.end() <= v.end())
        });
        out
    }

    /// Does `t` name the command's object (a name, or a phrase that holds it)?
    pub fn named_in(&self, t: &str) -> bool {
        self.names
            .iter()
            .chain(&self.phrases)
            .any(|n| !find_all(t, n).is_empty())
    }
}

/// One clause (or segment) of the user's text, normalized.
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

/// Normalized text without the ways of addressing homebot at the start of a clause
/// ("homebot 打开…", "小助手，…") and without spoken fillers (嗯, 那个, 就是): they
/// carry nothing of the command, and 就是说 would read as a report.
pub fn clean(text: &str) -> String {
    let mut t = text.to_string();
    for f in FILLERS {
        if f.is_ascii() {
            for at in find_all(&t, f).into_iter().rev() {
                t.replace_range(at..at + f.len(), " ");
            }
        } else {
            t = t.replace(f, "");
        }
    }
    let mut out = String::new();
    let mut rest = t.as_str();
    loop {
        let cut = rest.find(BOUNDARIES).map(|i| {
            let c = rest[i..].chars().next().expect("found at i");
            i + c.len_utf8()
        });
        let (piece, after) = match cut {
            Some(i) => rest.split_at(i),
            None => (rest, ""),
        };
        out.push_str(strip_address(piece));
        if after.is_empty() {
            break;
        }
        rest = after;
    }
    normalize(&out)
}

/// `piece` without the address words it opens with (repeatedly: "嘿 homebot").
fn strip_address(piece: &str) -> &str {
    let mut p = piece.trim_start();
    'strip: loop {
        for a in ADDRESS {
            if let Some(r) = p.strip_prefix(a) {
                let word_ends = !a.is_ascii()
                    || r.chars()
                        .next()
                        .is_none_or(|c| !(c.is_ascii_alphanumeric() || c == '\''));
                if word_ends {
                    p = r.trim_start();
                    continue 'strip;
                }
            }
        }
        return p;
    }
}

/// Cut normalized text into clauses at punctuation.
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

/// Cut normalized text into clauses, then each clause into segments (see the module
/// doc). Only the last segment of a clause keeps its question mark.
pub fn segments(text: &str, lex: &Lexicon) -> Vec<Clause> {
    let mut out = Vec::new();
    for c in clauses(text) {
        let mut parts = Vec::new();
        for piece in split_at(&c.text, &particle_cuts(&c.text)) {
            let mut rest = piece;
            while let Some(cut) = command_cut(rest, lex) {
                parts.push(&rest[..cut]);
                rest = &rest[cut..];
            }
            parts.push(rest);
        }
        let parts: Vec<&str> = parts
            .into_iter()
            .map(str::trim)
            .filter(|p| !p.is_empty())
            .collect();
        let n = parts.len();
        out.extend(parts.into_iter().enumerate().map(|(i, p)| Clause {
            text: p.to_string(),
            asked: c.asked && i + 1 == n,
        }));
    }
    out
}

fn split_at<'a>(t: &'a str, cuts: &[usize]) -> Vec<&'a str> {
    let mut out = Vec::new();
    let mut from = 0;
    for &c in cuts {
        out.push(&t[from..c]);
        from = c;
    }
    out.push(&t[from..]);
    out
}

/// Byte offsets just after each run of particles that more words follow.
fn particle_cuts(t: &str) -> Vec<usize> {
    let mut cuts = Vec::new();
    let mut run_start: Option<usize> = None;
    for (i, ch) in t.char_indices() {
        if PARTICLES.contains(&ch) {
            run_start.get_or_insert(i);
        } else if !ch.is_whitespace() {
            if let Some(start) = run_start.take() {
                if !in_word(t, start) {
                    cuts.push(i);
                }
            }
        }
    }
    cuts
}

/// Does a [`PARTICLE_WORDS`] entry cover byte `at` of `t`?
fn in_word(t: &str, at: usize) -> bool {
    PARTICLE_WORDS
        .iter()
        .any(|w| t.match_indices(w).any(|(s, _)| s <= at && at < s + w.len()))
}

/// Where, after the command's name and verb (or a phrase), a new clause starts.
fn command_cut(t: &str, lex: &Lexicon) -> Option<usize> {
    let (mut named, mut verbed) = (false, false);
    for m in lex.marks(t) {
        match m.role {
            Role::Name => named = true,
            Role::Verb => verbed = true,
            Role::Phrase => (named, verbed) = (true, true),
        }
        if named
            && verbed
            && m.end() < t.len()
            && (starts_clause(&t[m.end()..]) || content_question(&t[m.end()..]))
        {
            return Some(m.end());
        }
    }
    None
}

/// Is `rest`, after a whole command, a question about something else that starts at its
/// content noun ("打开做饭模式｜宫保鸡丁怎么做")? Not when it opens with a word that ties
/// it to the command ("…会怎么样", "…以后…", "…要多久") or mentions the switch
/// ("…按钮在哪", "…电费多少"): those stay with the command, a question about it.
fn content_question(rest: &str) -> bool {
    let r = rest.trim_start();
    let Some(first) = r.chars().next() else {
        return false;
    };
    if first.is_ascii() || BINDS_TO_COMMAND.iter().any(|w| r.starts_with(w)) {
        return false;
    }
    let asks = CONTENT_QUESTIONS
        .iter()
        .filter_map(|q| r.find(q))
        .min()
        .is_some_and(|at| at > 0);
    asks && !contains_any(r, ABOUT_THE_SWITCH)
}

pub fn contains_any(hay: &str, needles: &[&str]) -> bool {
    needles.iter().any(|n| !find_all(hay, n).is_empty())
}

/// `hay` with every occurrence of `forms` blanked out (same byte length kept, so offsets
/// stay valid).
pub fn blank<S: AsRef<str>>(hay: &str, forms: &[S]) -> String {
    let mut s = hay.to_string();
    for f in forms {
        let f = f.as_ref();
        if !f.is_empty() {
            s = s.replace(f, &"_".repeat(f.len()));
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cooking() -> Lexicon {
        Lexicon {
            names: vec!["做饭模式".into()],
            verbs: vec!["打开".into(), "退出".into(), "关闭".into()],
            phrases: vec![],
            bound: vec!["开".into(), "关".into()],
        }
    }

    fn texts(text: &str, lex: &Lexicon) -> Vec<String> {
        segments(&normalize(text), lex)
            .into_iter()
            .map(|c| c.text)
            .collect()
    }

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
    fn unpunctuated_speech_is_cut_at_particles_and_after_a_whole_command() {
        let l = cooking();
        assert_eq!(
            texts("我已经洗好菜了打开做饭模式", &l),
            ["我已经洗好菜了", "打开做饭模式"]
        );
        assert_eq!(
            texts("退出做饭模式吧我吃完了", &l),
            ["退出做饭模式吧", "我吃完了"]
        );
        assert_eq!(
            texts("打开做饭模式今晚吃什么", &l),
            ["打开做饭模式", "今晚吃什么"]
        );
        assert_eq!(
            texts("好了关闭做饭模式谢谢", &l),
            ["好了", "关闭做饭模式", "谢谢"]
        );
        // what binds stays: a question about the command, a state, a report
        assert_eq!(texts("打开做饭模式会怎样", &l), ["打开做饭模式会怎样"]);
        assert_eq!(texts("打开做饭模式了吗", &l), ["打开做饭模式了吗"]);
        assert_eq!(texts("他说了打开做饭模式", &l), ["他说了打开做饭模式"]);
        assert_eq!(texts("为了吃饭打开做饭模式", &l), ["为了吃饭打开做饭模式"]);
        // a person before the verb does not cut: nothing was commanded yet
        assert_eq!(texts("做饭模式我们打开吧", &l), ["做饭模式我们打开吧"]);
        // only the last segment keeps the question mark
        let s = segments(&normalize("打开做饭模式今晚吃什么？"), &l);
        assert!(!s[0].asked && s[1].asked);
    }

    #[test]
    fn ascii_words_need_boundaries() {
        assert!(find_all("happy weekend cooking mode", "end").is_empty());
        assert_eq!(find_all("end cooking mode", "end"), vec![0]);
        assert!(find_all("reopened", "open").is_empty());
    }
}

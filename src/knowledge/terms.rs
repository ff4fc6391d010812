//! The lexical terms a paragraph and a query are compared by: character bigrams for
//! Chinese, lower-cased words otherwise; and the conservative token count.

use std::collections::HashSet;

/// Query terms considered (a very long message is not a longer search).
pub(super) const MAX_QUERY_TERMS: usize = 64;

fn is_cjk(c: char) -> bool {
    matches!(c as u32, 0x3400..=0x4DBF | 0x4E00..=0x9FFF | 0xF900..=0xFAFF | 0x20000..=0x2FA1F)
}

/// The terms of a text: bigrams of each run of CJK characters (a lone character is a
/// term of its own), lower-cased alphanumeric words of two characters or more.
pub(super) fn terms_of(text: &str) -> HashSet<String> {
    let mut out = HashSet::new();
    let mut run: Vec<char> = Vec::new();
    let mut word = String::new();
    let flush_run = |run: &mut Vec<char>, out: &mut HashSet<String>| {
        if run.len() == 1 {
            out.insert(run[0].to_string());
        }
        for w in run.windows(2) {
            out.insert(w.iter().collect());
        }
        run.clear();
    };
    let flush_word = |word: &mut String, out: &mut HashSet<String>| {
        if word.chars().count() >= 2 {
            out.insert(std::mem::take(word));
        }
        word.clear();
    };
    for c in text.chars() {
        if is_cjk(c) {
            flush_word(&mut word, &mut out);
            run.push(c);
        } else if c.is_alphanumeric() {
            flush_run(&mut run, &mut out);
            word.extend(c.to_lowercase());
        } else {
            flush_run(&mut run, &mut out);
            flush_word(&mut word, &mut out);
        }
    }
    flush_run(&mut run, &mut out);
    flush_word(&mut word, &mut out);
    out
}

/// The query's terms in the order they first occur, at most [`MAX_QUERY_TERMS`] (a long
/// message keeps its opening words, whatever the code points of their characters).
pub(super) fn query_terms(query: &str) -> Vec<String> {
    let chars: Vec<char> = query.chars().collect();
    let mut out: Vec<String> = Vec::new();
    let mut seen: HashSet<String> = HashSet::new();
    let mut push = |t: String, out: &mut Vec<String>| {
        if seen.insert(t.clone()) {
            out.push(t);
        }
    };
    let mut word = String::new();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if is_cjk(c) {
            let run_end = (i..chars.len())
                .find(|&j| !is_cjk(chars[j]))
                .unwrap_or(chars.len());
            if run_end - i == 1 {
                push(c.to_string(), &mut out);
            }
            for w in chars[i..run_end].windows(2) {
                push(w.iter().collect(), &mut out);
            }
            i = run_end;
            continue;
        }
        if c.is_alphanumeric() {
            word.extend(c.to_lowercase());
        } else if !word.is_empty() {
            let w = std::mem::take(&mut word);
            if w.chars().count() >= 2 {
                push(w, &mut out);
            }
        }
        i += 1;
        if i < chars.len() && is_cjk(chars[i]) && !word.is_empty() {
            let w = std::mem::take(&mut word);
            if w.chars().count() >= 2 {
                push(w, &mut out);
            }
        }
    }
    if word.chars().count() >= 2 {
        push(word, &mut out);
    }
    out.truncate(MAX_QUERY_TERMS);
    out
}

/// An upper bound of the tokens of `s` for any tokenizer in use: a CJK character is one
/// token, other text one per four characters.
pub fn conservative_tokens(s: &str) -> usize {
    let (cjk, other) = s.chars().fold((0usize, 0usize), |(c, o), ch| {
        if is_cjk(ch) {
            (c + 1, o)
        } else {
            (c, o + 1)
        }
    });
    cjk + other.div_ceil(4)
}

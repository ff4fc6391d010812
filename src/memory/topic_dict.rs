//! The topic dictionary (`assets/topic_dict.txt`, see [`super::topic`]) read where it lies in the
//! binary, and segmenters that hold only the words of the texts they cut.
//!
//! Building jieba's trie from all 87,023 entries cost a one-shot `homebot chat -m TEXT`
//! most of its own time (the first turn of every process pays it). jieba's choice of
//! words in a text depends only on the dictionary words that occur in it (their
//! frequencies) and on the dictionary's total frequency: so a [`Jieba`] holding just the
//! entries found in the text, plus one entry that cannot occur in it carrying the rest of
//! the total, segments that text exactly as the whole dictionary does (a test below
//! compares the two). The file is sorted by bytes, so an entry is found by binary search.
//!
//! Turns do not build a segmenter each, though: jieba's trie starts with a table of
//! 65,536 root entries (512 KiB, written whole), and one per turn, freed again, kept half
//! a megabyte of a runtime worker's heap busy and made the heap grow with the turns (a
//! block that large needs a free stretch that large, which long-lived small allocations
//! keep breaking up; see docs/operations.md#soak). [`cut`] uses one segmenter the
//! process shares ([`Shared`]): it learns the dictionary words of each text it cuts,
//! keeps the total on a word no text contains, and starts over at [`MAX_SHARED_WORDS`].
//! The words it holds that occur in a text are exactly the ones a segmenter built for
//! that text alone would hold, so the cut is the same.

use jieba_rs::{Jieba, Token};
use std::collections::HashSet;
use std::sync::Mutex;

/// `word frequency` per line, sorted by the word's bytes, no word twice, words of one to
/// [`MAX_WORD_CHARS`] characters (tested below).
pub const DICTIONARY: &str = include_str!("../../assets/topic_dict.txt");
/// The sum of the dictionary's frequencies (tested below).
const TOTAL: usize = 55_145_287;
/// The longest word in the dictionary, in characters.
const MAX_WORD_CHARS: usize = 4;

/// The frequency of `word`, if the dictionary has it.
fn frequency(word: &str) -> Option<usize> {
    let b = DICTIONARY.as_bytes();
    // every line starting in lo..hi is still a candidate; lo is always a line start
    let (mut lo, mut hi) = (0, b.len());
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        let start = b[lo..mid]
            .iter()
            .rposition(|&c| c == b'\n')
            .map_or(lo, |p| lo + p + 1);
        let end = b[start..]
            .iter()
            .position(|&c| c == b'\n')
            .map_or(b.len(), |p| start + p);
        let (w, f) = DICTIONARY[start..end].split_once(' ')?;
        match w.as_bytes().cmp(word.as_bytes()) {
            std::cmp::Ordering::Equal => return f.parse().ok(),
            std::cmp::Ordering::Less => lo = end + 1,
            std::cmp::Ordering::Greater => hi = start,
        }
    }
    None
}

/// Most dictionary words the shared segmenter holds (a household's everyday vocabulary
/// with room to spare; with jieba's tables ~0.75 MiB at most); past it, it starts over.
pub const MAX_SHARED_WORDS: usize = 4096;
/// The word that carries the rest of the dictionary's total in the shared segmenter: a
/// private-use character (a text that contains it is cut by a segmenter of its own).
const FILLER: char = '\u{F8FF}';

static SHARED: Mutex<Option<Shared>> = Mutex::new(None);

/// `text` cut into words as the whole dictionary would cut it (jieba, with its HMM), by
/// the segmenter the process shares (built on the first call).
pub fn cut(text: &str) -> Vec<Token<'_>> {
    // every change to it is complete under the lock: a panic elsewhere leaves it whole
    let mut shared = SHARED.lock().unwrap_or_else(|p| p.into_inner());
    shared
        .get_or_insert_with(|| Shared::new(MAX_SHARED_WORDS))
        .cut(text)
}

/// A segmenter that learns the dictionary words of the texts it cuts, up to a bound.
pub struct Shared {
    jieba: Jieba,
    /// Dictionary words held, and the sum of their frequencies.
    words: usize,
    found: usize,
    max_words: usize,
}

impl Shared {
    pub fn new(max_words: usize) -> Self {
        Self {
            jieba: Jieba::empty(),
            words: 0,
            found: 0,
            max_words,
        }
    }

    /// Dictionary words held.
    pub fn words(&self) -> usize {
        self.words
    }

    /// `text` cut as the whole dictionary would cut it.
    pub fn cut<'a>(&mut self, text: &'a str) -> Vec<Token<'a>> {
        let pieces = pieces(text);
        // a text that could bring more than half the bound, or holds the filler, is cut
        // by a segmenter of its own (a long message, rarely)
        if text.contains(FILLER) || pieces.len() > self.max_words / 2 {
            return segmenter_for(text).cut(text, true);
        }
        if self.words + pieces.len() > self.max_words {
            *self = Self::new(self.max_words);
        }
        let mut added = false;
        for w in pieces {
            if self.jieba.has_word(w) {
                continue;
            }
            if let Some(f) = frequency(w) {
                self.jieba.add_word(w, Some(f), None);
                self.words += 1;
                self.found += f;
                added = true;
            }
        }
        if added {
            // the total stays the whole dictionary's (adding a word that is there
            // replaces its frequency, and the total with it)
            self.jieba
                .add_word(&FILLER.to_string(), Some(TOTAL - self.found), None);
        }
        self.jieba.cut(text, true)
    }
}

/// Every distinct piece of `text` of one to [`MAX_WORD_CHARS`] characters (the ones the
/// dictionary may hold), in order of first appearance.
fn pieces(text: &str) -> Vec<&str> {
    let mut bounds: Vec<usize> = text.char_indices().map(|(i, _)| i).collect();
    bounds.push(text.len());
    let mut seen = HashSet::new();
    let mut out = Vec::new();
    for i in 0..bounds.len() - 1 {
        for j in i + 1..=(i + MAX_WORD_CHARS).min(bounds.len() - 1) {
            let w = &text[bounds[i]..bounds[j]];
            if seen.insert(w) {
                out.push(w);
            }
        }
    }
    out
}

/// A segmenter that cuts `text` (and any text inside it) as the whole dictionary would.
pub fn segmenter_for(text: &str) -> Jieba {
    let mut jieba = Jieba::empty();
    let mut found = 0;
    for w in pieces(text) {
        if let Some(f) = frequency(w) {
            jieba.add_word(w, Some(f), None);
            found += f;
        }
    }
    // the rest of the total, on a word the text does not contain (so it is never cut)
    let absent = ('\u{E000}'..='\u{F8FF}')
        .find(|c| !text.contains(*c))
        .expect("a text of at most a few thousand characters leaves a private-use character free");
    jieba.add_word(&absent.to_string(), Some(TOTAL - found), None);
    jieba
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_file_is_as_the_lookup_assumes() {
        let mut total = 0;
        let mut last = "";
        for line in DICTIONARY.lines() {
            let (w, f) = line.split_once(' ').expect("`word frequency`");
            assert!(w.as_bytes() > last.as_bytes(), "sorted, no repeats: {w}");
            assert!((1..=MAX_WORD_CHARS).contains(&w.chars().count()), "{w}");
            total += f.parse::<usize>().expect("a number");
            assert_eq!(frequency(w), f.parse().ok(), "{w}");
            last = w;
        }
        assert_eq!(total, TOTAL);
        assert_eq!(frequency("不在词典里的词"), None);
        assert_eq!(frequency(""), None);
    }

    /// The same words as the whole dictionary's segmenter, so the same topic features
    /// and the same memories recalled.
    #[test]
    fn cuts_as_the_whole_dictionary_does() {
        let whole = Jieba::with_dict(&mut DICTIONARY.as_bytes()).unwrap();
        let texts = [
            "我们今天晚饭做番茄炒蛋，你觉得怎么样？",
            "今晚晚饭做番茄炒蛋和紫菜蛋花汤",
            "冰箱里还有两个土豆和半颗白菜",
            "明天早上七点提醒我给孩子带午饭",
            "奶奶的降压药每天早上吃一片",
            "空调遥控器没电了，电池是几号的？",
            "下周三下午三点孩子开家长会",
            "今晚做饭用 air fryer 烤鸡翅",
            "Remind me to pick up the kids at five.",
            "生日蛋糕要提前一天订，记得写上祝福语：生日快乐！",
            "红烧肉少放盐，多放点糖色，小火炖一个半小时",
            "\u{E000}番茄\u{E001}炒蛋 123 abc",
            "",
        ];
        let mut shared = Shared::new(MAX_SHARED_WORDS);
        for t in texts.iter().chain(texts.iter().rev()).chain(&[FILLER_TEXT]) {
            let a: Vec<&str> = whole.cut(t, true).into_iter().map(|x| x.word).collect();
            let b: Vec<String> = segmenter_for(t)
                .cut(t, true)
                .into_iter()
                .map(|x| x.word.to_string())
                .collect();
            assert_eq!(a, b, "{t}");
            let c: Vec<&str> = shared.cut(t).into_iter().map(|x| x.word).collect();
            assert_eq!(a, c, "shared: {t}");
        }
        // every dictionary line in sequence, as one text
        let long: String = DICTIONARY
            .lines()
            .step_by(97)
            .map(|l| l.split(' ').next().unwrap())
            .collect();
        let long: String = long.chars().take(2000).collect();
        let a: Vec<&str> = whole.cut(&long, true).into_iter().map(|x| x.word).collect();
        let b: Vec<String> = segmenter_for(&long)
            .cut(&long, true)
            .into_iter()
            .map(|x| x.word.to_string())
            .collect();
        assert_eq!(a, b);
        let c: Vec<&str> = shared.cut(&long).into_iter().map(|x| x.word).collect();
        assert_eq!(a, c, "shared");
    }

    /// A text with the shared segmenter's filler word in it.
    const FILLER_TEXT: &str = "番茄\u{F8FF}炒蛋";

    /// However many texts it cuts, the shared segmenter holds at most its bound, and
    /// after starting over it still cuts as the whole dictionary does.
    #[test]
    fn the_shared_segmenter_is_bounded() {
        let whole = Jieba::with_dict(&mut DICTIONARY.as_bytes()).unwrap();
        let mut shared = Shared::new(256);
        // texts of eight dictionary words each: thousands of words in all
        let words: Vec<&str> = DICTIONARY
            .lines()
            .step_by(29)
            .map(|l| l.split(' ').next().unwrap())
            .collect();
        let mut most = 0;
        for chunk in words.chunks(8).take(400) {
            let t = chunk.concat();
            let a: Vec<&str> = whole.cut(&t, true).into_iter().map(|x| x.word).collect();
            let b: Vec<&str> = shared.cut(&t).into_iter().map(|x| x.word).collect();
            assert_eq!(a, b, "{t}");
            most = most.max(shared.words());
        }
        assert!(most <= 256, "it held {most} words");
        assert!(
            most > 128,
            "the texts brought too few words to test the bound"
        );
    }
}

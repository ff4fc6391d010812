//! Token counting.
//!
//! The tokenizer is OpenAI's `o200k_base` BPE through the `tiktoken-rs` crate: its
//! vocabulary ships inside the crate (no download, works offline) and it is a reasonable
//! public stand-in for the tokenizers homebot meets — DeepSeek's own and the Qwen / Llama
//! families of a local llama.cpp — without being any of them. Its error against
//! provider-reported usage has not been measured on a live endpoint; on the cooking
//! skill's prompt it counts 1432 tokens where the conservative count gives 1567. Two
//! things keep the window safe whatever the error is:
//!
//! - every count used against the window is `max(calibrated tokenizer, conservative)`,
//!   where the conservative count is one token per CJK character and one per four other
//!   characters — an overestimate for every tokenizer above on Chinese, and the rule other
//!   tools check homebot's requests by;
//! - [`Calibration`] keeps a running ratio of what the provider reported
//!   (`usage.prompt_tokens`) to what was counted for the same request, and scales the
//!   tokenizer's counts by it (clamped to 0.5–2).

use std::sync::atomic::{AtomicU32, Ordering};

/// Tokens the chat template adds around each message (role markers, separators).
pub const PER_MESSAGE: u32 = 4;

/// The tokenizer's count of `text` (o200k_base).
pub fn tokenizer_count(text: &str) -> u32 {
    if text.is_empty() {
        return 0;
    }
    let n = tiktoken_rs::o200k_base_singleton()
        .encode_ordinary(text)
        .len();
    u32::try_from(n).unwrap_or(u32::MAX)
}

/// Whether `c` counts as one token on its own in the conservative count: CJK
/// ideographs, kana, hangul and the full-width punctuation between them.
fn is_cjk(c: char) -> bool {
    matches!(c as u32,
        0x2E80..=0x9FFF      // radicals, CJK symbols & punctuation, kana, CJK unified
        | 0xA960..=0xA97F    // hangul jamo extended
        | 0xAC00..=0xD7FF    // hangul syllables
        | 0xF900..=0xFAFF    // CJK compatibility ideographs
        | 0xFE30..=0xFE4F    // CJK compatibility forms
        | 0xFF00..=0xFFEF    // half- and full-width forms
        | 0x20000..=0x3FFFF) // CJK extensions
}

/// The conservative count: each CJK character one token, other text one per four
/// characters (rounded up).
pub fn conservative_count(text: &str) -> u32 {
    let (mut cjk, mut other) = (0u64, 0u64);
    for c in text.chars() {
        if is_cjk(c) {
            cjk += 1;
        } else {
            other += 1;
        }
    }
    u32::try_from(cjk + other.div_ceil(4)).unwrap_or(u32::MAX)
}

/// Running ratio of provider-reported prompt tokens to counted ones, in thousandths.
#[derive(Debug)]
pub struct Calibration {
    permille: AtomicU32,
}

impl Default for Calibration {
    fn default() -> Self {
        Self {
            permille: AtomicU32::new(1000),
        }
    }
}

impl Calibration {
    /// The ratio in use (1.0 until a provider reported usage).
    pub fn ratio(&self) -> f64 {
        f64::from(self.permille.load(Ordering::Relaxed)) / 1000.0
    }

    /// Learn from one request: the tokenizer counted `counted`, the provider reported
    /// `reported`. An exponential average (weight 1/4 for the newest) of the ratio,
    /// clamped to 0.5–2 so one odd report (a server that fakes usage) cannot swing it.
    pub fn observe(&self, counted: u64, reported: u64) {
        if counted < 16 || reported == 0 {
            return;
        }
        let now = (reported as f64 / counted as f64).clamp(0.5, 2.0);
        let old = self.ratio();
        let next = (old * 0.75 + now * 0.25).clamp(0.5, 2.0);
        self.permille
            .store((next * 1000.0).round() as u32, Ordering::Relaxed);
    }

    /// The count to budget with: the calibrated tokenizer count or the conservative
    /// count, whichever is larger.
    pub fn count(&self, text: &str) -> u32 {
        self.combine(tokenizer_count(text), conservative_count(text))
    }

    /// [`Calibration::count`] from the two raw counts.
    pub fn combine(&self, tokenizer: u32, conservative: u32) -> u32 {
        let scaled = (f64::from(tokenizer) * self.ratio()).ceil() as u32;
        scaled.max(conservative)
    }
}

/// Both raw counts of one text (cached per record by the history).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Counts {
    pub tokenizer: u32,
    pub conservative: u32,
}

impl Counts {
    pub fn of(text: &str) -> Self {
        Self {
            tokenizer: tokenizer_count(text),
            conservative: conservative_count(text),
        }
    }
    pub fn plus(self, o: Counts) -> Counts {
        Counts {
            tokenizer: self.tokenizer.saturating_add(o.tokenizer),
            conservative: self.conservative.saturating_add(o.conservative),
        }
    }
    /// One message: its text plus the template's overhead.
    pub fn message(text: &str) -> Self {
        Self::of(text).plus(Counts {
            tokenizer: PER_MESSAGE,
            conservative: PER_MESSAGE,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn conservative_counts_cjk_per_character_and_the_rest_per_four() {
        assert_eq!(conservative_count(""), 0);
        assert_eq!(conservative_count("番茄炒蛋"), 4);
        assert_eq!(conservative_count("abcd"), 1);
        assert_eq!(conservative_count("abcde"), 2);
        assert_eq!(conservative_count("两个 eggs，"), 2 + 1 + 2); // "，" is full-width
    }

    #[test]
    fn the_tokenizer_is_real_and_offline() {
        assert_eq!(tokenizer_count(""), 0);
        let n = tokenizer_count("hello world");
        assert_eq!(n, 2);
        let zh = tokenizer_count("今晚三个人吃番茄炒蛋，鸡蛋要几个？");
        assert!((5..=20).contains(&zh), "{zh}");
    }

    #[test]
    fn on_the_cooking_prompt_the_conservative_count_is_the_larger() {
        let text = include_str!("../../skills/home-cooking/SKILL.md");
        let (t, k) = (tokenizer_count(text), conservative_count(text));
        eprintln!("cooking SKILL.md: o200k {t}, conservative {k}");
        assert!(k >= t, "o200k {t} > conservative {k}");
    }

    #[test]
    fn calibration_follows_reports_within_bounds() {
        let c = Calibration::default();
        assert_eq!(c.ratio(), 1.0);
        c.observe(1000, 1200);
        assert!((c.ratio() - 1.05).abs() < 0.001, "{}", c.ratio());
        for _ in 0..50 {
            c.observe(1000, 1200);
        }
        assert!((c.ratio() - 1.2).abs() < 0.01, "{}", c.ratio());
        // an absurd report moves it at most to the clamp
        for _ in 0..50 {
            c.observe(1000, 1);
        }
        assert!(c.ratio() >= 0.5 && c.ratio() < 0.51, "{}", c.ratio());
        // … and the conservative count still holds the floor
        assert_eq!(c.count("番茄炒蛋番茄炒蛋"), 8);
        let before = c.ratio();
        c.observe(0, 10); // nothing counted: ignored
        assert_eq!(c.ratio(), before);
    }
}

//! A peer-controlled id as a file name (`file_safe`): safe characters kept, bounded, distinct
//! ids kept distinct.

/// Longest file-name stem made from an id; longer ids keep a prefix and a hash.
pub(super) const MAX_NAME: usize = 96;

/// An id as a file name: safe characters kept; if anything had to change (or the id is
/// long), a hash of the original keeps distinct ids distinct and the name bounded.
pub fn file_safe(s: &str) -> String {
    let cleaned: String = s
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.') {
                c
            } else {
                '_'
            }
        })
        .collect();
    if cleaned == s && !s.starts_with('.') && !s.is_empty() && s.len() <= MAX_NAME {
        return cleaned;
    }
    let mut h: u64 = 0xcbf29ce484222325;
    for b in s.bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x100000001b3);
    }
    let stem: String = cleaned
        .trim_start_matches('.')
        .chars()
        .take(MAX_NAME - 17)
        .collect();
    format!("{stem}-{h:016x}")
}

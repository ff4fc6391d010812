//! Scene keys: hierarchical, normalized, matched at `/` boundaries only.
//!
//! A key is segments `kind:value` joined by `/`, most general first:
//! `chan:qq/peer:group_1027`. Every key that enters — derived from a turn, given by a
//! channel, by a single injection or by the model in `memory_commit` — goes through
//! [`SceneKey::parse`], so two spellings of one place cannot become twin scenes:
//! case is folded, full-width forms become ASCII, whitespace and punctuation inside a
//! value become one `_`, empty segments vanish. `_`, `-` and `.` are part of a value
//! (`group_1027` and `group1027` are different groups).
//!
//! Weak features (`part`, `topic`, `tool`) never name a scene: a key holding one is
//! refused, so a time of day or a word cannot split or merge places.

use std::fmt;

/// Longest key, in characters, after normalization.
pub const MAX_KEY_CHARS: usize = 200;
/// Deepest key, in segments.
pub const MAX_KEY_DEPTH: usize = 6;
/// Longest kind or value of one segment, in characters.
pub const MAX_SEGMENT_CHARS: usize = 64;
/// Kinds that are features of a turn but never part of a key.
pub const WEAK_KINDS: &[&str] = &["part", "topic", "tool"];
/// The kind of a room's key, `room:厨房`: a place, whichever channel heard the words there.
pub const ROOM_KIND: &str = "room";
/// The longest room name a key holds as it is (after normalization); a longer one is
/// held as a stable stand-in ([`stand_in`]), never cut into another room's name.
pub const MAX_ROOM_CHARS: usize = 40;

/// A stable stand-in for an id no key can hold (too long): FNV-1a, 64 bits. Stable across
/// builds (keys are stored), unlike `std`'s hasher.
pub fn stand_in(id: &str) -> String {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in id.bytes() {
        h ^= b as u64;
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    format!("id_{h:016x}")
}

/// A normalized scene key.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct SceneKey(String);

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum KeyError {
    #[error("the scene key is empty")]
    Empty,
    #[error("the scene key is longer than {MAX_KEY_CHARS} characters")]
    TooLong,
    #[error("the scene key has more than {MAX_KEY_DEPTH} levels")]
    TooDeep,
    #[error("scene key segment {0:?} is not kind:value (e.g. chan:qq/peer:group_1027)")]
    Segment(String),
    #[error("scene key segment {0:?}: `{1}` is a weak feature and never names a scene")]
    WeakKind(String, String),
}

/// Full-width ASCII forms (：／ＱＱ) as their ASCII twins; everything else as is.
fn half_width(c: char) -> char {
    match c as u32 {
        0xFF01..=0xFF5E => char::from_u32(c as u32 - 0xFEE0).unwrap_or(c),
        0x3000 => ' ',
        _ => c,
    }
}

/// One kind or value: lowercase; letters, digits, `_`, `-`, `.` kept; every run of
/// anything else becomes one `_`; no `_` at the ends.
fn clean(part: &str) -> String {
    let mut out = String::new();
    let mut gap = false;
    for c in part.chars().flat_map(char::to_lowercase) {
        if c.is_alphanumeric() || c == '-' || c == '.' {
            if gap && !out.is_empty() {
                out.push('_');
            }
            gap = false;
            out.push(c);
        } else if c == '_' {
            // an underscore is part of the value, but a run of them is one
            gap = true;
        } else {
            gap = true;
        }
    }
    out
}

impl SceneKey {
    /// Normalize and check a key from anywhere (see the module doc).
    pub fn parse(raw: &str) -> Result<Self, KeyError> {
        if raw.chars().count() > MAX_KEY_CHARS * 4 {
            return Err(KeyError::TooLong);
        }
        let wide: String = raw.chars().map(half_width).collect();
        let mut segs = Vec::new();
        for seg in wide.split('/') {
            let seg = seg.trim();
            if seg.is_empty() {
                continue;
            }
            let Some((kind, value)) = seg.split_once(':') else {
                return Err(KeyError::Segment(seg.to_string()));
            };
            let (kind, value) = (clean(kind), clean(value));
            if kind.is_empty()
                || value.is_empty()
                || !kind.starts_with(|c: char| c.is_ascii_lowercase())
                || !kind.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
                || kind.chars().count() > MAX_SEGMENT_CHARS
                || value.chars().count() > MAX_SEGMENT_CHARS
            {
                return Err(KeyError::Segment(seg.chars().take(80).collect()));
            }
            if WEAK_KINDS.contains(&kind.as_str()) {
                return Err(KeyError::WeakKind(seg.chars().take(80).collect(), kind));
            }
            segs.push(format!("{kind}:{value}"));
        }
        if segs.is_empty() {
            return Err(KeyError::Empty);
        }
        if segs.len() > MAX_KEY_DEPTH {
            return Err(KeyError::TooDeep);
        }
        let key = segs.join("/");
        if key.chars().count() > MAX_KEY_CHARS {
            return Err(KeyError::TooLong);
        }
        Ok(Self(key))
    }

    /// The key of the room named `name` (a Home Assistant area's name): `room:<name>`,
    /// normalized like every key (`厨房`, ` 厨房 ` and `厨房!` are one room); a name longer
    /// than [`MAX_ROOM_CHARS`] once normalized is held as a stable stand-in. `None` for a
    /// name with nothing a key can hold (blank, punctuation only).
    pub fn room(name: &str) -> Option<SceneKey> {
        let wide: String = name.chars().map(half_width).collect();
        let value = clean(&wide);
        if value.is_empty() {
            return None;
        }
        let value = if value.chars().count() > MAX_ROOM_CHARS {
            stand_in(&value)
        } else {
            value
        };
        Self::parse(&format!("{ROOM_KIND}:{value}")).ok()
    }

    /// A key from identity features already clean (`chan:qq`, `peer:group_1027`).
    pub fn from_segments(segs: &[String]) -> Result<Self, KeyError> {
        Self::parse(&segs.join("/"))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The segments, `kind:value` each: the scene's identity features.
    pub fn segments(&self) -> impl Iterator<Item = &str> {
        self.0.split('/')
    }

    /// Whether this key is `other` or one of its ancestors: `chan:qq` covers
    /// `chan:qq/peer:x`, never `chan:qq2`.
    pub fn covers(&self, other: &SceneKey) -> bool {
        other.0 == self.0
            || (other.0.len() > self.0.len()
                && other.0.starts_with(&self.0)
                && other.0.as_bytes()[self.0.len()] == b'/')
    }

    /// This key and its ancestors, most general first.
    pub fn lineage(&self) -> Vec<SceneKey> {
        let segs: Vec<&str> = self.segments().collect();
        (1..=segs.len())
            .map(|n| SceneKey(segs[..n].join("/")))
            .collect()
    }
}

impl fmt::Display for SceneKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn k(s: &str) -> SceneKey {
        SceneKey::parse(s).unwrap()
    }

    #[test]
    fn spellings_of_one_place_normalize_to_one_key() {
        for raw in [
            "chan:qq/peer:group_1027",
            "Chan:QQ/Peer:Group_1027",
            "  chan : qq / peer: group_1027 /",
            "chan：ＱＱ／peer:group__1027",
            "chan:qq//peer:group 1027",
            "chan:qq/peer:group,1027",
        ] {
            assert_eq!(k(raw).as_str(), "chan:qq/peer:group_1027", "{raw:?}");
        }
        // underscores, dashes and dots are part of a value; their absence is another key
        assert_ne!(k("peer:group_1027"), k("peer:group1027"));
        assert_ne!(k("peer:a-b"), k("peer:a_b"));
        assert_eq!(k("peer:妈妈 的 手机").as_str(), "peer:妈妈_的_手机");
    }

    #[test]
    fn bad_keys_are_refused_with_a_reason() {
        assert_eq!(SceneKey::parse(" / "), Err(KeyError::Empty));
        assert!(matches!(SceneKey::parse("qq"), Err(KeyError::Segment(_))));
        assert!(matches!(
            SceneKey::parse("chan:"),
            Err(KeyError::Segment(_))
        ));
        assert!(matches!(
            SceneKey::parse("chan:qq/part:evening"),
            Err(KeyError::WeakKind(_, k)) if k == "part"
        ));
        assert!(matches!(
            SceneKey::parse("chan:qq/Topic:番茄"),
            Err(KeyError::WeakKind(..))
        ));
        let deep = (0..7)
            .map(|i| format!("a:{i}"))
            .collect::<Vec<_>>()
            .join("/");
        assert_eq!(SceneKey::parse(&deep), Err(KeyError::TooDeep));
        let long = format!("chan:{}/peer:{}", "x".repeat(60), "y".repeat(60));
        SceneKey::parse(&long).unwrap();
        assert!(matches!(
            SceneKey::parse(&format!("chan:{}", "x".repeat(65))),
            Err(KeyError::Segment(_))
        ));
        assert_eq!(
            SceneKey::parse(&"a:b/".repeat(10_000)),
            Err(KeyError::TooLong)
        );
        let four = (0..4)
            .map(|i| format!("k{i}:{}", "v".repeat(60)))
            .collect::<Vec<_>>()
            .join("/");
        assert_eq!(SceneKey::parse(&four), Err(KeyError::TooLong));
    }

    #[test]
    fn a_rooms_key_is_its_normalized_name_bounded() {
        assert_eq!(SceneKey::room("厨房").unwrap().as_str(), "room:厨房");
        assert_eq!(
            SceneKey::room(" 厨房！").unwrap(),
            SceneKey::room("厨房").unwrap()
        );
        assert_eq!(
            SceneKey::room("Living Room").unwrap().as_str(),
            "room:living_room"
        );
        // a slash in a name never makes a second level
        assert_eq!(
            SceneKey::room("客厅/餐厅").unwrap().as_str(),
            "room:客厅_餐厅"
        );
        assert_eq!(SceneKey::room(" !? "), None);
        let long = "房".repeat(MAX_ROOM_CHARS + 1);
        let k = SceneKey::room(&long).unwrap();
        assert!(k.as_str().starts_with("room:id_"), "{k}");
        assert_ne!(k, SceneKey::room(&"房".repeat(MAX_ROOM_CHARS + 2)).unwrap());
        assert_eq!(
            SceneKey::room(&"房".repeat(MAX_ROOM_CHARS))
                .unwrap()
                .as_str(),
            format!("room:{}", "房".repeat(MAX_ROOM_CHARS))
        );
    }

    #[test]
    fn prefixes_match_at_slash_boundaries_only() {
        let qq = k("chan:qq");
        assert!(qq.covers(&k("chan:qq")));
        assert!(qq.covers(&k("chan:qq/peer:x")));
        assert!(qq.covers(&k("CHAN:QQ/peer:group_1027")));
        assert!(!qq.covers(&k("chan:qq2")));
        assert!(!qq.covers(&k("chan:qq2/peer:x")));
        assert!(!k("chan:qq/peer:x").covers(&qq));
        // keys holding `_`: the underscore is never a boundary
        let g1 = k("chan:qq/peer:group_1");
        assert!(!g1.covers(&k("chan:qq/peer:group_10")));
        assert!(!g1.covers(&k("chan:qq/peer:group_1_2")));
        assert!(g1.covers(&k("chan:qq/peer:group_1/place:kitchen")));
        assert!(!k("chan:qq/peer:group").covers(&g1));
        assert_eq!(
            k("chan:qq/peer:g_1").lineage(),
            vec![k("chan:qq"), k("chan:qq/peer:g_1")]
        );
    }
}

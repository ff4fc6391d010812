//! Request bodies written straight to bytes, reusing what the previous requests already
//! encoded.
//!
//! A mode session's request is the previous one plus a few new messages, and encoding it
//! afresh (a `serde_json::Value` tree per message, then the serializer escaping 200 KB of
//! text) made a turn's cost grow with the history. Here each wire message is written once
//! by typed `Serialize` structs into a byte fragment kept in a [`FragmentCache`], keyed by
//! a 128-bit digest (XXH3 per field) of what it is made of (the neutral messages, the dialect and any
//! position-dependent flag such as a cache breakpoint or replayed reasoning). A request
//! then costs: one hash pass over its messages (XXH3 runs at memory speed, ~20× faster
//! than escaping JSON), a map look-up per message, and one copy of the cached bytes into
//! the body; only the new messages are encoded. The key is content, not a chat id, so
//! sessions and chats share the cache without coordination and a changed message can
//! never be served stale bytes. The cache is bounded in bytes; the least recently used
//! fragments go first.
//!
//! Tools (the same list on every request) are encoded once and reused while equal.

use super::types::{Message, ThinkingBlock, ToolDef};
use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};
use xxhash_rust::xxh3::xxh3_128_with_seed;

/// The keys are digests already: the map uses their bits as they are.
#[derive(Default)]
pub struct DigestHasher(u64);

impl Hasher for DigestHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for b in bytes {
            self.0 = self.0.rotate_left(8) ^ *b as u64;
        }
    }
    fn write_u128(&mut self, i: u128) {
        self.0 = i as u64 ^ (i >> 64) as u64;
    }
}

/// Memory a model's fragment cache may take by default (fragments and their per-entry
/// cost, [`ENTRY_OVERHEAD`]): a household's working set — a mode session at its
/// compaction threshold (~200 KB of history in a 64k-token window, ~250 KB with its
/// entries) and the recent turns of a few dozen chats — with room to spare. (It was
/// 16 MiB, then 4 MiB of fragment bytes alone, which with the short messages of a chat
/// — 20–40 bytes each — took ~5 MB: the soak showed it filling for the first ~50,000
/// turns, most of the gateway's growth after start.)
pub const DEFAULT_CACHE_BYTES: usize = 2 * 1024 * 1024;

/// What an entry costs besides its fragment's bytes: its slot in the map (key, pointer,
/// length, age: 40 bytes, at a load that may be half) and the allocator's header.
pub const ENTRY_OVERHEAD: usize = 96;

pub struct FragmentCache {
    map: HashMap<u128, Entry, BuildHasherDefault<DigestHasher>>,
    bytes: usize,
    cap: usize,
    tick: u64,
    hits: u64,
    misses: u64,
    /// The size of the last body built with this cache (a capacity hint).
    pub last_body: usize,
}

struct Entry {
    frag: Box<[u8]>,
    used: u64,
}

impl FragmentCache {
    pub fn new(cap: usize) -> Self {
        Self {
            map: HashMap::default(),
            bytes: 0,
            cap,
            tick: 0,
            hits: 0,
            misses: 0,
            last_body: 0,
        }
    }

    /// Append the fragment for `key` to `out`, encoding it with `encode` on a miss.
    pub fn emit(&mut self, key: u128, out: &mut Vec<u8>, encode: impl FnOnce(&mut Vec<u8>)) {
        self.tick += 1;
        if let Some(e) = self.map.get_mut(&key) {
            e.used = self.tick;
            self.hits += 1;
            out.extend_from_slice(&e.frag);
            return;
        }
        self.misses += 1;
        let mut frag = Vec::new();
        encode(&mut frag);
        out.extend_from_slice(&frag);
        if frag.len() > self.cap / 4 {
            return; // one huge message would flush everything else
        }
        self.bytes += frag.len() + ENTRY_OVERHEAD;
        self.map.insert(
            key,
            Entry {
                frag: frag.into_boxed_slice(),
                used: self.tick,
            },
        );
        if self.bytes > self.cap {
            self.evict();
        }
    }

    /// Drop the least recently used fragments down to three quarters of the cap.
    fn evict(&mut self) {
        let mut by_age: Vec<(u64, u128)> = self.map.iter().map(|(k, e)| (e.used, *k)).collect();
        by_age.sort_unstable();
        for (_, k) in by_age {
            if self.bytes <= self.cap / 4 * 3 {
                break;
            }
            if let Some(e) = self.map.remove(&k) {
                self.bytes -= e.frag.len() + ENTRY_OVERHEAD;
            }
        }
    }

    /// (hits, misses) since start, for tests and the benchmark.
    pub fn counts(&self) -> (u64, u64) {
        (self.hits, self.misses)
    }

    /// Memory held: the fragments and their entries.
    pub fn bytes(&self) -> usize {
        self.bytes
    }
}

/// A digest builder for fragment keys: each field hashed on its own with XXH3-128
/// (seeded by its position, so no two different sequences of fields hash alike) and
/// folded in. One-shot hashes of short fields are several times cheaper than a
/// streaming hasher's set-up per message.
pub struct Key {
    acc: u128,
    fields: u64,
}

/// An odd 128-bit constant (from the golden ratio) for folding field hashes.
const FOLD: u128 = 0x9E37_79B9_7F4A_7C15_F39C_C060_5CED_C835;

impl Key {
    pub fn new(tag: &str) -> Self {
        let mut k = Key { acc: 0, fields: 0 };
        k.str(tag);
        k
    }
    pub fn str(&mut self, s: &str) -> &mut Self {
        let h = xxh3_128_with_seed(s.as_bytes(), self.fields);
        self.fields += 1;
        self.acc = (self.acc ^ h).wrapping_mul(FOLD).rotate_left(41);
        self
    }
    pub fn flag(&mut self, b: bool) -> &mut Self {
        self.str(if b { "1" } else { "0" })
    }
    pub fn message(&mut self, m: &Message) -> &mut Self {
        match m {
            Message::System { content } => self.str("s").str(content),
            Message::User { content } => self.str("u").str(content),
            Message::Assistant {
                content,
                tool_calls,
                reasoning_content,
                thinking,
            } => {
                self.str("a");
                self.opt(content.as_deref());
                self.opt(reasoning_content.as_deref());
                self.str(&tool_calls.len().to_string());
                for c in tool_calls {
                    self.str(&c.id).str(&c.name).str(&c.arguments);
                }
                self.str(&thinking.len().to_string());
                for b in thinking {
                    match b {
                        ThinkingBlock::Thinking {
                            thinking,
                            signature,
                        } => self.str("t").str(thinking).str(signature),
                        ThinkingBlock::RedactedThinking { data } => self.str("r").str(data),
                    };
                }
                self
            }
            Message::Tool {
                tool_call_id,
                content,
            } => self.str("t").str(tool_call_id).str(content),
        }
    }
    fn opt(&mut self, s: Option<&str>) -> &mut Self {
        match s {
            Some(s) => self.flag(true).str(s),
            None => self.flag(false),
        }
    }
    pub fn finish(&self) -> u128 {
        self.acc ^ self.fields as u128
    }
}

/// The encoded tool list, reused while the tools are equal to the ones it was made from.
#[derive(Default)]
pub struct ToolsCache {
    tools: Vec<ToolDef>,
    bytes: Vec<u8>,
}

impl ToolsCache {
    /// Append the encoded `tools` (as `encode` writes them) to `out`.
    pub fn emit(
        &mut self,
        tools: &[ToolDef],
        out: &mut Vec<u8>,
        encode: impl FnOnce(&mut Vec<u8>),
    ) {
        if self.bytes.is_empty() || self.tools != tools {
            self.bytes.clear();
            encode(&mut self.bytes);
            self.tools = tools.to_vec();
        }
        out.extend_from_slice(&self.bytes);
    }
}

/// Serialize `v` onto the end of `out` (typed structs: no intermediate tree).
pub fn write_json<T: serde::Serialize + ?Sized>(out: &mut Vec<u8>, v: &T) {
    serde_json::to_writer(&mut *out, v).expect("serializing to a Vec cannot fail");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hits_reuse_bytes_and_the_cap_evicts_the_oldest() {
        let mut c = FragmentCache::new(1000);
        let mut out = Vec::new();
        let k = |s: &str| Key::new("t").str(s).finish();
        c.emit(k("a"), &mut out, |o| o.extend_from_slice(b"AAAA"));
        c.emit(k("a"), &mut out, |_| panic!("cached"));
        assert_eq!(out, b"AAAAAAAA");
        assert_eq!(c.counts(), (1, 1));
        for i in 0..10 {
            c.emit(k(&i.to_string()), &mut out, |o| {
                o.extend_from_slice(&[b'x'; 200])
            });
        }
        assert!(c.bytes() <= 1000, "{}", c.bytes());
        assert!(
            c.map.len() <= 1000 / (200 + ENTRY_OVERHEAD),
            "{}",
            c.map.len()
        );
        // the most recent stays
        let mut o2 = Vec::new();
        c.emit(k("9"), &mut o2, |_| panic!("the newest is kept"));
        // short messages count their entries too: the cap bounds memory, not bytes
        let mut c = FragmentCache::new(10_000);
        for i in 0..1000 {
            c.emit(k(&i.to_string()), &mut out, |o| o.extend_from_slice(b"ok"));
        }
        assert!(c.map.len() <= 10_000 / ENTRY_OVERHEAD, "{}", c.map.len());
        // distinct field splits hash differently
        assert_ne!(
            Key::new("t").str("ab").str("c").finish(),
            Key::new("t").str("a").str("bc").finish()
        );
    }
}

//! FNV-1a, 64 bits: the stable digest of prompt prefixes and cache keys.

/// FNV-1a, 64 bits: a stable digest for prefix hashes and cache keys.
pub fn fnv1a(seed: u64, bytes: &[u8]) -> u64 {
    let mut h = seed;
    for b in bytes {
        h ^= u64::from(*b);
        h = h.wrapping_mul(0x100000001b3);
    }
    h
}

pub const FNV_SEED: u64 = 0xcbf29ce484222325;

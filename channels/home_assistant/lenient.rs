//! Reading a peer's JSON leniently: Home Assistant adds and changes fields between
//! versions, so a field that is missing, `null` or of another shape reads as absent
//! ([`Lenient`]), and a list keeps its malformed items apart ([`Items`]) instead of
//! failing whole. Used by `protocol` (the frames) and `answers` (the results).

use serde::de::IgnoredAny;
use serde::{Deserialize, Deserializer};

/// A value read leniently: missing, `null` or of another shape is `None`, never an error.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Lenient<T>(pub Option<T>);

impl<T> Default for Lenient<T> {
    fn default() -> Self {
        Self(None)
    }
}

impl<'de, T: Deserialize<'de>> Deserialize<'de> for Lenient<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Either<T> {
            Read(T),
            Not(IgnoredAny),
        }
        Ok(Self(match Either::deserialize(d)? {
            Either::Read(t) => Some(t),
            Either::Not(_) => None,
        }))
    }
}

impl<T> Lenient<T> {
    pub fn as_ref(&self) -> Option<&T> {
        self.0.as_ref()
    }
}

impl Lenient<String> {
    pub fn as_str(&self) -> Option<&str> {
        self.0.as_deref()
    }
}

/// A list whose malformed items are kept as `None` (counted, and left out when read); an
/// answer that is no list is an error.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(transparent)]
pub struct Items<T>(pub Vec<Lenient<T>>);

impl<T> Default for Items<T> {
    fn default() -> Self {
        Self(Vec::new())
    }
}

impl<T> Items<T> {
    /// The items, malformed ones included.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The well-formed items.
    pub fn iter(&self) -> impl Iterator<Item = &T> {
        self.0.iter().filter_map(Lenient::as_ref)
    }
}

//! OneBot ids (`self_id`, `user_id`, `group_id`, `message_id`, `echo`, a segment's
//! `qq` / `id`): implementations send them as JSON numbers or as strings, sometimes both
//! in one session. Every id the QQ channel reads goes through [`Id`], so "10001" and
//! 10001 are the same id everywhere (comparisons, chat keys, the sent-message set).
//!
//! Bounded where it enters: a peer's string id longer than [`MAX_ID_LEN`] bytes, empty,
//! or with control characters is refused, and a number that is not an integer (or too
//! large for 64 bits, which JSON parsers hand over as a float) is refused rather than
//! rounded into someone else's id.

use serde::de::{self, Deserializer, Visitor};
use serde::{Deserialize, Serialize, Serializer};
use serde_json::Value;
use std::fmt;

/// Longest string id accepted, in bytes. QQ numbers have at most 20 digits; string
/// message ids of bridges stay well below this.
pub const MAX_ID_LEN: usize = 64;

/// A OneBot id, kept as its canonical text (a number's decimal form).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Id(String);

/// Why a string is not an id.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum IdError {
    #[error("an id may not be empty")]
    Empty,
    #[error("an id may be at most {MAX_ID_LEN} bytes, this one has {0}")]
    TooLong(usize),
    #[error("an id may not contain control characters")]
    Control,
}

impl Id {
    /// An id from text, checked like a peer's string id.
    pub fn new(s: impl Into<String>) -> Result<Self, IdError> {
        let s = s.into();
        if s.is_empty() {
            return Err(IdError::Empty);
        }
        if s.len() > MAX_ID_LEN {
            return Err(IdError::TooLong(s.len()));
        }
        if s.chars().any(char::is_control) {
            return Err(IdError::Control);
        }
        Ok(Id(s))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// Read an id out of a loose JSON value (a message segment's data).
    pub fn from_value(v: &Value) -> Option<Self> {
        Id::deserialize(v).ok()
    }

    /// The id as OneBot expects it in action parameters: a number when it is one, else
    /// the string as received.
    pub fn to_json(&self) -> Value {
        if let Ok(n) = self.0.parse::<u64>() {
            if n.to_string() == self.0 {
                return Value::from(n);
            }
        }
        if let Ok(n) = self.0.parse::<i64>() {
            if n.to_string() == self.0 {
                return Value::from(n);
            }
        }
        Value::String(self.0.clone())
    }
}

impl fmt::Display for Id {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl PartialEq<str> for Id {
    fn eq(&self, other: &str) -> bool {
        self.0 == other
    }
}

/// In action parameters: [`Id::to_json`].
impl Serialize for Id {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.to_json().serialize(s)
    }
}

impl<'de> Deserialize<'de> for Id {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(IdVisitor)
    }
}

struct IdVisitor;

impl Visitor<'_> for IdVisitor {
    type Value = Id;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        write!(
            f,
            "an id: an integer or a string of 1 to {MAX_ID_LEN} bytes"
        )
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Id, E> {
        Ok(Id(v.to_string()))
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Id, E> {
        // go-cqhttp's message ids are signed 32-bit and often negative
        Ok(Id(v.to_string()))
    }

    fn visit_f64<E: de::Error>(self, _: f64) -> Result<Id, E> {
        Err(E::custom(
            "an id must be an integer (a fraction, or a number too large for 64 bits)",
        ))
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<Id, E> {
        // the error names the length, never echoes a peer's (possibly huge) string
        Id::new(v).map_err(E::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn parse(v: Value) -> Result<Id, serde_json::Error> {
        serde_json::from_value(v)
    }

    #[test]
    fn numbers_and_strings_are_the_same_id() {
        assert_eq!(parse(json!(10001)).unwrap(), parse(json!("10001")).unwrap());
        assert_eq!(parse(json!(10001)).unwrap().as_str(), "10001");
        assert_eq!(parse(json!(-2147483000)).unwrap().as_str(), "-2147483000");
        assert_eq!(parse(json!("homebot-7")).unwrap().as_str(), "homebot-7");
        assert_eq!(
            Id::from_value(&json!(3000000001u64)).unwrap(),
            *"3000000001"
        );
    }

    #[test]
    fn bad_types_are_rejected() {
        for v in [
            json!(null),
            json!(true),
            json!(1.5),
            json!([1]),
            json!({"id": 1}),
            json!(""),
            json!("a\nb"),
        ] {
            assert!(parse(v.clone()).is_err(), "{v} is not an id");
        }
        let long = "9".repeat(MAX_ID_LEN + 1);
        let e = parse(json!(long)).unwrap_err().to_string();
        assert!(e.contains("at most 64 bytes") && !e.contains(&long), "{e}");
    }

    #[test]
    fn huge_numbers() {
        let max: Id = serde_json::from_str("18446744073709551615").unwrap();
        assert_eq!(max.as_str(), "18446744073709551615");
        assert_eq!(max.to_json(), json!(u64::MAX));
        // beyond 64 bits the parser has only a float: refused, not rounded
        assert!(serde_json::from_str::<Id>("18446744073709551616").is_err());
        assert!(serde_json::from_str::<Id>("1e30").is_err());
        // as a string it stays exact
        let s: Id = serde_json::from_str("\"184467440737095516160\"").unwrap();
        assert_eq!(s.to_json(), json!("184467440737095516160"));
    }

    #[test]
    fn ids_go_out_as_numbers_when_they_are_numbers() {
        assert_eq!(Id::new("5550001").unwrap().to_json(), json!(5550001));
        assert_eq!(Id::new("-5").unwrap().to_json(), json!(-5));
        assert_eq!(Id::new("007").unwrap().to_json(), json!("007"));
        assert_eq!(Id::new("abc").unwrap().to_json(), json!("abc"));
    }

    #[test]
    fn optional_ids_in_structs() {
        #[derive(Deserialize)]
        struct Ev {
            user_id: Id,
            message_id: Option<Id>,
        }
        let e: Ev = serde_json::from_value(json!({"user_id": 1, "message_id": null})).unwrap();
        assert_eq!(e.user_id.as_str(), "1");
        assert!(e.message_id.is_none());
        let e: Ev = serde_json::from_value(json!({"user_id": "1"})).unwrap();
        assert!(e.message_id.is_none());
    }
}

//! `SessionId`: the name of a mode session and of its folder, `<prefix>-YYYYMMDD-HHMMSS-xxxxxx`
//! (the local start time and six random hex digits, e.g. `cook-20261022-195500-a1b2c3`).
//! One type makes, parses and prints it, so the start time read back from a folder name
//! is the one that was written.

use crate::zone::Zone;
use chrono::{DateTime, FixedOffset, NaiveDateTime, TimeZone};
use std::fmt;

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct SessionId {
    prefix: String,
    /// Local wall-clock start time, to the second.
    started: NaiveDateTime,
    suffix: u32,
}

impl SessionId {
    /// A new id for a session starting at `started` (local time of the household).
    pub fn new(prefix: &str, started: DateTime<FixedOffset>) -> Self {
        Self {
            prefix: prefix.to_string(),
            started: started.naive_local(),
            suffix: rand::random::<u32>() & 0xff_ffff,
        }
    }

    /// Parse a folder name; `None` when it is not a session id homebot makes.
    pub fn parse(s: &str) -> Option<Self> {
        let parts: Vec<&str> = s.rsplitn(4, '-').collect();
        let [hex, time, date, prefix] = parts.as_slice() else {
            return None;
        };
        if prefix.is_empty()
            || !crate::config::is_safe_id(prefix)
            || hex.len() != 6
            || !hex.chars().all(|c| c.is_ascii_hexdigit())
            || date.len() != 8
            || time.len() != 6
        {
            return None;
        }
        let started =
            NaiveDateTime::parse_from_str(&format!("{date}{time}"), "%Y%m%d%H%M%S").ok()?;
        Some(Self {
            prefix: prefix.to_string(),
            started,
            suffix: u32::from_str_radix(hex, 16).ok()?,
        })
    }

    /// The local wall-clock start time, as written in the name.
    pub fn started_local(&self) -> NaiveDateTime {
        self.started
    }

    /// The start time in the household's zone (the earliest reading of an ambiguous one).
    pub fn started_in(&self, tz: Zone) -> Option<DateTime<FixedOffset>> {
        tz.from_local_datetime(&self.started)
            .earliest()
            .map(|t| t.fixed_offset())
    }
}

impl fmt::Display for SessionId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}-{}-{:06x}",
            self.prefix,
            self.started.format("%Y%m%d-%H%M%S"),
            self.suffix
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn made_parsed_and_printed_alike() {
        let tz: Zone = "Asia/Shanghai".parse().unwrap();
        let t = DateTime::parse_from_rfc3339("2026-10-22T19:55:00+08:00").unwrap();
        let id = SessionId::new("cook", t);
        let s = id.to_string();
        assert!(s.starts_with("cook-20261022-195500-"), "{s}");
        let back = SessionId::parse(&s).unwrap();
        assert_eq!(back, id);
        assert_eq!(back.started_in(tz), Some(t));
        assert_eq!(
            SessionId::parse("my-mode-20261022-195500-a1b2c3")
                .unwrap()
                .to_string(),
            "my-mode-20261022-195500-a1b2c3"
        );
        for bad in [
            "cook-backup",
            "cook-20261022-195500-xyz123",
            "-20261022-195500-a1b2c3",
            "cook-20261322-195500-a1b2c3",
            "cook-2026102-195500-a1b2c3",
        ] {
            assert!(SessionId::parse(bad).is_none(), "{bad}");
        }
    }
}

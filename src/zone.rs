//! An IANA time zone for chrono, backed by jiff's TZif reader: [`Zone`] is a
//! [`chrono::TimeZone`], so the rest of the code keeps `DateTime<Zone>` and chrono's API.
//!
//! Why not chrono-tz: it compiles the whole tz database into Rust tables, and each of
//! their transition spans holds a `&'static str` abbreviation. That made ~36,000 of the
//! binary's ~48,000 relative relocations and ~1 MiB of `.data.rel.ro`, which the dynamic
//! loader patches at every start (~2 ms of a one-shot `homebot chat -m`'s ~16 ms) and
//! which then sits as private, dirty pages in every process. A process uses one or two
//! zones (the household's and a price list's), so it reads just those: the system's
//! TZif file (`$TZDIR`, else `/usr/share/zoneinfo`, as libc does), or, on a machine
//! without tzdata (a slim container), the copy jiff bundles (`tzdb-bundle-always`: one
//! byte blob and a name index, a few hundred relocations).
//!
//! The system file is read directly rather than through `jiff::tz::db()`, whose zoneinfo
//! database walks the whole directory tree to build its name list on first use: work a
//! one-shot process would pay at every start to look up one name. Names are matched
//! exactly (`Asia/Shanghai`, not `asia/shanghai`), as chrono-tz's `FromStr` did.

use chrono::{FixedOffset, LocalResult, NaiveDate, NaiveDateTime, NaiveTime};
use jiff::tz::{AmbiguousOffset, TimeZone};
use std::fmt;
use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::sync::Mutex;

/// The most distinct zone names a process interns; a process uses one or two, so more
/// means names come from somewhere unbounded, and each would leak a parsed zone.
pub const MAX_ZONES: usize = 64;

/// The system directories searched after `$TZDIR` (jiff's list).
const ZONEINFO_DIRS: &[&str] = &[
    "/usr/share/zoneinfo",
    "/usr/share/lib/zoneinfo",
    "/etc/zoneinfo",
];

static UTC: TimeZone = TimeZone::UTC;

/// The zones parsed so far, each once per distinct name. A zone is leaked (a `Box` made
/// `'static`) so that [`Zone`] is a `Copy` pointer like chrono-tz's `Tz` was: every
/// `DateTime<Zone>` carries it in its offset, and a reference count there would make
/// each datetime copy touch shared memory. The table is bounded by [`MAX_ZONES`], so at
/// most that many zones (a few KiB each) are ever leaked.
static INTERNED: Mutex<Vec<&'static TimeZone>> = Mutex::new(Vec::new());

/// An IANA time zone (`Asia/Shanghai`), or UTC. Cheap to copy; equal when the names are.
#[derive(Clone, Copy)]
pub struct Zone(&'static TimeZone);

/// A name that is not a zone of the tz database (or one more than [`MAX_ZONES`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnknownZone {
    pub name: String,
    too_many: bool,
}

impl fmt::Display for UnknownZone {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "unknown time zone {:?}", self.name)?;
        if self.too_many {
            write!(f, " (more than {MAX_ZONES} distinct time zones)")?;
        }
        Ok(())
    }
}

impl std::error::Error for UnknownZone {}

impl Zone {
    /// UTC, named `UTC`.
    pub fn utc() -> Zone {
        Zone(&UTC)
    }

    /// The IANA name, as it was parsed (`UTC` for [`Zone::utc`]).
    pub fn name(&self) -> &'static str {
        self.0.iana_name().unwrap_or("UTC")
    }

    /// The underlying jiff zone.
    pub fn jiff(&self) -> &'static TimeZone {
        self.0
    }

    /// The offset at an instant given in seconds since the epoch (clamped to jiff's
    /// range, years -9999..=9999, beyond which offsets do not change in practice).
    fn fixed_at(&self, epoch_seconds: i64) -> FixedOffset {
        let min = jiff::Timestamp::MIN.as_second();
        let max = jiff::Timestamp::MAX.as_second();
        let ts = jiff::Timestamp::from_second(epoch_seconds.clamp(min, max))
            .unwrap_or(jiff::Timestamp::UNIX_EPOCH);
        fixed(self.0.to_offset(ts))
    }

    fn lookup(name: &str) -> Result<Zone, UnknownZone> {
        if name == "UTC" {
            return Ok(Zone::utc());
        }
        let unknown = |too_many| UnknownZone {
            name: name.to_string(),
            too_many,
        };
        let mut table = INTERNED.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(tz) = table.iter().find(|tz| tz.iana_name() == Some(name)) {
            return Ok(Zone(tz));
        }
        if !valid_name(name) {
            return Err(unknown(false));
        }
        if table.len() >= MAX_ZONES {
            return Err(unknown(true));
        }
        let tz = read_system(name)
            .or_else(|| bundled(name))
            .ok_or_else(|| unknown(false))?;
        let tz: &'static TimeZone = Box::leak(Box::new(tz));
        table.push(tz);
        Ok(Zone(tz))
    }
}

/// A tz database name: path components of `A-Za-z0-9_+-` (no `.`, `..`, empty or
/// absolute components, so a name can only name a file under the zoneinfo directory).
fn valid_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 64
        && name.split('/').all(|part| {
            !part.is_empty()
                && !part.starts_with('.')
                && part
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b"_+-".contains(&b))
        })
}

fn read_system(name: &str) -> Option<TimeZone> {
    let dirs = std::env::var_os("TZDIR")
        .map(PathBuf::from)
        .into_iter()
        .chain(ZONEINFO_DIRS.iter().map(PathBuf::from));
    for dir in dirs {
        let path = dir.join(Path::new(name));
        match std::fs::read(&path) {
            // a file that is not TZif (zone.tab, tzdata.zi) names no zone
            Ok(data) => return TimeZone::tzif(name, &data).ok(),
            Err(_) => continue,
        }
    }
    None
}

fn bundled(name: &str) -> Option<TimeZone> {
    let tz = jiff::tz::TimeZoneDatabase::bundled().get(name).ok()?;
    // the bundled index is matched without regard to case; chrono-tz's names were exact
    (tz.iana_name() == Some(name)).then_some(tz)
}

fn fixed(offset: jiff::tz::Offset) -> FixedOffset {
    // jiff allows ±25:59:59, chrono less than a day; no real zone comes near either
    FixedOffset::east_opt(offset.seconds().clamp(-86_399, 86_399)).expect("within a day")
}

impl PartialEq for Zone {
    fn eq(&self, other: &Zone) -> bool {
        std::ptr::eq(self.0, other.0) || self.name() == other.name()
    }
}

impl Eq for Zone {}

impl fmt::Debug for Zone {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl fmt::Display for Zone {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Zone {
    type Err = UnknownZone;

    fn from_str(name: &str) -> Result<Zone, UnknownZone> {
        Zone::lookup(name)
    }
}

/// A [`Zone`]'s offset at some instant: the zone (so `DateTime<Zone>` keeps it) and the
/// offset from UTC. Displays like [`FixedOffset`] (`+08:00`).
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct ZoneOffset {
    zone: Zone,
    fixed: FixedOffset,
}

impl ZoneOffset {
    pub fn zone(&self) -> Zone {
        self.zone
    }
}

impl chrono::Offset for ZoneOffset {
    fn fix(&self) -> FixedOffset {
        self.fixed
    }
}

impl fmt::Debug for ZoneOffset {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&self.fixed, f)
    }
}

impl fmt::Display for ZoneOffset {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&self.fixed, f)
    }
}

impl chrono::TimeZone for Zone {
    type Offset = ZoneOffset;

    fn from_offset(offset: &ZoneOffset) -> Zone {
        offset.zone
    }

    fn offset_from_local_date(&self, local: &NaiveDate) -> LocalResult<ZoneOffset> {
        self.offset_from_local_datetime(&local.and_time(NaiveTime::MIN))
    }

    /// A local time in a gap (clocks skipped it) is `None`; one in a fold (clocks went
    /// back over it) is `Ambiguous(earlier instant's offset, later instant's offset)`.
    fn offset_from_local_datetime(&self, local: &NaiveDateTime) -> LocalResult<ZoneOffset> {
        use chrono::{Datelike, Timelike};
        let at = |fixed| ZoneOffset { zone: *self, fixed };
        // transitions fall on whole seconds, so the fraction never changes the answer
        let year = local.year().clamp(-9999, 9999) as i16;
        let Ok(dt) = jiff::civil::DateTime::new(
            year,
            local.month() as i8,
            local.day() as i8,
            local.hour() as i8,
            local.minute() as i8,
            local.second() as i8,
            0,
        ) else {
            // 29 February of a leap year beyond ±9999, clamped to a common one
            return LocalResult::Single(at(self.fixed_at(local.and_utc().timestamp())));
        };
        match self.0.to_ambiguous_timestamp(dt).offset() {
            AmbiguousOffset::Unambiguous { offset } => LocalResult::Single(at(fixed(offset))),
            AmbiguousOffset::Gap { .. } => LocalResult::None,
            AmbiguousOffset::Fold { before, after } => {
                LocalResult::Ambiguous(at(fixed(before)), at(fixed(after)))
            }
        }
    }

    fn offset_from_utc_date(&self, utc: &NaiveDate) -> ZoneOffset {
        self.offset_from_utc_datetime(&utc.and_time(NaiveTime::MIN))
    }

    fn offset_from_utc_datetime(&self, utc: &NaiveDateTime) -> ZoneOffset {
        ZoneOffset {
            zone: *self,
            fixed: self.fixed_at(utc.and_utc().timestamp()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::{Offset, TimeZone};

    fn local(s: &str) -> NaiveDateTime {
        NaiveDateTime::parse_from_str(s, "%Y-%m-%d %H:%M:%S").unwrap()
    }

    fn utc(s: &str) -> NaiveDateTime {
        local(s)
    }

    fn secs(r: LocalResult<ZoneOffset>) -> Vec<i32> {
        match r {
            LocalResult::Single(o) => vec![o.fix().local_minus_utc()],
            LocalResult::Ambiguous(a, b) => {
                vec![a.fix().local_minus_utc(), b.fix().local_minus_utc()]
            }
            LocalResult::None => vec![],
        }
    }

    #[test]
    fn shanghai_is_eight_hours_ahead() {
        let z: Zone = "Asia/Shanghai".parse().unwrap();
        let t = z.with_ymd_and_hms(2026, 1, 15, 9, 30, 0).unwrap();
        assert_eq!(t.to_rfc3339(), "2026-01-15T09:30:00+08:00");
        assert_eq!(t.offset().to_string(), "+08:00");
        assert_eq!(t.timezone(), z);
        let from_utc = chrono::Utc
            .with_ymd_and_hms(2026, 7, 1, 20, 0, 0)
            .unwrap()
            .with_timezone(&z);
        assert_eq!(from_utc.to_rfc3339(), "2026-07-02T04:00:00+08:00");
        assert_eq!(
            z.offset_from_utc_date(&NaiveDate::from_ymd_opt(2026, 7, 1).unwrap())
                .fix()
                .local_minus_utc(),
            8 * 3600
        );
    }

    #[test]
    fn berlin_gap_and_fold() {
        let z: Zone = "Europe/Berlin".parse().unwrap();
        // 2024-03-31: 02:00 CET becomes 03:00 CEST, 02:30 does not exist
        assert_eq!(
            secs(z.offset_from_local_datetime(&local("2024-03-31 02:30:00"))),
            Vec::<i32>::new()
        );
        assert_eq!(
            secs(z.offset_from_local_datetime(&local("2024-03-31 01:59:59"))),
            vec![3600]
        );
        assert_eq!(
            secs(z.offset_from_local_datetime(&local("2024-03-31 03:00:00"))),
            vec![7200]
        );
        // 2024-10-27: 03:00 CEST becomes 02:00 CET, 02:30 happens twice (CEST first)
        assert_eq!(
            secs(z.offset_from_local_datetime(&local("2024-10-27 02:30:00"))),
            vec![7200, 3600]
        );
        assert_eq!(
            secs(z.offset_from_local_datetime(&local("2024-10-27 03:00:00"))),
            vec![3600]
        );
        // the instants around the transitions
        assert_eq!(
            z.offset_from_utc_datetime(&utc("2024-03-31 00:59:59"))
                .fix()
                .local_minus_utc(),
            3600
        );
        assert_eq!(
            z.offset_from_utc_datetime(&utc("2024-03-31 01:00:00"))
                .fix()
                .local_minus_utc(),
            7200
        );
        assert_eq!(
            z.offset_from_utc_datetime(&utc("2024-10-27 00:59:59"))
                .fix()
                .local_minus_utc(),
            7200
        );
        assert_eq!(
            z.offset_from_utc_datetime(&utc("2024-10-27 01:00:00"))
                .fix()
                .local_minus_utc(),
            3600
        );
        let earliest = z
            .from_local_datetime(&local("2024-10-27 02:30:00"))
            .earliest()
            .unwrap();
        assert_eq!(earliest.to_rfc3339(), "2024-10-27T02:30:00+02:00");
    }

    #[test]
    fn santiago_midnight_gap_and_fold() {
        let z: Zone = "America/Santiago".parse().unwrap();
        // 2024-09-08: 00:00 -04 becomes 01:00 -03, so that day has no midnight
        let day = NaiveDate::from_ymd_opt(2024, 9, 8).unwrap();
        assert_eq!(secs(z.offset_from_local_date(&day)), Vec::<i32>::new());
        assert_eq!(
            secs(z.offset_from_local_datetime(&local("2024-09-08 01:00:00"))),
            vec![-3 * 3600]
        );
        // 2024-04-07: 00:00 -03 becomes 23:00 -04 the evening before
        assert_eq!(
            secs(z.offset_from_local_datetime(&local("2024-04-06 23:30:00"))),
            vec![-3 * 3600, -4 * 3600]
        );
    }

    #[test]
    fn utc_is_named_utc() {
        let z = Zone::utc();
        assert_eq!(z.to_string(), "UTC");
        assert_eq!("UTC".parse::<Zone>().unwrap(), z);
        assert_eq!(
            z.offset_from_utc_datetime(&utc("2024-06-01 12:00:00"))
                .to_string(),
            "+00:00"
        );
        assert_eq!(
            secs(z.offset_from_local_datetime(&local("2024-06-01 12:00:00"))),
            vec![0]
        );
        let etc: Zone = "Etc/UTC".parse().unwrap();
        assert_eq!(etc.to_string(), "Etc/UTC");
        assert_ne!(etc, z);
    }

    #[test]
    fn unknown_names_are_refused() {
        for name in [
            "x",
            "",
            "Asia/Nowhere",
            "asia/shanghai",
            "../zoneinfo/UTC",
            "/etc/passwd",
            "zone.tab",
            "Asia",
        ] {
            let e = name.parse::<Zone>().unwrap_err();
            assert_eq!(e.name, name);
            assert!(e.to_string().contains("unknown time zone"), "{e}");
        }
    }

    #[test]
    fn display_and_parse_round_trip() {
        for name in [
            "Asia/Shanghai",
            "Europe/Berlin",
            "America/Argentina/Buenos_Aires",
            "UTC",
        ] {
            let z: Zone = name.parse().unwrap();
            assert_eq!(z.to_string(), name);
            assert_eq!(format!("{z:?}"), name);
            let again: Zone = z.to_string().parse().unwrap();
            assert_eq!(again, z);
            // interned: the same zone, not a second copy
            assert!(std::ptr::eq(again.jiff(), z.jiff()));
        }
    }

    #[test]
    fn the_bundled_copy_knows_the_zones() {
        let tz = bundled("Asia/Shanghai").unwrap();
        assert_eq!(tz.iana_name(), Some("Asia/Shanghai"));
        assert!(bundled("asia/shanghai").is_none());
        assert!(bundled("x").is_none());
    }
}

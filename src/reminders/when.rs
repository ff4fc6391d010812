//! When a reminder rings: `in_seconds` from now, or `at` — an RFC 3339 time, or "HH:MM"
//! in the household's zone (today if that is still ahead, else tomorrow). Bounded: not in
//! the past, at most [`MAX_AHEAD`] ahead.

use crate::zone::Zone;
use chrono::{DateTime, Duration, FixedOffset, NaiveTime, TimeZone, Utc};

/// The furthest ahead a reminder may be set.
pub const MAX_AHEAD: Duration = Duration::days(7);

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum WhenError {
    #[error("give either in_seconds or at, not both")]
    Both,
    #[error(
        "give in_seconds (a number of seconds from now) or at (\"HH:MM\" or an RFC 3339 time)"
    )]
    Neither,
    #[error("in_seconds must be at least 1, got {0}")]
    NotAhead(i64),
    #[error("{0:?} is neither \"HH:MM\" nor an RFC 3339 time such as 2026-10-22T19:30:00+08:00")]
    Unreadable(String),
    #[error("{0} is in the past")]
    Past(String),
    #[error("{0} is more than 7 days ahead; reminders reach at most 7 days")]
    TooFar(String),
}

/// Resolve the request into a local due time.
pub fn resolve(
    now: DateTime<Utc>,
    tz: Zone,
    in_seconds: Option<i64>,
    at: Option<&str>,
) -> Result<DateTime<FixedOffset>, WhenError> {
    let local_now = now.with_timezone(&tz).fixed_offset();
    let due = match (in_seconds, at.map(str::trim).filter(|s| !s.is_empty())) {
        (Some(_), Some(_)) => return Err(WhenError::Both),
        (None, None) => return Err(WhenError::Neither),
        (Some(s), None) => {
            if s < 1 {
                return Err(WhenError::NotAhead(s));
            }
            let secs = s.min(MAX_AHEAD.num_seconds() + 1);
            local_now + Duration::seconds(secs)
        }
        (None, Some(at)) => parse_at(local_now, tz, at)?,
    };
    let shown = due.to_rfc3339_opts(chrono::SecondsFormat::Secs, false);
    if due <= local_now {
        return Err(WhenError::Past(shown));
    }
    if due - local_now > MAX_AHEAD {
        return Err(WhenError::TooFar(shown));
    }
    Ok(due)
}

fn parse_at(
    now: DateTime<FixedOffset>,
    tz: Zone,
    at: &str,
) -> Result<DateTime<FixedOffset>, WhenError> {
    if let Ok(t) = DateTime::parse_from_rfc3339(at) {
        return Ok(t.with_timezone(&tz).fixed_offset());
    }
    let clock = at.replace('：', ":");
    let time = NaiveTime::parse_from_str(&clock, "%H:%M")
        .or_else(|_| NaiveTime::parse_from_str(&clock, "%H:%M:%S"))
        .map_err(|_| WhenError::Unreadable(at.to_string()))?;
    let today = now.with_timezone(&tz).date_naive();
    for day in [today, today + chrono::Days::new(1)] {
        let naive = day.and_time(time);
        // a wall-clock time skipped by a DST change: the first valid time after it
        let local = tz.from_local_datetime(&naive).earliest().or_else(|| {
            tz.from_local_datetime(&(naive + Duration::hours(1)))
                .earliest()
        });
        if let Some(t) = local.map(|t| t.fixed_offset()) {
            if t > now {
                return Ok(t);
            }
        }
    }
    Err(WhenError::Past(at.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(s: &str) -> DateTime<Utc> {
        DateTime::parse_from_rfc3339(s).unwrap().with_timezone(&Utc)
    }

    #[test]
    fn seconds_clock_times_and_limits() {
        let tz: Zone = "Asia/Shanghai".parse().unwrap();
        let now = t("2026-10-22T19:50:00+08:00");
        let show = |r: Result<DateTime<FixedOffset>, WhenError>| {
            r.map(|d| d.to_rfc3339_opts(chrono::SecondsFormat::Secs, false))
        };
        assert_eq!(
            show(resolve(now, tz, Some(600), None)).unwrap(),
            "2026-10-22T20:00:00+08:00"
        );
        assert_eq!(
            show(resolve(now, tz, None, Some("20:30"))).unwrap(),
            "2026-10-22T20:30:00+08:00"
        );
        // already past today: tomorrow
        assert_eq!(
            show(resolve(now, tz, None, Some("07:00"))).unwrap(),
            "2026-10-23T07:00:00+08:00"
        );
        assert_eq!(
            show(resolve(now, tz, None, Some("2026-10-22T12:30:00Z"))).unwrap(),
            "2026-10-22T20:30:00+08:00"
        );
        assert_eq!(resolve(now, tz, None, None), Err(WhenError::Neither));
        assert_eq!(
            resolve(now, tz, Some(5), Some("20:00")),
            Err(WhenError::Both)
        );
        assert_eq!(resolve(now, tz, Some(0), None), Err(WhenError::NotAhead(0)));
        assert!(matches!(
            resolve(now, tz, Some(8 * 86_400), None),
            Err(WhenError::TooFar(_))
        ));
        assert!(matches!(
            resolve(now, tz, Some(i64::MAX), None),
            Err(WhenError::TooFar(_))
        ));
        assert!(matches!(
            resolve(now, tz, None, Some("2026-10-22T19:00:00+08:00")),
            Err(WhenError::Past(_))
        ));
        assert!(matches!(
            resolve(now, tz, None, Some("晚上八点")),
            Err(WhenError::Unreadable(_))
        ));
    }
}

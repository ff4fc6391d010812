//! Who is connected right now, and since when: the channels report their links here
//! (a QQ implementation per account, each voice satellite, Home Assistant) and readers
//! (the dashboard, a metrics gauge) take a [`Presence::snapshot`]. A link is data the
//! channel states ([`Link`]: its name and an id); nothing here knows a channel.
//!
//! The lock is a plain mutex held only to copy or update the small map, never across an
//! await. The ids come from peers (a QQ `self_id`, a satellite's id), so they are cut to
//! [`MAX_ID_CHARS`] and the map holds at most [`MAX_LINKS`] entries: when it is full, the
//! link that has been disconnected longest makes room; if every one is connected, the
//! new report is dropped (the connection caps keep that from happening in practice).

use crate::clock::SharedClock;
use chrono::{DateTime, FixedOffset};
use serde::Serialize;
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

/// Longest id kept for a link (longer ones are cut).
pub const MAX_ID_CHARS: usize = 64;
/// Most links remembered at once.
pub const MAX_LINKS: usize = 256;

/// One thing a channel can be connected to, as the channel states it: its own name and
/// the account or satellite id (`None` for a link that has no id, such as Home
/// Assistant's one connection). The registry compares links as data and knows no
/// channel.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Link {
    channel: &'static str,
    id: Option<String>,
}

impl Link {
    /// A link of `channel` (the channel's own name) with this account or satellite id.
    pub fn new(channel: &'static str, id: Option<String>) -> Self {
        Self { channel, id }
    }

    /// The channel the link belongs to, as the channel named it.
    pub fn channel(&self) -> &'static str {
        self.channel
    }

    /// The account or satellite id; `None` for a link that has no id.
    pub fn id(&self) -> Option<&str> {
        self.id.as_deref()
    }

    fn bounded(self) -> Self {
        Self {
            channel: self.channel,
            id: self.id.map(|s| s.chars().take(MAX_ID_CHARS).collect()),
        }
    }
}

/// One link's state as a reader sees it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ChannelState {
    pub channel: &'static str,
    /// The account or satellite id (`null` for Home Assistant).
    pub id: Option<String>,
    pub connected: bool,
    /// When it last changed, in the household's zone.
    pub since: DateTime<FixedOffset>,
    #[serde(skip)]
    pub link: Link,
}

#[derive(Debug, Clone, Copy)]
struct Entry {
    connected: bool,
    since: DateTime<FixedOffset>,
}

/// The registry; cloning shares it.
#[derive(Clone)]
pub struct Presence {
    inner: Arc<Mutex<BTreeMap<Link, Entry>>>,
    clock: SharedClock,
    tz: crate::zone::Zone,
}

impl std::fmt::Debug for Presence {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Presence").finish_non_exhaustive()
    }
}

impl Presence {
    pub fn new(clock: SharedClock, tz: crate::zone::Zone) -> Self {
        Self {
            inner: Arc::default(),
            clock,
            tz,
        }
    }

    /// `link` is now connected (or not). A report that changes nothing keeps the
    /// earlier since-when.
    pub fn report(&self, link: Link, connected: bool) {
        let link = link.bounded();
        let now = self.clock.now().with_timezone(&self.tz).fixed_offset();
        let mut map = self.inner.lock().expect("presence lock is never poisoned");
        if let Some(e) = map.get_mut(&link) {
            if e.connected != connected {
                *e = Entry {
                    connected,
                    since: now,
                };
            }
            return;
        }
        if map.len() >= MAX_LINKS {
            let oldest = map
                .iter()
                .filter(|(_, e)| !e.connected)
                .min_by_key(|(_, e)| e.since)
                .map(|(l, _)| l.clone());
            match oldest {
                Some(l) => {
                    map.remove(&l);
                }
                None => return,
            }
        }
        map.insert(
            link,
            Entry {
                connected,
                since: now,
            },
        );
    }

    /// Every link known, ordered by channel then id.
    pub fn snapshot(&self) -> Vec<ChannelState> {
        let map = self.inner.lock().expect("presence lock is never poisoned");
        map.iter()
            .map(|(link, e)| ChannelState {
                channel: link.channel(),
                id: link.id().map(str::to_string),
                connected: e.connected,
                since: e.since,
                link: link.clone(),
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clock::ManualClock;

    fn presence() -> (Presence, ManualClock) {
        let clock = ManualClock::new(
            chrono::DateTime::parse_from_rfc3339("2026-10-22T12:00:00Z")
                .unwrap()
                .with_timezone(&chrono::Utc),
        );
        let p = Presence::new(Arc::new(clock.clone()), "Asia/Shanghai".parse().unwrap());
        (p, clock)
    }

    #[test]
    fn since_moves_only_on_a_change() {
        let (p, clock) = presence();
        p.report(Link::new("home_assistant", None), true);
        clock.advance(chrono::Duration::minutes(5));
        p.report(Link::new("home_assistant", None), true);
        let s = p.snapshot();
        assert_eq!(s.len(), 1);
        assert_eq!(s[0].channel, "home_assistant");
        assert_eq!(s[0].since.to_rfc3339(), "2026-10-22T20:00:00+08:00");
        p.report(Link::new("home_assistant", None), false);
        let s = p.snapshot();
        assert!(!s[0].connected);
        assert_eq!(s[0].since.to_rfc3339(), "2026-10-22T20:05:00+08:00");
    }

    #[test]
    fn hostile_ids_are_bounded_in_length_and_number() {
        let (p, clock) = presence();
        p.report(Link::new("voice", Some("x".repeat(10_000))), true);
        assert_eq!(
            p.snapshot()[0].id.as_deref().map(|s| s.chars().count()),
            Some(MAX_ID_CHARS)
        );
        for i in 0..MAX_LINKS + 50 {
            clock.advance(chrono::Duration::seconds(1));
            p.report(Link::new("qq", Some(format!("acct{i}"))), false);
        }
        let s = p.snapshot();
        assert_eq!(s.len(), MAX_LINKS);
        // the connected satellite stayed; the longest-disconnected accounts made room
        assert!(s.iter().any(|c| c.channel == "voice" && c.connected));
        assert!(!s.iter().any(|c| c.id.as_deref() == Some("acct0")));
        assert!(s
            .iter()
            .any(|c| c.id.as_deref() == Some(&*format!("acct{}", MAX_LINKS + 49))));
    }
}

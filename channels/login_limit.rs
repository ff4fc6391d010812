//! How often an address may guess the owner's token at `POST /login`: a few wrong tries a
//! minute, then `429` with the wait in `Retry-After` (one warning per address each time
//! it is shut out). Without it the form answered 60 wrong tokens in a row at once.
//!
//! A bucket of [`TRIES`] per address, refilled one try every [`REFILL`]; only a wrong
//! token takes one, and while the bucket is empty every try (a right token too) is
//! refused unlooked-at. The addresses are a peer's to choose, so the table is bounded:
//! at [`MAX_ADDRESSES`] the full buckets are forgotten, and past that, new addresses
//! share one bucket — a flood from many addresses is limited as one.
//!
//! A pure state machine over the instant it is told. The HTTP server holds one
//! ([`SharedLimit`]) for every token it checks: the dashboard's `/login` and owner token,
//! and the routes channels provide (Home Assistant's agent endpoint), so wrong tokens
//! count against an address wherever they were tried.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// Wrong tries an address may make at once.
pub const TRIES: u32 = 5;
/// One try comes back this often (5 a minute).
pub const REFILL: Duration = Duration::from_secs(12);
/// Addresses remembered; past it new ones share the overflow bucket.
pub const MAX_ADDRESSES: usize = 1024;

/// Whether a try is looked at.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    Allowed,
    /// Refused: try again after this. `first` for the first refusal since the address
    /// was last allowed (the one that is logged).
    Refused {
        retry_after: Duration,
        first: bool,
    },
}

#[derive(Debug, Clone, Copy)]
struct Bucket {
    /// Tries left at `at`.
    left: u32,
    at: Instant,
    /// Shut out since the last try it was allowed (a refusal was logged).
    shut: bool,
}

impl Bucket {
    fn full(now: Instant) -> Self {
        Self {
            left: TRIES,
            at: now,
            shut: false,
        }
    }

    /// Add the tries refilled since `at`.
    fn refill(&mut self, now: Instant) {
        let gained = now.saturating_duration_since(self.at).as_nanos() / REFILL.as_nanos();
        if gained == 0 {
            return;
        }
        let left = u128::from(self.left) + gained;
        if left >= u128::from(TRIES) {
            self.left = TRIES;
            self.at = now;
        } else {
            self.left = left as u32;
            // keep the part of a refill period already waited
            self.at += REFILL * gained as u32;
        }
    }

    fn is_full(&self, now: Instant) -> bool {
        let mut b = *self;
        b.refill(now);
        b.left == TRIES
    }
}

#[derive(Debug, Default)]
pub struct LoginLimit {
    by_addr: HashMap<IpAddr, Bucket>,
    /// Shared by the addresses that found the table full.
    overflow: Option<Bucket>,
}

impl LoginLimit {
    /// May `addr` try a token now?
    pub fn check(&mut self, addr: IpAddr, now: Instant) -> Verdict {
        let b = self.bucket(addr, now);
        b.refill(now);
        if b.left > 0 {
            b.shut = false;
            return Verdict::Allowed;
        }
        let first = !b.shut;
        b.shut = true;
        let retry_after = REFILL.saturating_sub(now.saturating_duration_since(b.at));
        Verdict::Refused {
            retry_after: retry_after.max(Duration::from_secs(1)),
            first,
        }
    }

    /// `addr` gave a wrong token: it costs one try.
    pub fn wrong(&mut self, addr: IpAddr, now: Instant) {
        let b = self.bucket(addr, now);
        b.refill(now);
        if b.left == TRIES {
            // the refill clock starts at the first try taken
            b.at = now;
        }
        b.left = b.left.saturating_sub(1);
    }

    /// Addresses remembered (for the bound's test).
    pub fn len(&self) -> usize {
        self.by_addr.len()
    }

    pub fn is_empty(&self) -> bool {
        self.by_addr.is_empty()
    }

    fn bucket(&mut self, addr: IpAddr, now: Instant) -> &mut Bucket {
        if !self.by_addr.contains_key(&addr) && self.by_addr.len() >= MAX_ADDRESSES {
            // forget the addresses whose tries are all back: they are as good as new
            self.by_addr.retain(|_, b| !b.is_full(now));
        }
        if self.by_addr.contains_key(&addr) || self.by_addr.len() < MAX_ADDRESSES {
            return self
                .by_addr
                .entry(addr)
                .or_insert_with(|| Bucket::full(now));
        }
        self.overflow.get_or_insert_with(|| Bucket::full(now))
    }
}

/// One [`LoginLimit`] shared by everything the HTTP server serves (cheap to clone).
#[derive(Clone, Default)]
pub struct SharedLimit(Arc<Mutex<LoginLimit>>);

impl SharedLimit {
    pub fn lock(&self) -> MutexGuard<'_, LoginLimit> {
        // the table is consistent after every call: a panic elsewhere leaves it usable
        self.0
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(n: u32) -> IpAddr {
        IpAddr::from(n.to_be_bytes())
    }

    #[test]
    fn a_few_wrong_tries_then_refused_until_one_comes_back() {
        let mut l = LoginLimit::default();
        let t0 = Instant::now();
        let a = ip(1);
        for _ in 0..TRIES {
            assert_eq!(l.check(a, t0), Verdict::Allowed);
            l.wrong(a, t0);
        }
        assert_eq!(
            l.check(a, t0),
            Verdict::Refused {
                retry_after: REFILL,
                first: true
            }
        );
        // refused again, but not the first time (logged once)
        let later = t0 + Duration::from_secs(5);
        assert_eq!(
            l.check(a, later),
            Verdict::Refused {
                retry_after: Duration::from_secs(7),
                first: false
            }
        );
        // another address is not held up
        assert_eq!(l.check(ip(2), later), Verdict::Allowed);
        // one try back after REFILL, and only one
        let t1 = t0 + REFILL;
        assert_eq!(l.check(a, t1), Verdict::Allowed);
        l.wrong(a, t1);
        assert!(matches!(
            l.check(a, t1),
            Verdict::Refused { first: true, .. }
        ));
        // a minute of quiet gives all of them back
        let t2 = t1 + REFILL * TRIES;
        for _ in 0..TRIES {
            assert_eq!(l.check(a, t2), Verdict::Allowed);
            l.wrong(a, t2);
        }
        assert!(matches!(l.check(a, t2), Verdict::Refused { .. }));
    }

    #[test]
    fn right_tries_cost_nothing() {
        let mut l = LoginLimit::default();
        let t0 = Instant::now();
        for _ in 0..100 {
            assert_eq!(l.check(ip(1), t0), Verdict::Allowed);
        }
    }

    #[test]
    fn the_table_is_bounded_and_a_flood_of_addresses_shares_one_bucket() {
        let mut l = LoginLimit::default();
        let t0 = Instant::now();
        let n = MAX_ADDRESSES as u32 + 50;
        let mut refused = 0;
        for i in 0..n {
            // every address one wrong try
            match l.check(ip(i), t0) {
                Verdict::Allowed => l.wrong(ip(i), t0),
                Verdict::Refused { .. } => refused += 1,
            }
        }
        assert_eq!(l.len(), MAX_ADDRESSES);
        assert_eq!(refused, 50 - TRIES, "past the table, {TRIES} tries in all");
        // once their tries are back, the old addresses make room for new ones
        let t1 = t0 + REFILL;
        assert_eq!(l.check(ip(n + 1), t1), Verdict::Allowed);
        assert_eq!(l.len(), 1);
    }
}

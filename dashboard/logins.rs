//! The dashboard's logins: the cookie a login sets holds a random id, and this table maps
//! it to the login. A leaked cookie is not the token: it dies with the login (after
//! [`LOGIN_LIFETIME`], at `POST /logout`, or when the gateway restarts — the table lives
//! in memory only). [`super::auth`] creates and checks entries; nothing else touches it.

use rand::RngCore;
use std::collections::HashMap;
use std::time::{Duration, Instant};

/// How long a login lasts (the cookie's `Max-Age` says the same).
pub const LOGIN_LIFETIME: Duration = Duration::from_secs(30 * 24 * 3600);
/// Most logins held; a new one past this pushes out the one that expires first.
pub const MAX_LOGINS: usize = 256;
/// Random bytes in an id (hex in the cookie: twice as many characters).
const ID_BYTES: usize = 32;

/// Live logins: id → when it expires.
#[derive(Debug, Default)]
pub struct Logins {
    live: HashMap<String, Instant>,
}

impl Logins {
    /// A new login at `now`: its id, for the cookie.
    pub fn create(&mut self, now: Instant) -> String {
        self.live.retain(|_, until| *until > now);
        if self.live.len() >= MAX_LOGINS {
            if let Some(oldest) = self
                .live
                .iter()
                .min_by_key(|(_, until)| **until)
                .map(|(id, _)| id.clone())
            {
                self.live.remove(&oldest);
            }
        }
        let mut bytes = [0u8; ID_BYTES];
        rand::rngs::OsRng.fill_bytes(&mut bytes);
        let id: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
        self.live.insert(id.clone(), now + LOGIN_LIFETIME);
        id
    }

    /// Whether `id` names a login that is still live at `now`. The id is the key of a
    /// hash lookup, so its comparison is not on the secret's bytes one by one.
    pub fn is_live(&self, id: &str, now: Instant) -> bool {
        id.len() == ID_BYTES * 2 && self.live.get(id).is_some_and(|until| *until > now)
    }

    /// End the login `id` (a logout); an unknown id is nothing to do.
    pub fn drop_login(&mut self, id: &str) {
        self.live.remove(id);
    }

    pub fn len(&self) -> usize {
        self.live.len()
    }

    pub fn is_empty(&self) -> bool {
        self.live.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_login_lives_until_it_expires_or_logs_out() {
        let mut l = Logins::default();
        let t0 = Instant::now();
        let a = l.create(t0);
        let b = l.create(t0);
        assert_ne!(a, b, "ids are random");
        assert_eq!(a.len(), 64);
        assert!(l.is_live(&a, t0) && l.is_live(&b, t0));
        assert!(!l.is_live("00", t0) && !l.is_live(&"0".repeat(64), t0));
        l.drop_login(&a);
        assert!(!l.is_live(&a, t0) && l.is_live(&b, t0));
        let later = t0 + LOGIN_LIFETIME + Duration::from_secs(1);
        assert!(!l.is_live(&b, later), "expired");
        l.create(later);
        assert_eq!(l.len(), 1, "the expired one is swept at the next login");
    }

    #[test]
    fn the_table_is_bounded_and_drops_the_oldest() {
        let mut l = Logins::default();
        let t0 = Instant::now();
        let first = l.create(t0);
        for i in 1..MAX_LOGINS + 10 {
            l.create(t0 + Duration::from_secs(i as u64));
        }
        assert_eq!(l.len(), MAX_LOGINS);
        assert!(!l.is_live(&first, t0 + Duration::from_secs(1)));
    }
}

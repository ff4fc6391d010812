//! Which connection holds which satellite id (the registry the voice actor owns), and
//! the rules of holding one. Credentials bind ids: a satellite listed in
//! `[[voice.satellites]]` with its own `token` can be claimed only by a connection that
//! presented that token; the shared `voice.token` claims only ids without their own
//! token. One live connection per id: a second is refused — unless it presents the
//! satellite's own token, which proves it *is* that satellite (reconnecting after a
//! network drop): then it takes over and the old connection is closed.

use crate::config::VoiceConfig;
use std::collections::HashMap;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;
use tracing::info;

/// Longest satellite id accepted from a peer.
pub const MAX_ID_CHARS: usize = 128;

/// What a connection proved at its handshake.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Credential {
    /// No token is configured at all (loopback only): ids without their own token, and
    /// no speaker is trusted.
    Open,
    /// The shared `voice.token`: ids without their own token.
    Shared,
    /// A satellite's own token: that id only.
    Own(String),
}

/// Why a connection may not hold a satellite id.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ClaimError {
    #[error("satellite {0:?} needs its own token")]
    NotYours(String),
    #[error("satellite {0:?} is already connected")]
    InUse(String),
    #[error("satellite id {0:?} is not a valid id")]
    BadId(String),
}

struct Holder {
    conn: u64,
    /// `None` while the handshake is under way.
    tx: Option<mpsc::Sender<String>>,
    /// Cancelled to close this connection when its satellite reconnects.
    close: CancellationToken,
}

/// Satellite id → the connection holding it.
#[derive(Default)]
pub struct Registry {
    held: HashMap<String, Holder>,
}

impl Registry {
    /// Where announcements for `id` go, if a connection holds it.
    pub fn sender(&self, id: &str) -> Option<mpsc::Sender<String>> {
        self.held.get(id).and_then(|h| h.tx.clone())
    }

    /// Let connection `conn` hold `id` (see the module doc), with its writer when it is
    /// up (`tx`); `close` closes it when its satellite reconnects elsewhere.
    pub fn claim(
        &mut self,
        cfg: &VoiceConfig,
        cred: &Credential,
        id: &str,
        conn: u64,
        tx: Option<mpsc::Sender<String>>,
        close: &CancellationToken,
    ) -> Result<(), ClaimError> {
        if id.chars().count() > MAX_ID_CHARS || !crate::config::is_safe_id(id) {
            return Err(ClaimError::BadId(id.chars().take(MAX_ID_CHARS).collect()));
        }
        let own = own_token(cfg, id).is_some();
        let allowed = match cred {
            Credential::Own(mine) => mine == id,
            Credential::Open | Credential::Shared => !own,
        };
        if !allowed {
            return Err(ClaimError::NotYours(id.to_string()));
        }
        let held = &mut self.held;
        if let Some(h) = held.get(id).filter(|h| h.conn != conn) {
            // only the satellite's own token proves it is the same satellite
            if !matches!(cred, Credential::Own(_)) {
                return Err(ClaimError::InUse(id.to_string()));
            }
            info!(satellite = %id, "voice satellite reconnected; closing its previous connection");
            h.close.cancel();
        }
        let tx = tx.or_else(|| {
            held.get(id)
                .filter(|h| h.conn == conn)
                .and_then(|h| h.tx.clone())
        });
        held.insert(
            id.to_string(),
            Holder {
                conn,
                tx,
                close: close.clone(),
            },
        );
        Ok(())
    }

    /// Give the connection that reserved `id` at its handshake its sender — unless a
    /// newer connection of the same satellite took the id over meanwhile (then this one
    /// is already superseded and must not take it back).
    pub fn attach(&mut self, id: &str, conn: u64, tx: mpsc::Sender<String>) -> bool {
        match self.held.get_mut(id) {
            Some(h) if h.conn == conn => {
                h.tx = Some(tx);
                true
            }
            _ => false,
        }
    }

    /// Close every connection that holds an id (their satellites reconnect) and forget
    /// them: the ids that were up (attached).
    pub fn close_all(&mut self) -> Vec<String> {
        self.held
            .drain()
            .filter_map(|(id, h)| {
                h.close.cancel();
                h.tx.is_some().then_some(id)
            })
            .collect()
    }

    /// Free `id` if `conn` still holds it; true when that took a satellite that was up
    /// (attached) offline.
    pub fn release(&mut self, id: &str, conn: u64) -> bool {
        if self.held.get(id).is_some_and(|h| h.conn == conn) {
            return self.held.remove(id).is_some_and(|h| h.tx.is_some());
        }
        false
    }
}

fn own_token<'a>(cfg: &'a VoiceConfig, id: &str) -> Option<&'a crate::config::Secret> {
    cfg.satellites
        .iter()
        .find(|s| s.id == id)
        .and_then(|s| s.token.as_ref())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn release_says_whether_a_satellite_went_offline() {
        let cfg = VoiceConfig::default();
        let close = CancellationToken::new();
        let mut r = Registry::default();
        r.claim(&cfg, &Credential::Open, "kitchen", 1, None, &close)
            .unwrap();
        // reserved at its handshake, never up: nothing went offline
        assert!(!r.release("kitchen", 1));
        r.claim(&cfg, &Credential::Open, "kitchen", 2, None, &close)
            .unwrap();
        let (tx, _rx) = mpsc::channel(1);
        assert!(r.attach("kitchen", 2, tx));
        // another connection's release does not free it
        assert!(!r.release("kitchen", 3));
        assert!(r.release("kitchen", 2));
        assert!(!r.release("kitchen", 2));
    }

    /// After a panic the registry is rebuilt: every holder's connection is closed, the
    /// ones that were up are named (to be reported offline), nothing is held after.
    #[test]
    fn close_all_closes_every_holder_and_names_the_ones_up() {
        let cfg = VoiceConfig::default();
        let (up, reserved) = (CancellationToken::new(), CancellationToken::new());
        let mut r = Registry::default();
        let (tx, _rx) = mpsc::channel(1);
        r.claim(&cfg, &Credential::Open, "kitchen", 1, Some(tx), &up)
            .unwrap();
        r.claim(&cfg, &Credential::Open, "hall", 2, None, &reserved)
            .unwrap();
        assert_eq!(r.close_all(), ["kitchen"]);
        assert!(up.is_cancelled() && reserved.is_cancelled());
        assert!(r.sender("kitchen").is_none());
        assert!(!r.release("hall", 2), "nothing is held any more");
    }
}

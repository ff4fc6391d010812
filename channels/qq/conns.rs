//! Who is connected: per QQ account, its connections (role, writer) and the ids of the
//! messages the bot sent there (to recognise replies to it). Owned by the QQ actor
//! (`actor`); nothing else touches it.
//!
//! A connection is first *reserved* (its handshake is under way; the duplicate check
//! and the reservation are one step), then *activated* with its writer, then released.
//! Split API / Event connections of one account may coexist; anything else is a
//! duplicate.

use super::id::Id;
use std::collections::{HashMap, HashSet, VecDeque};
use tokio::sync::{mpsc, oneshot};

/// Message ids of the bot's own messages remembered per account.
const SENT_IDS_KEPT: usize = 512;

/// Which kind of frames a connection carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Role {
    Universal,
    Api,
    Event,
}

impl Role {
    pub fn parse(s: Option<&str>) -> Option<Self> {
        match s.map(str::trim).map(str::to_ascii_lowercase).as_deref() {
            None | Some("") | Some("universal") => Some(Role::Universal),
            Some("api") => Some(Role::Api),
            Some("event") => Some(Role::Event),
            _ => None,
        }
    }
    pub fn sends_actions(self) -> bool {
        matches!(self, Role::Universal | Role::Api)
    }
}

/// A second connection of an account already connected (or connecting) in that role.
#[derive(Debug, Clone, thiserror::Error)]
#[error("QQ account {0} is already connected")]
pub struct AlreadyConnected(pub String);

struct Conn {
    id: u64,
    role: Role,
    /// `None` while the connection is only reserved (its handshake is under way).
    tx: Option<mpsc::Sender<String>>,
}

#[derive(Default)]
struct Account {
    conns: Vec<Conn>,
    /// Message ids the bot sent, oldest first, and the same as a set.
    sent: VecDeque<Id>,
    sent_set: HashSet<Id>,
}

impl Account {
    fn clashes(&self, role: Role) -> bool {
        self.conns
            .iter()
            .any(|c| c.role == role || c.role == Role::Universal || role == Role::Universal)
    }
}

/// The registry of QQ accounts and their connections.
#[derive(Default)]
pub struct Connections {
    accounts: HashMap<String, Account>,
    /// Told when a connection comes up (callers waiting for a reconnect).
    waiting: Vec<oneshot::Sender<()>>,
}

impl Connections {
    /// Reserve the account's place for connection `conn` (ids grow with time: the
    /// lowest is the oldest) in `role`, atomically with the duplicate check.
    pub fn reserve(
        &mut self,
        self_id: &str,
        role: Role,
        conn: u64,
    ) -> Result<(), AlreadyConnected> {
        let account = self.accounts.entry(self_id.to_string()).or_default();
        if account.clashes(role) {
            return Err(AlreadyConnected(self_id.to_string()));
        }
        account.conns.push(Conn {
            id: conn,
            role,
            tx: None,
        });
        Ok(())
    }

    /// The connection is up: actions may use its writer; whoever waits for a connection
    /// looks again. False when the reservation is gone.
    pub fn activate(&mut self, self_id: &str, conn: u64, tx: mpsc::Sender<String>) -> bool {
        let Some(c) = self
            .accounts
            .get_mut(self_id)
            .and_then(|a| a.conns.iter_mut().find(|c| c.id == conn))
        else {
            return false;
        };
        c.tx = Some(tx);
        for w in self.waiting.drain(..) {
            let _ = w.send(());
        }
        true
    }

    /// The connection ended (or its handshake never completed).
    pub fn release(&mut self, self_id: &str, conn: u64) {
        let Some(account) = self.accounts.get_mut(self_id) else {
            return;
        };
        account.conns.retain(|c| c.id != conn);
        // an account that never got a message out leaves nothing behind
        if account.conns.is_empty() && account.sent.is_empty() {
            self.accounts.remove(self_id);
        }
    }

    /// Whether account `self_id` has a connection that is up.
    /// The accounts with a connection up.
    pub fn accounts_up(&self) -> Vec<String> {
        self.accounts
            .keys()
            .filter(|id| self.is_up(id))
            .cloned()
            .collect()
    }

    pub fn is_up(&self, self_id: &str) -> bool {
        self.accounts
            .get(self_id)
            .is_some_and(|a| a.conns.iter().any(|c| c.tx.is_some()))
    }

    /// A receiver told when the next connection comes up.
    pub fn wait(&mut self) -> oneshot::Receiver<()> {
        // callers that gave up leave closed senders behind: drop them here
        self.waiting.retain(|w| !w.is_closed());
        let (tx, rx) = oneshot::channel();
        self.waiting.push(tx);
        rx
    }

    /// The writer of the account's connection that carries actions.
    pub fn sender_for(&self, self_id: &str) -> Option<mpsc::Sender<String>> {
        self.accounts
            .get(self_id)?
            .conns
            .iter()
            .filter(|c| c.role.sends_actions())
            .find_map(|c| c.tx.clone())
    }

    /// The account connected first (lowest connection id) among those that can carry
    /// actions now.
    pub fn first_account(&self) -> Option<String> {
        self.accounts
            .iter()
            .flat_map(|(self_id, account)| {
                account
                    .conns
                    .iter()
                    .filter(|c| c.role.sends_actions() && c.tx.is_some())
                    .map(move |c| (c.id, self_id))
            })
            .min()
            .map(|(_, self_id)| self_id.clone())
    }

    /// Whether `id` is a message the bot sent as `self_id`.
    pub fn is_bot_message(&self, self_id: &str, id: &Id) -> bool {
        self.accounts
            .get(self_id)
            .is_some_and(|a| a.sent_set.contains(id))
    }

    /// Remember a message the bot sent (the last [`SENT_IDS_KEPT`] per account).
    pub fn remember_sent(&mut self, self_id: &str, id: Id) {
        let account = self.accounts.entry(self_id.to_string()).or_default();
        if account.sent_set.insert(id.clone()) {
            account.sent.push_back(id);
            if account.sent.len() > SENT_IDS_KEPT {
                if let Some(old) = account.sent.pop_front() {
                    account.sent_set.remove(&old);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn roles() {
        assert_eq!(Role::parse(None), Some(Role::Universal));
        assert_eq!(Role::parse(Some(" API ")), Some(Role::Api));
        assert_eq!(Role::parse(Some("event")), Some(Role::Event));
        assert_eq!(Role::parse(Some("both")), None);
        assert!(Role::Api.sends_actions() && !Role::Event.sends_actions());
    }

    #[test]
    fn one_connection_per_role_and_waiters_woken_by_a_connection() {
        let mut c = Connections::default();
        let (api, ev) = (1, 2);
        c.reserve("1", Role::Api, api).unwrap();
        assert!(c.reserve("1", Role::Universal, 3).is_err());
        assert!(c.reserve("1", Role::Api, 4).is_err());
        c.reserve("1", Role::Event, ev).unwrap();
        assert_eq!(c.first_account(), None, "reserved is not connected");
        let mut woken = c.wait();
        let (tx, _rx) = mpsc::channel(1);
        assert!(c.activate("1", api, tx));
        assert!(woken.try_recv().is_ok());
        assert_eq!(c.first_account().as_deref(), Some("1"));
        assert!(c.sender_for("1").is_some());
        c.release("1", api);
        c.release("1", ev);
        assert!(c.accounts.is_empty(), "nothing sent: nothing kept");
        c.remember_sent("2", Id::new("7").unwrap());
        assert!(c.is_bot_message("2", &Id::new("7").unwrap()));
        let (tx, _rx) = mpsc::channel(1);
        assert!(!c.activate("2", 99, tx), "no such reservation");
    }
}

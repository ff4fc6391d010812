//! Outbound doors: how the kernel (and any actor: the Cron next) speaks through a channel
//! without a user turn. A running channel hands the gateway its door (see the channel
//! contract in `channels/`), which registers it here under the channel's name; then
//! "deliver to QQ group 5550001" or "to satellite kitchen" needs no knowledge of the
//! channel's internals. Doors are bounded: a full one refuses with
//! [`DeliveryError::Busy`] rather than growing.
//!
//! The kernel knows channels only through this module; it never imports `channels/`.

use crate::home::Home;
use async_trait::async_trait;
use std::collections::HashMap;
use std::sync::{Arc, Mutex, RwLock};

/// Why a proactive message was not delivered.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DeliveryError {
    #[error("channel {0:?} is not running in this process")]
    NoChannel(String),
    #[error("{target:?} is not a target of the {channel} channel: {why}")]
    BadTarget {
        channel: String,
        target: String,
        why: String,
    },
    #[error("{0} is not connected")]
    Unreachable(String),
    #[error("{0}: too many messages are waiting; try again later")]
    Busy(String),
    #[error("delivery to {target} failed: {why}")]
    Failed { target: String, why: String },
}

/// A channel's door for proactive messages (timers, announcements).
#[async_trait]
pub trait Outbound: Send + Sync {
    /// Deliver `text` to `target` without a user turn. Targets are the channel's own:
    /// a satellite id for voice, `group:<id>` / `private:<id>` for QQ. Returns once the
    /// message has gone out (or is refused).
    async fn deliver(&self, target: &str, text: &str) -> Result<(), DeliveryError>;

    /// Where a message that must not be lost (a reminder) goes when `target` cannot be
    /// reached now — voice: the front end's next turn. `None`: nowhere else.
    fn later(&self, _target: &str) -> Option<String> {
        None
    }

    /// Lines for `homebot status` about what this door reaches (voice: Home Assistant).
    async fn status(&self) -> Vec<String> {
        Vec::new()
    }
}

/// The outbound doors of the running channels, by channel name, and the house (Home
/// Assistant, when a running channel provides it): the kernel's side of what channels
/// provide (`channels::contract::Provides`).
#[derive(Default)]
pub struct Doors(
    Mutex<HashMap<String, Arc<dyn Outbound>>>,
    RwLock<Option<Arc<dyn Home>>>,
);

impl Doors {
    pub fn register(&self, channel: &str, door: Arc<dyn Outbound>) {
        self.0
            .lock()
            .expect("doors lock is never poisoned")
            .insert(channel.to_string(), door);
    }

    /// The house a running channel provides (the home tools and the fast path use it).
    pub fn provide_home(&self, home: Arc<dyn Home>) {
        *self.1.write().unwrap_or_else(|p| p.into_inner()) = Some(home);
    }

    /// A stopped channel withdraws its door.
    pub fn withdraw(&self, channel: &str) {
        self.0
            .lock()
            .expect("doors lock is never poisoned")
            .remove(channel);
    }

    pub fn get(&self, channel: &str) -> Option<Arc<dyn Outbound>> {
        self.0
            .lock()
            .expect("doors lock is never poisoned")
            .get(channel)
            .cloned()
    }

    /// Home Assistant, when a running channel provides it.
    pub fn home(&self) -> Option<Arc<dyn Home>> {
        self.1.read().unwrap_or_else(|p| p.into_inner()).clone()
    }

    pub fn names(&self) -> Vec<String> {
        let mut v: Vec<String> = self
            .0
            .lock()
            .expect("doors lock is never poisoned")
            .keys()
            .cloned()
            .collect();
        v.sort();
        v
    }

    /// Every door's status lines, by channel name.
    pub async fn status_lines(&self) -> Vec<String> {
        let doors: Vec<Arc<dyn Outbound>> = {
            let map = self.0.lock().expect("doors lock is never poisoned");
            let mut v: Vec<(&String, &Arc<dyn Outbound>)> = map.iter().collect();
            v.sort_by(|a, b| a.0.cmp(b.0));
            v.into_iter().map(|(_, d)| d.clone()).collect()
        };
        let mut lines = Vec::new();
        for d in doors {
            lines.extend(d.status().await);
        }
        lines
    }

    pub async fn deliver(
        &self,
        channel: &str,
        target: &str,
        text: &str,
    ) -> Result<(), DeliveryError> {
        match self.get(channel) {
            Some(d) => d.deliver(target, text).await,
            None => Err(DeliveryError::NoChannel(channel.to_string())),
        }
    }

    /// [`Doors::deliver`], or — when the target is unreachable now — the channel's
    /// [`Outbound::later`] target.
    pub async fn deliver_or_later(
        &self,
        channel: &str,
        target: &str,
        text: &str,
    ) -> Result<(), DeliveryError> {
        let door = self
            .get(channel)
            .ok_or_else(|| DeliveryError::NoChannel(channel.to_string()))?;
        match door.deliver(target, text).await {
            Err(DeliveryError::Unreachable(why)) => match door.later(target) {
                Some(later) => door.deliver(&later, text).await,
                None => Err(DeliveryError::Unreachable(why)),
            },
            other => other,
        }
    }
}

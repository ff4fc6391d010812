//! The channel contract: what every channel (QQ, voice, CLI) is to the kernel.
//!
//! A channel is started by the gateway in a loop ([`Channel::start`]) with the kernel
//! and a cancellation token; it turns its transport into [`crate::turn::Turn`]s for
//! [`crate::kernel::Kernel::submit`] and delivers the replies itself. What it hands back
//! ([`Started`]) is the addresses it bound and, when it can speak unasked, its
//! **outbound door**: a handle the kernel registers under the channel's name, so any actor
//! (the Cron next) can deliver "to QQ group 5550001" or "to satellite kitchen" without
//! knowing the channel's internals. Doors are bounded: a full one refuses with
//! [`DeliveryError::Busy`] rather than growing.
//!
//! The kernel knows only this module; it never imports `channels/`.

use crate::kernel::Kernel;
use async_trait::async_trait;
use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use tokio_util::sync::CancellationToken;

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
}

/// What a started channel reports.
#[derive(Default)]
pub struct Started {
    /// Each server it bound: a label (`qq`, `wyoming`, `voice-ws`) and the address, as
    /// logged by the gateway (`channel listening`), so ports chosen with `:0` can be found.
    pub bound: Vec<(&'static str, SocketAddr)>,
    /// Its outbound door, if it can speak unasked.
    pub outbound: Option<Arc<dyn Outbound>>,
}

/// Why a channel did not start: which one, where, and the cause.
#[derive(Debug, thiserror::Error)]
#[error("{channel}: cannot listen on {addr}: {source}")]
pub struct StartError {
    pub channel: &'static str,
    pub addr: String,
    #[source]
    pub source: std::io::Error,
}

impl StartError {
    pub fn new(channel: &'static str, addr: impl Into<String>, source: std::io::Error) -> Self {
        Self {
            channel,
            addr: addr.into(),
            source,
        }
    }
}

/// One channel, as the gateway sees it.
#[async_trait]
pub trait Channel: Send {
    /// `qq`, `voice`, `cli`: the name turns carry and doors are registered under.
    fn name(&self) -> &'static str;

    /// Bind and spawn the channel's tasks (with [`Kernel::spawn_service`]); return at once.
    /// Everything stops when `cancel` fires.
    async fn start(
        self: Box<Self>,
        kernel: Kernel,
        cancel: CancellationToken,
    ) -> Result<Started, StartError>;
}

/// The outbound doors of the running channels, by channel name.
#[derive(Default)]
pub struct Doors(Mutex<HashMap<String, Arc<dyn Outbound>>>);

impl Doors {
    pub fn register(&self, channel: &str, door: Arc<dyn Outbound>) {
        self.0
            .lock()
            .expect("doors lock is never poisoned")
            .insert(channel.to_string(), door);
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
}

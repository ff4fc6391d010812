//! The channel contract: what every channel (QQ, voice, CLI) is to the gateway.
//!
//! A channel is started by the gateway in a loop ([`Channel::start`], see
//! `channels::start_enabled`) with its narrow view of the kernel ([`ChannelCtx`]: submit a
//! turn, the task groups, its own cancel token, presence, the configuration); it turns its
//! transport into [`crate::turn::Turn`]s for [`ChannelCtx::submit`] and
//! delivers the replies itself. What it hands back ([`Started`]) is the addresses it bound
//! and what it provides ([`Provides`]): its outbound door ([`crate::outbound::Outbound`])
//! when it can speak unasked, the house ([`crate::home::Home`]) and its satellites
//! ([`crate::channels::spoken::Satellites`]) when it holds Home Assistant, and HTTP routes
//! for the one HTTP server. The gateway resolves them once every channel has started: no
//! channel depends on another's start order.

use super::ctx::ChannelCtx;
use crate::channels::spoken::Satellites;
use crate::home::Home;
use crate::outbound::Outbound;
use async_trait::async_trait;
use std::net::SocketAddr;
use std::sync::Arc;

/// What a started channel reports.
#[derive(Default)]
pub struct Started {
    /// Each server it bound: a label (`qq`, `wyoming`, `voice-ws`) and the address, as
    /// logged by the gateway (`channel listening`), so ports chosen with `:0` can be found.
    pub bound: Vec<(&'static str, SocketAddr)>,
    pub provides: Provides,
}

impl Started {
    /// A channel that provides its door only.
    pub fn door(door: Arc<dyn Outbound>) -> Self {
        Self {
            bound: Vec::new(),
            provides: Provides {
                door: Some(door),
                ..Default::default()
            },
        }
    }
}

/// What a started channel provides to the rest of the process.
#[derive(Default)]
pub struct Provides {
    /// Its outbound door, if it can speak unasked (registered under the channel's name).
    pub door: Option<Arc<dyn Outbound>>,
    /// The house, if it holds Home Assistant (the home tools and the fast path).
    pub home: Option<Arc<dyn Home>>,
    /// Home Assistant's satellites (the voice channel and the spoken kit).
    pub satellites: Option<Arc<dyn Satellites>>,
    /// Routes for the one HTTP server (`[http] listen`), each checking its own token: the
    /// dashboard's owner token does not open them, nor do they open the dashboard.
    pub routes: Option<axum::Router>,
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

    /// Bind and spawn the channel's tasks (with [`ChannelCtx::tasks`]:
    /// `spawn_in(Group::Service, …)`); return at once. What it provides is resolved after
    /// every channel has started. Everything stops when [`ChannelCtx::cancel`] fires.
    async fn start(self: Box<Self>, ctx: ChannelCtx) -> Result<Started, StartError>;
}

//! The channel contract: what every channel (QQ, voice, CLI) is to the gateway.
//!
//! A channel is started by the gateway in a loop ([`Channel::start`], see
//! `channels::start_enabled`) with the kernel and a cancellation token; it turns its
//! transport into [`crate::turn::Turn`]s for [`crate::kernel::Kernel::submit`] and
//! delivers the replies itself. What it hands back ([`Started`]) is the addresses it bound
//! and, when it can speak unasked, its outbound door ([`crate::outbound::Outbound`]),
//! which the gateway registers with the kernel.

use crate::kernel::Kernel;
use crate::outbound::Outbound;
use async_trait::async_trait;
use std::net::SocketAddr;
use std::sync::Arc;
use tokio_util::sync::CancellationToken;

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

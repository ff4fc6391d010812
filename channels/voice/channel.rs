//! [`VoiceChannel`]: the voice channel's configuration before it starts, and the start —
//! the voice actor, then each configured front door (the Wyoming service, the satellite
//! WebSocket) with its connection cap inside the descriptor budget. Home Assistant is a
//! channel of its own; voice speaks through its client when it runs (the [`HaSlot`] its
//! channel filled, as it starts first).

use super::actor::VoiceActor;
use super::handle::{Shared, Voice};
use super::turn::CHANNEL;
use crate::channels::contract::{Channel, StartError, Started};
use crate::channels::home_assistant::HaSlot;
use crate::config::VoiceConfig;
use crate::kernel::Kernel;
use actix::Addr;
use std::sync::Arc;
use tokio_util::sync::CancellationToken;
use tracing::warn;

/// The voice channel before it starts: its configuration.
pub struct VoiceChannel {
    cfg: VoiceConfig,
    ha: HaSlot,
}

impl VoiceChannel {
    pub fn new(cfg: VoiceConfig) -> Self {
        Self {
            cfg,
            ha: HaSlot::default(),
        }
    }

    /// Speak through Home Assistant's satellites too, once its channel has started.
    pub fn with_home_assistant(mut self, ha: HaSlot) -> Self {
        self.ha = ha;
        self
    }
}

#[async_trait::async_trait]
impl Channel for VoiceChannel {
    fn name(&self) -> &'static str {
        CHANNEL
    }

    /// Start the configured servers: Wyoming (`wyoming`) and the native WebSocket
    /// (`voice-ws`), each with its connection cap inside the descriptor budget.
    async fn start(
        self: Box<Self>,
        kernel: Kernel,
        cancel: CancellationToken,
    ) -> Result<Started, StartError> {
        let cfg = Arc::new(self.cfg);
        let actor = start_actor(&kernel, &cfg, &cancel)?;
        let slot = self.ha;
        let ha = slot.get();
        let ch = Voice::new(Shared {
            kernel: kernel.clone(),
            cfg: cfg.clone(),
            cancel,
            actor,
            frame_warnings: crate::netutil::LogThrottle::new(crate::netutil::LOG_EVERY),
            streams: kernel.provider().streams(),
            ha,
        });
        warn_over_budget(&cfg);
        let mut started = Started::default();
        if let Some(listen) = &cfg.wyoming_listen {
            started.bound.push(ch.serve_wyoming(listen).await?);
        }
        if let Some(listen) = &cfg.ws_listen {
            started.bound.push(ch.serve_satellites(listen).await?);
        }
        // what Home Assistant cannot say now waits for that satellite's next turn here
        slot.hold_with(Arc::new(ch.clone()));
        started.outbound = Some(Arc::new(ch));
        Ok(started)
    }
}

/// The voice actor, on its own thread (`homebot-voice`).
fn start_actor(
    kernel: &Kernel,
    cfg: &Arc<VoiceConfig>,
    cancel: &CancellationToken,
) -> Result<Addr<VoiceActor>, StartError> {
    let cfg = cfg.clone();
    let presence = kernel.presence().clone();
    kernel
        .lifecycle()
        .start_actor_until("homebot-voice", cancel.clone(), move || {
            VoiceActor::new(cfg, presence)
        })
        .map_err(|e| StartError::new(CHANNEL, "-", e))
}

/// Say so when the configured connection caps exceed the descriptor budget.
fn warn_over_budget(cfg: &VoiceConfig) {
    let budget = crate::netutil::fd_budget();
    let caps = cfg
        .wyoming_listen
        .as_ref()
        .map_or(0, |_| cfg.wyoming_max_connections)
        + cfg.ws_listen.as_ref().map_or(0, |_| cfg.ws_max_connections);
    if caps > budget.cap() {
        warn!(
            caps,
            budget = budget.cap(),
            "voice connection caps exceed the descriptor budget; connections beyond it are refused"
        );
    }
}

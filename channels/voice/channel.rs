//! [`VoiceChannel`]: the voice channel's configuration before it starts, and the start —
//! the voice actor, then each configured front door (the Wyoming service, the satellite
//! WebSocket) with its connection cap inside the descriptor budget. Home Assistant is a
//! channel of its own; voice reaches its satellites through the port its channel
//! provides (resolved once every channel has started, through the spoken kit).

use super::actor::VoiceActor;
use super::handle::{Shared, Voice};
use super::turn::CHANNEL;
use super::ws::SatelliteWs;
use super::wyoming_service::WyomingService;
use crate::channels::contract::{Channel, StartError, Started};
use crate::channels::ctx::ChannelCtx;
use crate::channels::spoken::Spoken;
use crate::config::VoiceConfig;
use actix::Addr;
use std::sync::Arc;
use tracing::warn;

/// The voice channel before it starts: its configuration.
pub struct VoiceChannel {
    cfg: VoiceConfig,
    spoken: Spoken,
}

impl VoiceChannel {
    pub fn new(cfg: VoiceConfig, spoken: Spoken) -> Self {
        Self { cfg, spoken }
    }
}

#[async_trait::async_trait]
impl Channel for VoiceChannel {
    fn name(&self) -> &'static str {
        CHANNEL
    }

    /// Start the configured servers: Wyoming (`wyoming`) and the native WebSocket
    /// (`voice-ws`), each with its connection cap inside the descriptor budget.
    async fn start(self: Box<Self>, ctx: ChannelCtx) -> Result<Started, StartError> {
        let cfg = Arc::new(self.cfg);
        let actor = start_actor(&ctx, &cfg)?;
        let ch = Voice::new(Shared {
            cfg: cfg.clone(),
            cancel: ctx.cancel().clone(),
            actor,
            frame_warnings: crate::netutil::LogThrottle::new(crate::netutil::LOG_EVERY),
            streams: ctx.streams(),
            ctx,
            spoken: self.spoken,
        });
        warn_over_budget(&cfg);
        let mut started = Started::default();
        if let Some(listen) = &cfg.wyoming_listen {
            started
                .bound
                .push(WyomingService::new(ch.clone()).serve(listen).await?);
        }
        if let Some(listen) = &cfg.ws_listen {
            started
                .bound
                .push(SatelliteWs::new(ch.clone()).serve(listen).await?);
        }
        started.provides.door = Some(Arc::new(ch));
        Ok(started)
    }
}

/// The voice actor, on its own thread (`homebot-voice`).
fn start_actor(ctx: &ChannelCtx, cfg: &Arc<VoiceConfig>) -> Result<Addr<VoiceActor>, StartError> {
    let cfg = cfg.clone();
    let presence = ctx.presence().clone();
    ctx.lifecycle()
        .start_actor_until("homebot-voice", ctx.cancel().clone(), move || {
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

//! [`HomeAssistantChannel`]: Home Assistant as a channel of its own — it starts the client
//! (the actor, which connects and reconnects by itself), delivers what its watches see,
//! and registers its door: a proactive message to an area or a satellite of Home
//! Assistant (`homebot announce --channel home_assistant --to 厨房`), its lines in
//! `homebot status`, and the home tools' and the fast path's way into the house.
//!
//! The voice channel speaks through the same client (a Wyoming turn's satellite, listening
//! again after a question): it reads the handle from the [`HaSlot`] this channel fills
//! when it starts, which is before voice (see `channels::enabled`).

use super::status::CHANNEL;
use super::turn::HELD;
use super::{watch, HaError, HomeAssistant};
use crate::channels::contract::{Channel, StartError, Started};
use crate::config::HomeAssistantConfig;
use crate::kernel::Kernel;
use crate::outbound::{DeliveryError, Outbound};
use std::sync::{Arc, OnceLock};
use tokio_util::sync::CancellationToken;

/// Where a message for one of Home Assistant's satellites waits when Home Assistant
/// cannot say it now: the voice channel, which says it before the reply of that
/// satellite's next turn (or announces it once Home Assistant is back). It registers
/// itself when it starts.
#[async_trait::async_trait]
pub trait Holder: Send + Sync {
    /// Hold `text` for `satellite`'s next turn (`""`: the next turn that has none) until
    /// it is said; delivered then.
    async fn hold(&self, satellite: &str, text: &str) -> Result<(), DeliveryError>;
}

/// Home Assistant's handle once its channel has started (empty before, and when it is
/// not configured), and the voice channel's [`Holder`] once voice has started. Cloning
/// shares both.
#[derive(Clone, Default)]
pub struct HaSlot {
    ha: Arc<OnceLock<HomeAssistant>>,
    holder: Arc<OnceLock<Arc<dyn Holder>>>,
}

impl HaSlot {
    /// The running client, if the channel started.
    pub fn get(&self) -> Option<HomeAssistant> {
        self.ha.get().cloned()
    }

    /// Where messages for a satellite wait (the voice channel, started once per process).
    pub fn hold_with(&self, holder: Arc<dyn Holder>) {
        let _ = self.holder.set(holder);
    }
}

/// Home Assistant before it starts: its configuration and where its handle goes.
pub struct HomeAssistantChannel {
    cfg: HomeAssistantConfig,
    slot: HaSlot,
}

impl HomeAssistantChannel {
    pub fn new(cfg: HomeAssistantConfig, slot: HaSlot) -> Self {
        Self { cfg, slot }
    }
}

#[async_trait::async_trait]
impl Channel for HomeAssistantChannel {
    fn name(&self) -> &'static str {
        CHANNEL
    }

    async fn start(
        self: Box<Self>,
        kernel: Kernel,
        cancel: CancellationToken,
    ) -> Result<Started, StartError> {
        let ha = HomeAssistant::start(
            self.cfg,
            kernel.lifecycle(),
            cancel.child_token(),
            kernel.presence().clone(),
        )
        .map_err(|e| StartError::new(CHANNEL, "-", e))?;
        if let Some(rx) = ha.take_watches() {
            kernel.spawn_service(watch::deliver(rx, kernel.clone(), cancel));
        }
        // started once per process: a second start would find the slot full and keep the first
        let _ = self.slot.ha.set(ha.clone());
        Ok(Started {
            bound: Vec::new(),
            outbound: Some(Arc::new(HaDoor {
                ha,
                slot: self.slot,
            })),
        })
    }
}

/// The Home Assistant channel's outbound door.
struct HaDoor {
    ha: HomeAssistant,
    slot: HaSlot,
}

#[async_trait::async_trait]
impl Outbound for HaDoor {
    /// Announce on a satellite of Home Assistant (its entity id) or on the satellites of
    /// an area (its name or id); delivered only when Home Assistant said it played.
    /// `held:<satellite>` waits for that satellite's next turn instead (through the
    /// voice channel's [`Holder`]).
    async fn deliver(&self, target: &str, text: &str) -> Result<(), DeliveryError> {
        if let Some(satellite) = target.strip_prefix(HELD) {
            return match self.slot.holder.get() {
                Some(holder) => holder.hold(satellite, text).await,
                None => Err(DeliveryError::Unreachable(format!(
                    "Home Assistant satellite {satellite:?} (nothing holds messages for its next turn: the voice channel is not running)"
                ))),
            };
        }
        say(&self.ha, target, &crate::channels::text::spoken(text)).await
    }

    /// A satellite Home Assistant cannot speak on now hears it on its next turn.
    fn later(&self, target: &str) -> Option<String> {
        (!target.starts_with(HELD)).then(|| format!("{HELD}{target}"))
    }

    /// Home Assistant's connection, version, entities and satellites.
    async fn status(&self) -> Vec<String> {
        self.ha.status().await.lines()
    }

    /// The home tools and the fast path reach the house through this client.
    fn home(&self) -> Option<Arc<dyn crate::home::Home>> {
        Some(Arc::new(self.ha.clone()))
    }
}

/// Announce `text` at `target` through Home Assistant, its failures as delivery errors
/// (the voice channel's door uses it for the satellites of its own turns too).
pub async fn say(ha: &HomeAssistant, target: &str, text: &str) -> Result<(), DeliveryError> {
    match ha.announce(target, text).await {
        Ok(_) => Ok(()),
        Err(HaError::UnknownTarget(t)) => Err(DeliveryError::BadTarget {
            channel: CHANNEL.into(),
            target: t,
            why: "neither an area nor a satellite of Home Assistant".into(),
        }),
        Err(e) => Err(DeliveryError::Unreachable(format!(
            "Home Assistant satellite {target:?} ({e})"
        ))),
    }
}

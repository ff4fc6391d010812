//! [`Satellites`]: the port through which the spoken kit and the voice channel reach the
//! satellites of Home Assistant (which one heard a Wyoming turn and in which room, making
//! it listen again, announcing on it). The Home Assistant channel provides it when
//! `[home_assistant]` is configured; the registry (`channels::ports`) hands it to whoever
//! asks once every channel has started.

use crate::outbound::DeliveryError;
use async_trait::async_trait;

/// The satellite a voice turn came from, and its room.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Located {
    pub entity_id: String,
    pub room: Option<String>,
}

/// Home Assistant's satellites, as the spoken channels use them.
#[async_trait]
pub trait Satellites: Send + Sync {
    /// Which satellite a turn comes from (by its satellite id or its device), and its room.
    async fn locate(
        &self,
        satellite_id: Option<String>,
        device_id: Option<String>,
    ) -> Option<Located>;

    /// Make `entity_id` listen again after a question (in the background).
    fn listen_again(&self, entity_id: String);

    /// Say `text` on a satellite (its entity id) or on the satellites of an area (its
    /// name or id); delivered only when Home Assistant said it played.
    async fn say(&self, target: &str, text: &str) -> Result<(), DeliveryError>;

    /// Changes each time Home Assistant is connected again with its rooms read (from now
    /// on).
    fn comebacks(&self) -> tokio::sync::watch::Receiver<u64>;
}

//! Home Assistant's satellites as the spoken channels' port
//! ([`crate::channels::spoken::Satellites`]), which this channel provides when it starts.

use super::{HomeAssistant, Located};
use crate::channels::spoken::Satellites;
use crate::outbound::DeliveryError;

#[async_trait::async_trait]
impl Satellites for HomeAssistant {
    async fn locate(
        &self,
        satellite_id: Option<String>,
        device_id: Option<String>,
    ) -> Option<Located> {
        HomeAssistant::locate(self, satellite_id, device_id).await
    }

    fn listen_again(&self, entity_id: String) {
        HomeAssistant::listen_again(self, entity_id)
    }

    async fn say(&self, target: &str, text: &str) -> Result<(), DeliveryError> {
        super::say(self, target, text).await
    }

    fn comebacks(&self) -> tokio::sync::watch::Receiver<u64> {
        HomeAssistant::comebacks(self)
    }
}

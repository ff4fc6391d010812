//! Listening again after a question. Home Assistant never keeps a satellite listening
//! for a Wyoming conversation agent (it sets no `continue_conversation` for one, whatever
//! `handled` says), so homebot asks for it: once the satellite has said the reply (its
//! state went back to `idle`), `assist_satellite.start_conversation` with no message
//! makes it listen for the answer. Satellites that cannot (Home Assistant refuses: in
//! 2025.4 only ESPHome and VoIP satellites support it, Wyoming satellites do not) are
//! remembered and not asked again; the refusal is logged once.

use super::{actor, frames, HaError, HomeAssistant};
use serde::de::IgnoredAny;
use std::time::Duration;
use tokio::time::Instant;
use tracing::{info, warn};

/// How long the satellite may take to say the reply before it is asked to listen.
pub const SAY_WITHIN: Duration = Duration::from_secs(60);
/// A satellite that never leaves `idle` within this did not say the reply itself (a
/// typed `conversation/process`); it is asked at once.
const BUSY_WITHIN: Duration = Duration::from_secs(3);
const POLL: Duration = Duration::from_millis(100);

impl HomeAssistant {
    /// In the background: make `entity_id` listen again once it has said the reply.
    pub fn listen_again(&self, entity_id: String) {
        let this = self.clone();
        self.tasks.spawn(async move {
            if let Err(e) = this.listen_again_now(&entity_id).await {
                tracing::debug!(satellite = %entity_id, error = %e, "not listening again");
            }
        });
    }

    /// Wait for the reply to be said, then ask; returns once Home Assistant answered.
    pub async fn listen_again_now(&self, entity_id: &str) -> Result<(), HaError> {
        let ask = |refused| actor::ListenAgain {
            entity_id: entity_id.to_string(),
            refused,
        };
        if !self.ask(ask(false)).await? {
            return Ok(());
        }
        let started = Instant::now();
        let mut busy = false;
        while started.elapsed() < SAY_WITHIN {
            let state = self
                .ask(actor::SatelliteState(entity_id.to_string()))
                .await?;
            match state.as_deref() {
                Some("idle") | None if busy || started.elapsed() >= BUSY_WITHIN => break,
                Some("idle") | None => {}
                Some(_) => busy = true,
            }
            tokio::time::sleep(POLL).await;
        }
        let body = frames::start_conversation(entity_id);
        match self.command::<IgnoredAny>(body).await {
            Ok(_) => {
                info!(satellite = %entity_id, "satellite listens again for the answer");
                Ok(())
            }
            Err(HaError::Refused(f)) => {
                warn!(satellite = %entity_id, error = %f, "Home Assistant cannot make this satellite listen again (not asked again until restart); the answer needs the wake word");
                self.ask(ask(true)).await?;
                Err(HaError::Refused(f))
            }
            Err(e) => Err(e),
        }
    }
}

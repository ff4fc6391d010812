//! Speaking unasked on Home Assistant speakers: `assist_satellite.announce` on the
//! satellites of a room (or one satellite by entity id); where a satellite cannot, a media
//! player of its room through `tts.speak` (with `home_assistant.tts_entity`). A message
//! counts as said only when Home Assistant's `result` is a success.

use super::{actor, frames, protocol, HaError, HomeAssistant};
use serde::de::IgnoredAny;
use std::time::Duration;
use tracing::{info, warn};

impl HomeAssistant {
    /// Say `text` in `target` — an area id or name, or a satellite entity id. Returns the
    /// entities that said it; an error when none did.
    pub async fn announce(&self, target: &str, text: &str) -> Result<Vec<String>, HaError> {
        let places = self.ask(actor::Resolve(target.to_string())).await?;
        if places.is_empty() {
            // before the first connection no room is known yet
            let st = self.status().await;
            if !st.connected {
                return Err(HaError::NotConnected(st.link));
            }
            return Err(HaError::UnknownTarget(protocol::short(target, 100)));
        }
        // Home Assistant answers an announcement once it was played
        let within = self.announce_timeout;
        let mut said = Vec::new();
        let mut last = None;
        for (satellite, players) in places {
            if !satellite.is_empty() {
                let body = frames::announce(&satellite, text);
                match self.command_within::<IgnoredAny>(within, body).await {
                    Ok(_) => {
                        info!(satellite = %satellite, "announced on a Home Assistant satellite");
                        said.push(satellite);
                        continue;
                    }
                    // nothing else will get through a connection that is not there
                    Err(e @ HaError::NotConnected(_)) => return Err(e),
                    Err(e) => {
                        warn!(satellite = %satellite, error = %e, "a satellite could not announce; trying its room's media player");
                        last = Some(e);
                    }
                }
            }
            if let Some(player) = self
                .speak_on_players(&players, text, within, &mut last)
                .await
            {
                said.push(player);
            }
        }
        match (said.is_empty(), last) {
            (false, _) => Ok(said),
            (true, Some(e)) => Err(e),
            (true, None) => Err(HaError::UnknownTarget(protocol::short(target, 100))),
        }
    }

    /// `tts.speak` on the first media player that takes it.
    async fn speak_on_players(
        &self,
        players: &[String],
        text: &str,
        within: Duration,
        last: &mut Option<HaError>,
    ) -> Option<String> {
        let tts = self.tts_entity.as_deref()?;
        for p in players {
            let body = frames::tts_speak(tts, p, text);
            match self.command_within::<IgnoredAny>(within, body).await {
                Ok(_) => {
                    info!(media_player = %p, "said through a Home Assistant media player");
                    return Some(p.clone());
                }
                Err(e) => {
                    warn!(media_player = %p, error = %e, "a media player could not speak");
                    *last = Some(e);
                }
            }
        }
        None
    }
}

//! A turn of Home Assistant's own conversation agent (the `homebot` custom integration's),
//! as the Home Assistant channel states it: the chat is HA's `conversation_id`; heard at a
//! satellite it is spoken, in that satellite's room, and what outlives the conversation
//! (an ended mode's carry) is kept under the satellite; typed in the HA app it is text,
//! read by one person. Its reminders ring on that satellite (the door's target is the
//! satellite's entity id); typed, they wait for the next turn ([`HELD`]).

use super::status::CHANNEL;
use crate::turn::facts::GUEST;
use crate::turn::{Audience, Facts, Modality, Trust, Turn};

/// `held:<satellite>`: a door target that waits for that satellite's next turn (or for
/// Home Assistant to be back) instead of announcing now; `held:` alone waits for the next
/// turn that has no satellite.
pub const HELD: &str = "held:";

/// What the channel vouches for: a member only through the household's mappings (HA's
/// user, or the satellite's opt-in speaker — resolved before), the speaker's own scene.
pub fn facts(speaker: &str, satellite: Option<&str>) -> Facts {
    let guest = speaker.is_empty() || speaker == GUEST;
    let (audience, modality) = match satellite {
        Some(_) => (Audience::Room, Modality::Speech),
        None => (Audience::Private, Modality::Text),
    };
    Facts {
        audience,
        modality,
        trust: if guest { Trust::Guest } else { Trust::Member },
        memory_peer: Some(if guest { GUEST } else { speaker }.to_string()),
        place: satellite.map(str::to_string),
        scenes: Vec::new(),
    }
}

/// The turn of `text` in HA's conversation `conversation` by `speaker` (a member id or
/// the guest, already resolved), heard at `satellite` (an `assist_satellite.*` entity)
/// or typed (`None`).
pub fn turn(
    conversation: impl Into<String>,
    speaker: impl Into<String>,
    text: impl Into<String>,
    satellite: Option<&str>,
) -> Turn {
    let speaker = speaker.into();
    let facts = facts(&speaker, satellite);
    let mut turn = Turn::new(CHANNEL, conversation, speaker, text, facts);
    turn.reply_to = Some(satellite.map_or_else(|| HELD.to_string(), str::to_string));
    turn
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn heard_at_a_satellite_or_typed() {
        let heard = turn("01jq", "mom", "你好", Some("assist_satellite.kitchen"));
        assert_eq!(heard.channel, CHANNEL);
        let f = heard.facts();
        assert_eq!(
            (f.audience, f.modality, f.trust),
            (Audience::Room, Modality::Speech, Trust::Member)
        );
        assert_eq!(f.place.as_deref(), Some("assist_satellite.kitchen"));
        assert_eq!(heard.reply_target(), "assist_satellite.kitchen");
        let typed = turn("01jq", GUEST, "你好", None);
        let f = typed.facts();
        assert_eq!(
            (f.audience, f.modality, f.trust),
            (Audience::Private, Modality::Text, Trust::Guest)
        );
        assert_eq!(
            (f.place.clone(), f.memory_peer.as_deref()),
            (None, Some(GUEST))
        );
        assert_eq!(typed.reply_target(), HELD);
    }
}

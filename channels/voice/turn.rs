//! A voice utterance as a turn: the channel's name, what it vouches for, the turn. Every
//! wake is a new session (the chat), so the identity a scene belongs to is the speaker the
//! household mapped, not the chat.

use crate::channels::spoken::GUEST;
pub use crate::channels::spoken::{HA_PREFIX, WYOMING_TARGET};
use crate::turn::{Audience, Facts, Modality, Trust, Turn};

/// The channel name voice turns carry, and the outbound door's.
pub const CHANNEL: &str = "voice";

/// What a speaker in a room vouches for: whoever is there hears the reply, spoken; a
/// member only when the household mapped the voice (`spoken::speaker_member`); the
/// speaker's own scene (a guest's is the guests').
pub fn facts(speaker: &str) -> Facts {
    let guest = speaker.is_empty() || speaker == GUEST;
    Facts {
        audience: Audience::Room,
        modality: Modality::Speech,
        trust: if guest { Trust::Guest } else { Trust::Member },
        memory_peer: Some(if guest { GUEST } else { speaker }.to_string()),
        place: None,
        scenes: Vec::new(),
    }
}

/// A voice turn of the session `session_id` by `speaker` (a member id or [`GUEST`],
/// already resolved).
pub fn turn(
    session_id: impl Into<String>,
    speaker: impl Into<String>,
    text: impl Into<String>,
) -> Turn {
    let speaker = speaker.into();
    let facts = facts(&speaker);
    Turn::new(CHANNEL, session_id, speaker, text, facts)
}

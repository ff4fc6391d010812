//! What the kernel needs to know about a turn, as types: who hears the answer (the
//! audience), how the user talks (the modality), what the channel vouches for about the
//! speaker (the trust), and whose scene memory it is (the memory peer).
//!
//! Channels state these facts when they build a turn (they know their groups, their
//! satellites and their members): a turn cannot be made without them. The kernel reads
//! them and never infers anything from a channel's name or a chat id.

use serde::{Deserialize, Serialize};

/// Who hears the reply.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Audience {
    /// A group chat: several people read every reply.
    Group,
    /// A private chat with one person.
    Private,
    /// A speaker in a room: whoever is there hears it.
    Room,
    /// The owner's terminal.
    Terminal,
    /// Anything else (a channel the registry does not know).
    Other,
}

/// How the user talks and hears.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Modality {
    Text,
    /// Spoken: replies are said aloud, so lists are read as words.
    Speech,
}

/// What the channel vouches for about the speaker.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Trust {
    /// Someone the channel cannot place (an unmapped voice, an unknown QQ user).
    Guest,
    /// A household member, as the channel's configuration maps them.
    Member,
    /// The owner: the terminal and the control socket of the machine.
    Owner,
}

/// The facts of one turn.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Facts {
    pub audience: Audience,
    pub modality: Modality,
    pub trust: Trust,
    /// Whose scene memory this turn belongs to (`None`: no identity worth a scene).
    pub memory_peer: Option<String>,
    /// Where what outlives the chat is kept, when not under the chat itself: a voice wake
    /// is a chat of its own, so an ended mode's carry is kept under the satellite that
    /// heard it and reaches the next wake there. `None`: the chat.
    pub place: Option<String>,
    /// Scene keys the channel states beside the turn's own (`chan:…/peer:…`): the room a
    /// turn is heard in, `room:厨房` ([`crate::memory::SceneKey::room`]), so what is said
    /// there is kept for the room and recalled there first. Empty: the turn's own key only.
    pub scenes: Vec<String>,
}

/// The speaker id of people a channel could not place.
pub const GUEST: &str = "guest";

impl Default for Facts {
    /// The least a turn can be: what a turn read from outside (the control socket's wire
    /// form) has until its channel states its facts — nobody's audience, text, a guest,
    /// no scene.
    fn default() -> Self {
        Self {
            audience: Audience::Other,
            modality: Modality::Text,
            trust: Trust::Guest,
            memory_peer: None,
            place: None,
            scenes: Vec::new(),
        }
    }
}

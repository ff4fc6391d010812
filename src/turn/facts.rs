//! What the kernel needs to know about a turn, as types: who hears the answer (the
//! audience), how the user talks (the modality), what the channel vouches for about the
//! speaker (the trust), and whose scene memory it is (the memory peer).
//!
//! Channels state these facts when they build a turn (they know their groups, their
//! satellites and their members). This file is also the kernel's channel registry: the
//! one place in `src/` that knows what a channel's name and chat id imply, for a turn
//! that arrives without facts (a turn over the control socket, a test's `Turn::new`).
//! Nothing else in `src/` compares a channel name or a chat-id prefix.

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
}

/// The speaker id of people a channel could not place.
pub const GUEST: &str = "guest";

/// The facts a turn of `channel`/`chat_id` by `speaker_id` has when its channel did not
/// state them: the kernel's registry of the channels it ships with.
pub fn defaults(channel: &str, chat_id: &str, speaker_id: &str) -> Facts {
    let trust = if speaker_id.is_empty() || speaker_id == GUEST {
        Trust::Guest
    } else {
        Trust::Member
    };
    let own_peer = (!chat_id.is_empty()).then(|| chat_id.to_string());
    match channel {
        "cli" => Facts {
            audience: Audience::Terminal,
            modality: Modality::Text,
            trust: Trust::Owner,
            memory_peer: own_peer,
        },
        "qq" => {
            let (audience, memory_peer) = if let Some(g) = chat_id.strip_prefix("group:") {
                (Audience::Group, Some(format!("group_{g}")))
            } else if let Some(u) = chat_id.strip_prefix("private:") {
                (Audience::Private, Some(format!("private_{u}")))
            } else {
                (Audience::Other, None)
            };
            Facts {
                audience,
                modality: Modality::Text,
                trust,
                memory_peer,
            }
        }
        // every wake is a new session: the trusted speaker is the identity, not the chat
        "voice" => Facts {
            audience: Audience::Room,
            modality: Modality::Speech,
            trust,
            memory_peer: Some(if speaker_id.is_empty() {
                GUEST.to_string()
            } else {
                speaker_id.to_string()
            }),
        },
        _ => Facts {
            audience: Audience::Other,
            modality: Modality::Text,
            trust,
            memory_peer: own_peer,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_registry_knows_the_shipped_channels() {
        let g = defaults("qq", "group:1027", "qq:5");
        assert_eq!((g.audience, g.trust), (Audience::Group, Trust::Member));
        assert_eq!(g.memory_peer.as_deref(), Some("group_1027"));
        let p = defaults("qq", "private:5", "mom");
        assert_eq!(p.audience, Audience::Private);
        assert_eq!(p.memory_peer.as_deref(), Some("private_5"));
        let v = defaults("voice", "sess-1", "guest");
        assert_eq!(
            (v.audience, v.modality, v.trust),
            (Audience::Room, Modality::Speech, Trust::Guest)
        );
        assert_eq!(v.memory_peer.as_deref(), Some("guest"));
        assert_eq!(
            defaults("voice", "sess-1", "dad").memory_peer.as_deref(),
            Some("dad")
        );
        let t = defaults("cli", "local", "mom");
        assert_eq!((t.audience, t.trust), (Audience::Terminal, Trust::Owner));
        let o = defaults("web", "x", "mom");
        assert_eq!((o.audience, o.trust), (Audience::Other, Trust::Member));
        assert_eq!(o.memory_peer.as_deref(), Some("x"));
        assert_eq!(defaults("qq", "weird", "mom").memory_peer, None);
    }
}

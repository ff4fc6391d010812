//! The spoken kit: what the two channels that answer by voice — the voice channel
//! (Wyoming, native satellites) and the Home Assistant channel (its conversation agent,
//! its satellites' announcements) — share, so neither reaches into the other:
//!
//! - [`held`] and its actor ([`actor`], thread `homebot-spoken`): messages held for a
//!   front end's next turn (a reminder for a satellite that cannot be spoken to now),
//!   said first by that front end's next turn; [`kit`]: the kit's handle ([`Spoken`], with
//!   its methods but delivery's) — starting it, and waiting until a held message is said,
//!   or Home Assistant is back to say it, or the fallback chat takes it;
//! - [`deliver`]: a turn's answer as `partial` frames, then the `reply` frame
//!   ([`frames`]), what was held said first;
//! - [`reply`]: a reply shaped for speech and whether to keep listening;
//!   [`speaker`]: who speaks (only the household's mappings make a member);
//! - [`satellites`]: the port to Home Assistant's satellites (provided by its channel,
//!   resolved by `channels::ports`).
//!
//! Fronts: a message is held under its front end's name — a native satellite's id,
//! [`WYOMING_TARGET`] for Wyoming speakers whose satellite is unknown, `ha:<entity id>`
//! ([`HA_PREFIX`]) for a satellite of Home Assistant.

pub mod actor;
pub mod deliver;
pub mod frames;
pub mod held;
pub mod kit;
pub mod reply;
pub mod satellites;
pub mod speaker;

pub use deliver::unsaid;
pub use frames::{ReplyFrame, SpokenOut};
pub use kit::{SayNow, Spoken};
pub use reply::{shape_reply, DialogueState, VoiceReply};
pub use satellites::{Located, Satellites};
pub use speaker::{or_satellite_member, speaker_member, GUEST};

/// The front of proactive messages for Wyoming speakers whose satellite is unknown: Home
/// Assistant cannot be spoken to unasked, so they wait for the next Wyoming turn.
pub const WYOMING_TARGET: &str = "wyoming";

/// `ha:<entity id>`: a Home Assistant satellite (the front of a Wyoming turn or an agent
/// turn whose satellite is known).
pub const HA_PREFIX: &str = "ha:";

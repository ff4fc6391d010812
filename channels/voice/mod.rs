//! The voice channel: kitchen speakers and satellites. Every wake is a new voice session
//! (`chat_id` = the session id), so outside a mode a wake starts with no history; inside
//! a run mode the mode's history continues it (the kernel does that, not this file).
//!
//! Two front doors:
//! - a **Wyoming handle service** (TCP) for Home Assistant Assist and Wyoming satellites:
//!   `describe` → `info` (one handle program, languages zh/en), `transcript` → `handled`
//!   or `not-handled`, `ping` → `pong`. Home Assistant opens a connection per utterance;
//!   any number are served at once, and a bad frame closes only its own connection;
//! - a **native WebSocket** (`/voice/ws`, JSON) for custom satellites, token-protected:
//!   `transcript` → `reply` with `dialogue_state`, and server-initiated `announce` to the
//!   satellite a proactive message is for. With `provider.stream = true` the reply is
//!   preceded by `partial` frames of whole sentences as the model writes them, and a
//!   new `transcript` or a `stop` from the satellite cancels its turn in flight (see
//!   `partial`). Wyoming keeps whole replies.
//!
//! Who speaks: a speaker id a front end reports is only a claim. It becomes a member
//! only through a mapping the household configured for that front end —
//! `voice.wyoming_speakers` for Wyoming (which has no authentication), a satellite's
//! `speakers` for a satellite that proved itself with a token — and never by matching a
//! member id; everyone else is `guest`.
//!
//! Layout: `channel` — [`VoiceChannel`] and the start; `handle` — [`Voice`], the running
//! channel's handle, and every method of it (turns in, replies out, a satellite's turn
//! with its partial-text sink, saying a message through Home Assistant); `door` — the
//! outbound door (the `Outbound` trait over `Voice`); `actor` — the voice actor, the one
//! owner of the channel's state, `satellites` (which connection holds which satellite
//! id); `wyoming_service` — `WyomingService`, the Wyoming handle
//! service's server and connections; `ws` — `SatelliteWs`, the satellite WebSocket's
//! server; `partial` — a satellite's turns in flight; `frames` — the satellite frames;
//! `turn` — a voice turn; `wyoming` and `wyoming_events` — the framing and its events.
//! What voice shares with Home Assistant (messages held for a front end's next turn, an
//! answer's partial frames, reply shaping, who speaks) is the spoken kit
//! (`channels/spoken/`).
//!
//! `dialogue_state`: the model is told (in the dynamic tail, never the system prompt) to
//! end with a question and the marker `[[继续]]` when it needs an answer. The marker is
//! stripped; a reply ending in a question also counts as `continue`. For Wyoming the
//! state travels in `handled.context.dialogue_state`, but Home Assistant ignores it (and a
//! trailing question mark) for a Wyoming agent: with `[home_assistant]` configured, the
//! satellite is asked to listen again through Home Assistant (see
//! `channels::home_assistant`), which also lets a Wyoming turn know its room and lets a
//! reminder set by voice ring on that room's satellite.

mod actor;
mod channel;
mod door;
mod frames;
mod handle;
mod partial;
mod satellites;
mod turn;
mod ws;
pub mod wyoming;
mod wyoming_events;
mod wyoming_service;

pub use crate::channels::spoken::{shape_reply, speaker_member, DialogueState, VoiceReply, GUEST};
pub use channel::VoiceChannel;
pub use handle::Voice;
pub use turn::{facts, turn, CHANNEL, HA_PREFIX, WYOMING_TARGET};
pub use ws::WS_PATH;

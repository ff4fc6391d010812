//! Acting on the home through Home Assistant: the state and rules behind the tools
//! `home_state` and `home_control` (the tools themselves: `tools.rs` beside this file,
//! offered only while `[home_assistant]` is configured) and behind the fast path
//! (`fast_path.rs`: a plain sentence goes to Home Assistant's own agent first).
//!
//! The kernel never imports `channels/`: Home Assistant reaches it through the [`Home`]
//! door defined here, which a running channel hands over with its outbound door (see
//! [`crate::outbound::Outbound::home`]). [`HomeAccess`] is the kernel's side: the
//! permission rules of `[home_assistant]` (allowed domains, confirmations, guests) and the
//! confirmations waiting for an answer. What Home Assistant says — entity ids, names,
//! states — is text for the model, never instructions: it is cleaned and bounded here
//! before the model sees it.

use crate::config::{Config, HomeAssistantConfig};
use crate::outbound::Doors;
use serde_json::Value;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Instant;

pub use crate::home::{Converse, Home, HomeEntity};

/// A service call waiting for its asker's answer (`home_control`'s confirmation).
#[derive(Debug, Clone)]
pub struct Pending {
    pub speaker: String,
    pub entity_id: String,
    pub service: String,
    pub data: Value,
    pub turn_id: crate::modes::mode_core::TurnId,
    pub at: Instant,
}

pub const STATE: &str = "home_state";
pub const CONTROL: &str = "home_control";
/// Lines `home_state` shows at most.
pub const MAX_LINES: usize = 50;
/// Confirmations waiting at once (the oldest goes first).
pub const MAX_PENDING: usize = 64;

/// The kernel's side of Home Assistant: the rules of `[home_assistant]` and the
/// confirmations waiting for an answer. One per kernel.
pub struct HomeAccess {
    pub(crate) doors: Arc<Doors>,
    pub(crate) cfg: HomeAssistantConfig,
    /// Every id that names a household member (member ids, QQ ids, speaker ids).
    pub(crate) members: Vec<String>,
    /// chat key → the service call waiting for its asker's "确认".
    pub(crate) pending: Mutex<HashMap<String, Pending>>,
    /// `logs/audit` of the workspace (fast-path turns are recorded there).
    pub(crate) audit_dir: std::path::PathBuf,
    pub(crate) tz: crate::zone::Zone,
}

impl HomeAccess {
    pub fn new(doors: Arc<Doors>, cfg: &Config, audit_dir: std::path::PathBuf) -> Self {
        let members = cfg
            .members
            .iter()
            .flat_map(|m| {
                std::iter::once(m.id.clone())
                    .chain(m.qq_ids.iter().cloned())
                    .chain(m.speaker_ids.iter().cloned())
            })
            .collect();
        Self {
            doors,
            cfg: cfg.home_assistant.clone(),
            members,
            pending: Mutex::new(HashMap::new()),
            audit_dir,
            tz: cfg.timezone(),
        }
    }

    pub fn enabled(&self) -> bool {
        self.cfg.enabled()
    }

    /// The door, once the channel that holds Home Assistant runs.
    pub fn door(&self) -> Option<Arc<dyn Home>> {
        self.doors.home()
    }

    /// A guest: the channel vouches for nobody, or the speaker is neither the owner
    /// (the terminal) nor one of the household's configured members.
    pub fn is_guest(&self, turn: &crate::turn::Turn) -> bool {
        use crate::turn::Trust;
        match turn.facts().trust {
            Trust::Guest => true,
            Trust::Owner => false,
            Trust::Member => !self.members.contains(&turn.speaker_id),
        }
    }

    /// What the home tools need to know of one turn (`None` when Home Assistant is not
    /// configured).
    pub fn turn_view(&self, turn: &crate::turn::Turn) -> Option<HomeTurn> {
        self.enabled().then(|| HomeTurn {
            guest: self.is_guest(turn),
            room: turn.room.clone(),
            chat: turn.chat_key(),
            speaker: turn.speaker_id.clone(),
        })
    }
}

/// What the home tools know of one turn: who asks, where.
#[derive(Clone)]
pub struct HomeTurn {
    pub guest: bool,
    /// The asker's room (a satellite's area).
    pub room: Option<String>,
    /// `channel:chat_id`
    pub chat: String,
    pub speaker: String,
}

/// A home tool's call: Home Assistant and the turn that calls it.
pub struct HomeEnv {
    pub access: Arc<HomeAccess>,
    pub guest: bool,
    /// The asker's room (a satellite's area).
    pub room: Option<String>,
    /// `channel:chat_id`
    pub chat: String,
    pub speaker: String,
}

impl HomeEnv {
    pub fn new(access: Arc<HomeAccess>, turn: &HomeTurn) -> Self {
        let t = turn.clone();
        Self {
            access,
            guest: t.guest,
            room: t.room,
            chat: t.chat,
            speaker: t.speaker,
        }
    }
}

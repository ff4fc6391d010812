//! What the strategies keep between turns, in `<workspace>/strategy/state.json`
//! (replaced atomically, 0600): the household's strategy (set by `/strategy`), a preset,
//! the custom instruction, the plan or spec waiting for confirmation, and the
//! `ask_user_choice` questions waiting for an answer (one per chat). It survives a
//! restart; a file that cannot be read is moved aside (`.corrupt`) and logged, never
//! deleted, and the household starts again from the defaults.

use crate::config::StrategyKind;
use crate::tools::choice::Asked;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

pub const STATE_DIR: &str = crate::workspace::STRATEGY_DIR;
pub const STATE_FILE: &str = "state.json";
/// Pending questions kept at once (one per chat); the oldest goes first.
pub const MAX_PENDING_CHOICES: usize = 64;

/// quick / standard / careful: strategy + thinking depth + tool rounds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Preset {
    Quick,
    Standard,
    Careful,
}

/// How much the model is told to think before acting.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Thinking {
    None,
    Standard,
    Deep,
}

impl Preset {
    pub fn parse(name: &str) -> Option<Self> {
        match name.trim().to_ascii_lowercase().as_str() {
            "quick" => Some(Preset::Quick),
            "standard" => Some(Preset::Standard),
            "careful" => Some(Preset::Careful),
            _ => None,
        }
    }
    pub fn name(self) -> &'static str {
        match self {
            Preset::Quick => "quick",
            Preset::Standard => "standard",
            Preset::Careful => "careful",
        }
    }
    pub fn strategy(self) -> StrategyKind {
        match self {
            Preset::Careful => StrategyKind::Plan,
            _ => StrategyKind::Build,
        }
    }
    pub fn thinking(self) -> Thinking {
        match self {
            Preset::Quick => Thinking::None,
            Preset::Standard => Thinking::Standard,
            Preset::Careful => Thinking::Deep,
        }
    }
    /// Tool round trips per turn (per step in Plan / Spec) as the presets define them: quick
    /// 10; the others name none, so the default (`agent.max_tool_rounds`, 25 unless
    /// configured) applies. Never more than `agent.max_tool_rounds` (see
    /// [`super::Effective::max_tool_rounds`]).
    pub fn max_tool_rounds(self) -> Option<u32> {
        match self {
            Preset::Quick => Some(10),
            Preset::Standard | Preset::Careful => None,
        }
    }
}

/// Plan or Spec.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum WorkKind {
    Plan,
    Spec,
}

/// A plan or spec shown to the household, waiting for "确认".
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PendingWork {
    pub kind: WorkKind,
    /// What was asked for.
    pub request: String,
    pub goal: String,
    /// What runs, in order (plan steps; a spec's deliverables, or its fallbacks).
    pub steps: Vec<String>,
    /// The validated document as the model gave it.
    pub doc: serde_json::Value,
    /// RFC 3339.
    pub made_at: String,
    pub channel: String,
    pub chat_id: String,
    pub speaker_id: String,
    #[serde(default)]
    pub session_id: Option<String>,
}

/// An `ask_user_choice` question waiting in a chat.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PendingChoice {
    pub asked: Asked,
    pub asker: String,
    pub asked_at: String,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct State {
    /// Set by `/strategy NAME`; `None`: `strategy.default` of the config.
    pub strategy: Option<StrategyKind>,
    /// The mode session that was active when `/strategy` was used (a mode's default
    /// strategy yields to it only inside that session).
    pub set_in_session: Option<String>,
    /// The preset whose thinking depth and tool-round cap apply. Set by `/strategy
    /// PRESET`; naming a strategy keeps it (a hot patch of the strategy alone).
    pub preset: Option<Preset>,
    pub custom_instruction: Option<String>,
    pub pending_work: Option<PendingWork>,
    /// chat key (`channel:chat_id`) → its open question.
    pub choices: BTreeMap<String, PendingChoice>,
}

pub fn path(workspace: &Path) -> PathBuf {
    workspace.join(STATE_DIR).join(STATE_FILE)
}

/// Read the state; a missing file is the default, an unreadable one is moved aside.
pub fn load(workspace: &Path) -> State {
    let p = path(workspace);
    let text = match std::fs::read_to_string(&p) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return State::default(),
        Err(e) => {
            tracing::warn!(path = %p.display(), error = %e, "strategy state unreadable; starting from the defaults");
            return State::default();
        }
    };
    match serde_json::from_str(&text) {
        Ok(s) => s,
        Err(e) => {
            let aside = crate::fsutil::move_aside(&p, "corrupt");
            tracing::warn!(path = %p.display(), error = %e, moved_to = ?aside.ok(), "strategy state is corrupt; moved aside, starting from the defaults");
            State::default()
        }
    }
}

/// Replace the state file atomically.
pub fn save(workspace: &Path, state: &State) -> std::io::Result<()> {
    let p = path(workspace);
    if let Some(dir) = p.parent() {
        crate::fsutil::create_private_dirs(dir)?;
    }
    let bytes = serde_json::to_vec_pretty(state).expect("the strategy state always serializes");
    crate::fsutil::write_atomic(&p, &bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn state_round_trips_and_a_corrupt_file_is_moved_aside() {
        let d = tempfile::tempdir().unwrap();
        assert_eq!(load(d.path()), State::default());
        let s = State {
            strategy: Some(StrategyKind::Reflect),
            custom_instruction: Some("说话温柔一点".into()),
            ..Default::default()
        };
        save(d.path(), &s).unwrap();
        assert_eq!(load(d.path()), s);
        std::fs::write(path(d.path()), "{\"strategy\":\"pl").unwrap();
        assert_eq!(load(d.path()), State::default());
        assert!(d.path().join("strategy/state.json.corrupt").exists());
    }
}

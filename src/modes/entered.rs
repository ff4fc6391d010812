//! `entered.json`: who entered a session and how, written into the session folder with
//! its frozen prompt when the mode is entered ([`super::mode_core::switching`]). The first record
//! of `conversation.jsonl` says who spoke first, which is not always who entered: a
//! `/mode enter` is not recorded, and the next turn may be someone else's. Sessions made
//! before this file existed have none; readers (the dashboard) fall back to the first
//! record then.

use serde::{Deserialize, Serialize};
use std::path::Path;

pub const ENTERED_FILE: &str = "entered.json";
/// Largest `entered.json` read (a few ids and names).
const MAX_BYTES: u64 = 4096;

/// How a mode was entered.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EnteredHow {
    /// A `/mode enter` command.
    Command,
    /// The `switch_mode` tool, its request checked against the speaker's words.
    Switch,
    /// A yes to the mode the backend offered.
    Offer,
}

/// Who asked for something: a turn's speaker and channel.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Entrant {
    pub speaker_id: String,
    /// The name the household gave the speaker, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub speaker_name: Option<String>,
    pub channel: String,
}

/// The content of `entered.json`. `by` is `None` for a command from no chat (the
/// kernel's own `command`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Entered {
    pub how: EnteredHow,
    #[serde(default)]
    pub by: Option<Entrant>,
}

impl Entered {
    /// Read `dir`'s `entered.json`; `None` when absent (an older session) or unreadable.
    pub fn read(dir: &Path) -> Option<Self> {
        use std::io::Read;
        let mut buf = Vec::new();
        std::fs::File::open(dir.join(ENTERED_FILE))
            .ok()?
            .take(MAX_BYTES)
            .read_to_end(&mut buf)
            .ok()?;
        serde_json::from_slice(&buf).ok()
    }

    pub fn to_json(&self) -> String {
        serde_json::to_string(self).expect("plain strings and an enum serialize")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_and_an_absent_file_is_none() {
        let d = tempfile::tempdir().unwrap();
        assert_eq!(Entered::read(d.path()), None);
        let e = Entered {
            how: EnteredHow::Command,
            by: Some(Entrant {
                speaker_id: "mom".into(),
                speaker_name: Some("妈妈".into()),
                channel: "qq".into(),
            }),
        };
        std::fs::write(d.path().join(ENTERED_FILE), e.to_json()).unwrap();
        assert_eq!(Entered::read(d.path()), Some(e));
        assert!(std::fs::read_to_string(d.path().join(ENTERED_FILE))
            .unwrap()
            .contains("\"how\":\"command\""));
    }
}

//! [`ToolServices`]: what the tools act through — the workspace's files, the
//! ModeManager, the reminders, Home Assistant — handed to each tool once, when the
//! registry is built at start. A tool holds its own services; the turn's [`ToolEnv`]
//! carries only what is true of one turn.
//!
//! [`ToolEnv`]: super::env::ToolEnv

use super::files::zones::FileAccess;
use super::home::access::HomeAccess;
use super::result::ToolResult;
use crate::cron::CronHandle;
use crate::modes::ModesHandle;
use std::path::PathBuf;
use std::sync::Arc;

/// The services of the household's tools.
#[derive(Clone)]
pub struct ToolServices {
    /// The workspace's zones (what may be read and written).
    pub files: Arc<FileAccess>,
    /// The ModeManager (`switch_mode`); `None` only in a registry built to show its
    /// definitions.
    pub modes: Option<ModesHandle>,
    /// The Cron actor (the reminder tools); `None` as `modes`.
    pub reminders: Option<CronHandle>,
    /// Home Assistant (`home_state`, `home_control`): offered only when configured.
    pub home: Option<Arc<HomeAccess>>,
}

impl ToolServices {
    /// Services that only name things: the writable folders as the file tools'
    /// descriptions say them, nothing to act through. For a registry built to show the
    /// definitions the model would see; a call on it is a tool error.
    pub fn describing(writable: &[String]) -> Self {
        let root = PathBuf::from("/");
        let writable = writable
            .iter()
            .map(|w| root.join(w.trim_end_matches('/')))
            .collect();
        Self {
            files: Arc::new(FileAccess {
                root,
                writable,
                readable_outside: Vec::new(),
                mode_knowledge: Vec::new(),
            }),
            modes: None,
            reminders: None,
            home: None,
        }
    }
}

/// The service a tool acts through, or the error its call gets without one.
pub fn service<'a, T>(s: &'a Option<T>, what: &str) -> Result<&'a T, ToolResult> {
    s.as_ref().ok_or_else(|| {
        ToolResult::err(format!(
            "error: {what} is not running here; nothing was done."
        ))
    })
}

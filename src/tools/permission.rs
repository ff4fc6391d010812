//! [`Permission`]: what a tool declares it does that not every call may do; the registry
//! checks it before the tool runs (see `tool`).

use super::env::ToolEnv;

/// What a tool does that the registry checks before it runs it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Permission {
    /// Changes how the whole household works (the run mode, the strategy): run only for a
    /// sender the channel lets switch modes (`Turn::may_switch_modes`); anyone else gets
    /// the tool's `Tool::refused`.
    SwitchModes,
    /// Writes files in the workspace: the bytes of each call (`Tool::bytes_to_write`)
    /// count against the turn's budget, `tools.max_write_bytes_per_turn`; a call that
    /// would pass it is refused unrun.
    WritesFiles,
}

impl Permission {
    /// Whether this turn's sender may have a tool that declares it run.
    pub fn granted(self, env: &ToolEnv) -> bool {
        match self {
            Permission::SwitchModes => env.may_switch_modes,
            // anyone: what a file tool may write is bounded by its zones and the budget
            Permission::WritesFiles => true,
        }
    }
}

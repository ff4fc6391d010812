//! Entering or exiting a mode (`SwitchAction`), and the verbs that count for each: the
//! built-in ones, then the mode's own (`verbs_for`, what the model is told).

use super::super::manifest::ModeManifest;

pub const DEFAULT_ENTER_VERBS: &[&str] = &["打开", "进入", "开始", "切换", "启用"];

pub const DEFAULT_EXIT_VERBS: &[&str] = &["关闭", "退出", "结束"];

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SwitchAction {
    #[default]
    Enter,
    Exit,
}

impl SwitchAction {
    pub fn as_str(self) -> &'static str {
        match self {
            SwitchAction::Enter => "enter",
            SwitchAction::Exit => "exit",
        }
    }
}

/// The verbs that count for `action` in this mode: the built-in ones, then the mode's own.
pub fn verbs_for(manifest: &ModeManifest, action: SwitchAction) -> Vec<String> {
    let (defaults, extra) = match action {
        SwitchAction::Enter => (DEFAULT_ENTER_VERBS, &manifest.enter_verbs),
        SwitchAction::Exit => (DEFAULT_EXIT_VERBS, &manifest.exit_verbs),
    };
    defaults
        .iter()
        .map(|v| v.to_string())
        .chain(extra.iter().map(|v| super::clause::normalize(v)))
        .collect()
}

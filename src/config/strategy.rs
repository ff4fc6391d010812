//! `[strategy]`: how the agent works — the household's default strategy and
//! the bounds of the Plan / Spec / Reflect flows and of pending choices. The names live
//! here, below every other module, so `mode.json` can name a default strategy too.

use super::ConfigError;
use serde::{Deserialize, Serialize};
use std::path::Path;

/// One of the six strategies. Serialized lowercase (`build`, `plan`, …).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum StrategyKind {
    /// Act directly (the plain tool loop).
    #[default]
    Build,
    /// A JSON plan → confirmation → steps → summary.
    Plan,
    /// A JSON spec (goal, requirements, constraints, acceptance, deliverables) → confirm →
    /// execute the deliverables.
    Spec,
    /// Draft → critical review → revision.
    Reflect,
    /// Must ask with `ask_user_choice` before a materially ambiguous choice.
    Assist,
    /// A persisted extra instruction.
    Custom,
}

impl StrategyKind {
    pub const ALL: [StrategyKind; 6] = [
        StrategyKind::Build,
        StrategyKind::Plan,
        StrategyKind::Spec,
        StrategyKind::Reflect,
        StrategyKind::Assist,
        StrategyKind::Custom,
    ];

    pub fn name(self) -> &'static str {
        match self {
            StrategyKind::Build => "build",
            StrategyKind::Plan => "plan",
            StrategyKind::Spec => "spec",
            StrategyKind::Reflect => "reflect",
            StrategyKind::Assist => "assist",
            StrategyKind::Custom => "custom",
        }
    }

    pub fn parse(name: &str) -> Option<Self> {
        let n = name.trim().to_ascii_lowercase();
        Self::ALL.into_iter().find(|k| k.name() == n)
    }
}

impl std::fmt::Display for StrategyKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct StrategyConfig {
    /// The strategy until someone runs `/strategy NAME` (a mode's `strategy` wins inside it).
    pub default: StrategyKind,
    /// Reflect: review + revision rounds after the draft.
    pub reflect_rounds: u32,
    /// Plan: most steps a plan may have.
    pub max_plan_steps: usize,
    /// A plan or spec not confirmed within this many hours is dropped.
    pub pending_hours: u64,
    /// A question of `ask_user_choice` not answered within this many minutes is dropped.
    pub choice_minutes: u64,
}

impl Default for StrategyConfig {
    fn default() -> Self {
        Self {
            default: StrategyKind::Build,
            reflect_rounds: 1,
            max_plan_steps: 8,
            pending_hours: 24,
            choice_minutes: 30,
        }
    }
}

impl StrategyConfig {
    /// Every number in range, or an error naming the key.
    pub fn validate(&self, path: &Path) -> Result<(), ConfigError> {
        let checks: [(&str, u64, u64, u64); 4] = [
            (
                "strategy.reflect_rounds",
                u64::from(self.reflect_rounds),
                1,
                3,
            ),
            ("strategy.max_plan_steps", self.max_plan_steps as u64, 1, 20),
            ("strategy.pending_hours", self.pending_hours, 1, 168),
            ("strategy.choice_minutes", self.choice_minutes, 1, 1440),
        ];
        for (key, v, min, max) in checks {
            if v < min || v > max {
                return Err(ConfigError::Invalid {
                    path: path.to_path_buf(),
                    key: key.into(),
                    message: format!("must be between {min} and {max}, got {v}"),
                });
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_section_parses_and_bounds_are_checked() {
        let c: StrategyConfig = toml::from_str("default = \"plan\"\nreflect_rounds = 2").unwrap();
        assert_eq!(c.default, StrategyKind::Plan);
        assert!(c.validate(Path::new("c.toml")).is_ok());
        let bad: StrategyConfig = toml::from_str("reflect_rounds = 9").unwrap();
        let e = bad.validate(Path::new("c.toml")).unwrap_err().to_string();
        assert!(e.contains("strategy.reflect_rounds"), "{e}");
        assert!(toml::from_str::<StrategyConfig>("default = \"yolo\"").is_err());
        assert!(toml::from_str::<StrategyConfig>("colour = 1").is_err());
        assert_eq!(StrategyKind::parse(" Reflect"), Some(StrategyKind::Reflect));
    }
}

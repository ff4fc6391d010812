//! The `[memory]` section: scene memory's thresholds, bounds and per-channel policy
//! (see `crate::memory`). Every number has a documented default and a range checked at
//! load time, so a value `config check` accepts cannot misbehave at run time.

use super::*;
use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::Path;

/// Whether a turn takes part in scene memory (`auto` / `none`).
#[derive(Debug, Clone, Copy, Deserialize, serde::Serialize, PartialEq, Eq, Default)]
#[serde(rename_all = "lowercase")]
pub enum ScenePolicy {
    /// Take part: fingerprint, evidence, scenes, recall (the default: scenes only add a
    /// way to find memories, they never change one).
    #[default]
    Auto,
    /// No features and no keys at all: the turn leaves no trace in the scene index and
    /// recalls nothing by scene. For internal signals (timers, system turns).
    None,
}

/// Channels whose turns are internal signals: they would otherwise each grow a scene
/// that pulls unrelated interactions together. `[memory.channels]` may still
/// name them.
pub const INTERNAL_CHANNELS: &[&str] = &["cron", "timer", "system", "kernel"];

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct MemoryConfig {
    /// Off: no database is opened, no tools change anything, nothing is recalled.
    pub enabled: bool,
    /// Weighted-Jaccard similarity at which a turn is "the same situation" as a piece of
    /// evidence (a scene emerges) or as a scene (it joins).
    pub join_threshold: f64,
    /// Similarity at which a wider scene's memories (`chan:qq` above a group) are recalled
    /// into the turn. A scene of the turn's own key is recalled whatever the similarity:
    /// with a room, the words, the time and the tools all unshared, its identity weighs
    /// 2.0 of 10.8 ≈ 0.185, below any useful threshold.
    pub recall_threshold: f64,
    /// Memories recalled into one request, at most.
    pub recall_max_memories: usize,
    /// Estimated tokens of the recalled block, at most.
    pub recall_max_tokens: usize,
    /// Content words (`topic` features) taken from one turn.
    pub max_topic_words: usize,
    /// Distinct `tool` features taken from one turn.
    pub max_tool_features: usize,
    /// Longest memory, in characters.
    pub max_content_chars: usize,
    /// Longest `memory_search` query, in characters.
    pub max_query_chars: usize,
    /// Memories kept in all; a commit beyond is refused with a clear error.
    pub max_memories: usize,
    /// Scenes kept in all; no new scene emerges beyond (evidence is still kept).
    pub max_scenes: usize,
    /// `memory_commit` calls one turn may make.
    pub max_commits_per_turn: usize,
    /// An unused scene–memory link loses half its strength in this many days.
    pub link_half_life_days: f64,
    /// A link weaker than this is removed (the memory stays, searchable by wording).
    pub link_floor: f64,
    /// Evidence (single occurrences that have not recurred) is forgotten after this many days.
    pub evidence_days: u32,
    /// Per-channel policy (`qq = "none"`); unnamed channels are `auto`, except the
    /// internal ones ([`INTERNAL_CHANNELS`]) which are `none`.
    pub channels: BTreeMap<String, ScenePolicy>,
    /// Per QQ group policy, by group number (`"1027" = "none"`): before the channel's,
    /// after a message's own marker (`#不记` / `#记`).
    pub groups: BTreeMap<String, ScenePolicy>,
    /// Recall by wording runs when scene recall found fewer memories than this (1: only
    /// when it found none; 0: never).
    pub wording_below: usize,
    /// Memories recalled by wording into one request, at most.
    pub wording_max_memories: usize,
    /// Estimated tokens of the wording block, at most.
    pub wording_max_tokens: usize,
    /// The share of the message's content words a memory must hold to be recalled by
    /// wording (a memory holding the whole message as a phrase always does).
    pub wording_min_score: f64,
}

impl Default for MemoryConfig {
    fn default() -> Self {
        Self {
            enabled: true,
            join_threshold: 0.3,
            recall_threshold: 0.2,
            recall_max_memories: 5,
            recall_max_tokens: 300,
            max_topic_words: 6,
            max_tool_features: 3,
            max_content_chars: 500,
            max_query_chars: 200,
            max_memories: 2000,
            max_scenes: 500,
            max_commits_per_turn: 5,
            link_half_life_days: 30.0,
            link_floor: 0.1,
            evidence_days: 30,
            channels: BTreeMap::new(),
            groups: BTreeMap::new(),
            wording_below: 1,
            wording_max_memories: 2,
            wording_max_tokens: 150,
            wording_min_score: 0.5,
        }
    }
}

impl MemoryConfig {
    /// The policy of a channel's turns when the turn itself does not say.
    pub fn policy_for(&self, channel: &str) -> ScenePolicy {
        match self.channels.get(channel) {
            Some(p) => *p,
            None if INTERNAL_CHANNELS.contains(&channel) => ScenePolicy::None,
            None => ScenePolicy::Auto,
        }
    }

    /// The policy a QQ group's turns take when the message does not say: the group's,
    /// else the channel's.
    pub fn policy_for_group(&self, channel: &str, group: &str) -> ScenePolicy {
        self.groups
            .get(group)
            .copied()
            .unwrap_or_else(|| self.policy_for(channel))
    }

    pub(super) fn validate(&self, path: &Path) -> Result<(), ConfigError> {
        let invalid = |key: &str, message: String| ConfigError::Invalid {
            path: path.to_path_buf(),
            key: format!("memory.{key}"),
            message,
        };
        for (key, v, lo, hi) in [
            ("join_threshold", self.join_threshold, 0.01, 1.0),
            ("recall_threshold", self.recall_threshold, 0.01, 1.0),
            (
                "link_half_life_days",
                self.link_half_life_days,
                0.01,
                3650.0,
            ),
            ("link_floor", self.link_floor, 0.0, 0.99),
            ("wording_min_score", self.wording_min_score, 0.01, 1.0),
        ] {
            if !(lo..=hi).contains(&v) {
                return Err(invalid(
                    key,
                    format!("must be between {lo} and {hi}, got {v}"),
                ));
            }
        }
        for (key, v, lo, hi) in [
            ("recall_max_memories", self.recall_max_memories, 0, 50),
            ("recall_max_tokens", self.recall_max_tokens, 0, 8000),
            ("max_topic_words", self.max_topic_words, 0, 32),
            ("max_tool_features", self.max_tool_features, 0, 16),
            ("max_content_chars", self.max_content_chars, 10, 10_000),
            ("max_query_chars", self.max_query_chars, 1, 2000),
            ("max_memories", self.max_memories, 1, 100_000),
            ("max_scenes", self.max_scenes, 1, 100_000),
            ("max_commits_per_turn", self.max_commits_per_turn, 0, 100),
            ("evidence_days", self.evidence_days as usize, 1, 3650),
            ("wording_below", self.wording_below, 0, 50),
            ("wording_max_memories", self.wording_max_memories, 0, 10),
            ("wording_max_tokens", self.wording_max_tokens, 0, 2000),
        ] {
            if !(lo..=hi).contains(&v) {
                return Err(invalid(
                    key,
                    format!("must be between {lo} and {hi}, got {v}"),
                ));
            }
        }
        for name in self.channels.keys() {
            if !is_safe_id(name) {
                return Err(invalid(
                    &format!("channels.{name}"),
                    "is not a channel name".into(),
                ));
            }
        }
        for group in self.groups.keys() {
            if group.is_empty() || group.len() > 20 || !group.bytes().all(|b| b.is_ascii_digit()) {
                return Err(invalid(
                    &format!("groups.{group}"),
                    "is not a QQ group number (digits only, at most 20)".into(),
                ));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(s: &str) -> Result<Config, ConfigError> {
        Config::parse(s, Path::new("/ws/config.toml"))
    }

    #[test]
    fn memory_section_parses_with_defaults_and_bounds() {
        let c = parse("").unwrap();
        assert_eq!(c.memory.join_threshold, 0.3);
        assert_eq!(c.memory.policy_for("qq"), ScenePolicy::Auto);
        assert_eq!(c.memory.policy_for("cron"), ScenePolicy::None);
        let c = parse("[memory.channels]\nqq = \"none\"\ncron = \"auto\"\n").unwrap();
        assert_eq!(c.memory.policy_for("qq"), ScenePolicy::None);
        assert_eq!(c.memory.policy_for("cron"), ScenePolicy::Auto);
        assert_eq!(c.memory.policy_for("timer"), ScenePolicy::None);
        for (bad, key) in [
            ("[memory]\njoin_threshold = 0.0\n", "memory.join_threshold"),
            (
                "[memory]\nmax_content_chars = 5\n",
                "memory.max_content_chars",
            ),
            (
                "[memory]\nrecall_max_memories = 51\n",
                "memory.recall_max_memories",
            ),
        ] {
            let e = parse(bad).unwrap_err().to_string();
            assert!(e.contains(&format!("key `{key}`")), "{bad}: {e}");
        }
        let e = parse("[memory.channels]\nqq = \"sometimes\"\n").unwrap_err();
        assert!(e.to_string().contains("sometimes"), "{e}");
    }

    #[test]
    fn a_group_sets_its_own_policy_before_the_channels() {
        let c = parse("[memory.channels]\nqq = \"none\"\n[memory.groups]\n\"1027\" = \"auto\"\n2048 = \"none\"\n").unwrap();
        assert_eq!(c.memory.policy_for_group("qq", "1027"), ScenePolicy::Auto);
        assert_eq!(c.memory.policy_for_group("qq", "2048"), ScenePolicy::None);
        assert_eq!(c.memory.policy_for_group("qq", "9"), ScenePolicy::None);
        let c = parse("[memory.groups]\n\"1027\" = \"none\"\n").unwrap();
        assert_eq!(c.memory.policy_for_group("qq", "9"), ScenePolicy::Auto);
        for bad in [
            "\"family\" = \"none\"",
            "\"123456789012345678901\" = \"none\"",
        ] {
            let e = parse(&format!("[memory.groups]\n{bad}\n"))
                .unwrap_err()
                .to_string();
            assert!(e.contains("memory.groups."), "{bad}: {e}");
            assert!(e.contains("QQ group number"), "{bad}: {e}");
        }
        let e = parse("[memory]\nwording_max_memories = 11\n")
            .unwrap_err()
            .to_string();
        assert!(e.contains("key `memory.wording_max_memories`"), "{e}");
        let e = parse("[memory]\nwording_min_score = 0\n")
            .unwrap_err()
            .to_string();
        assert!(e.contains("key `memory.wording_min_score`"), "{e}");
    }
}

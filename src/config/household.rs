//! `[household]` and its members: the name, the zone, the language, who is who on each
//! channel; and which ids may name a file.

use serde::Deserialize;

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Household {
    pub name: String,
    /// IANA time zone name; all recorded times use its offset.
    pub timezone: String,
    /// The dashboard's language: `zh` (default) or `en`.
    pub language: Language,
}

/// A language the household's pages are written in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum Language {
    #[default]
    Zh,
    En,
}

impl Default for Household {
    fn default() -> Self {
        Self {
            name: "家".into(),
            timezone: "Asia/Shanghai".into(),
            language: Language::Zh,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Member {
    pub id: String,
    #[serde(default)]
    pub name: Option<String>,
    #[serde(default)]
    pub qq_ids: Vec<String>,
    #[serde(default)]
    pub speaker_ids: Vec<String>,
    /// Home Assistant user ids that are this member (its conversation agent's turns).
    #[serde(default)]
    pub ha_user_ids: Vec<String>,
}

/// Ids used in file names: no separators, no `..`.
pub fn is_safe_id(s: &str) -> bool {
    !s.is_empty()
        && s != "."
        && s != ".."
        && s.len() <= 128
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
}

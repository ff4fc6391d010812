//! The Home Assistant add-on's options (`/data/options.json`, as `config.yaml`'s `schema`
//! has them), each checked with an error that names it; `addon` lays them over the
//! configuration.

use super::{ConfigError, Language, Member, Secret};
use serde_json::{Map, Value};
use std::path::Path;

/// Which LLM vendor the add-on talks to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AddonProvider {
    Deepseek,
    Openai,
    Anthropic,
    /// Any OpenAI-compatible endpoint (`base_url` required): Ollama, llama.cpp, …
    OpenaiCompatible,
}

/// The add-on's options, checked.
#[derive(Debug, Clone, PartialEq)]
pub struct AddonOptions {
    pub provider: AddonProvider,
    pub api_key: Option<Secret>,
    pub model: Option<String>,
    pub base_url: Option<String>,
    pub household_name: Option<String>,
    pub language: Option<Language>,
    pub timezone: Option<String>,
    /// Who is who: replaces `config.toml`'s `[[members]]` when any are given.
    pub members: Vec<Member>,
}

/// Members the option takes, at most.
pub const MAX_MEMBERS: usize = 50;
/// Ids in one member's comma-separated list, at most.
pub const MAX_MEMBER_IDS: usize = 20;

/// The option names, as `config.yaml`'s `schema` has them.
pub const OPTIONS: [&str; 8] = [
    "provider",
    "api_key",
    "model",
    "base_url",
    "household_name",
    "language",
    "timezone",
    "members",
];

impl AddonOptions {
    /// Check every option of `value` (the options file's JSON).
    pub fn parse(value: &Value, path: &Path) -> Result<Self, ConfigError> {
        let bad = |option: &str, message: String| ConfigError::AddonOption {
            path: path.to_path_buf(),
            option: option.to_string(),
            message,
        };
        let Some(map) = value.as_object() else {
            return Err(ConfigError::Parse {
                path: path.to_path_buf(),
                message: "the add-on's options must be a JSON object".into(),
            });
        };
        if let Some(k) = map.keys().find(|k| !OPTIONS.contains(&k.as_str())) {
            return Err(bad(
                k,
                format!("unknown option; the options are {}", OPTIONS.join(", ")),
            ));
        }
        let provider = match text(map, "provider").map_err(|m| bad("provider", m.to_string()))? {
            None => AddonProvider::Deepseek,
            Some(p) => match p.as_str() {
                "deepseek" => AddonProvider::Deepseek,
                "openai" => AddonProvider::Openai,
                "anthropic" => AddonProvider::Anthropic,
                "openai_compatible" => AddonProvider::OpenaiCompatible,
                other => {
                    return Err(bad(
                        "provider",
                        format!(
                        "{other:?} is not one of deepseek, openai, anthropic, openai_compatible"
                    ),
                    ))
                }
            },
        };
        let api_key = text(map, "api_key")
            .map_err(|m| bad("api_key", m.to_string()))?
            .map(Secret);
        let model = text(map, "model").map_err(|m| bad("model", m.to_string()))?;
        let base_url = text(map, "base_url").map_err(|m| bad("base_url", m.to_string()))?;
        if let Some(u) = &base_url {
            let host = u
                .strip_prefix("http://")
                .or_else(|| u.strip_prefix("https://"))
                .and_then(|r| r.split('/').next())
                .unwrap_or_default();
            if host.is_empty() || u.contains(char::is_whitespace) {
                return Err(bad("base_url", format!("must be an http:// or https:// URL with a host, like http://192.168.1.20:11434/v1, got {u:?}")));
            }
        }
        match provider {
            AddonProvider::OpenaiCompatible if base_url.is_none() => {
                return Err(bad("base_url", "openai_compatible needs the endpoint's URL (the part before /chat/completions)".into()));
            }
            AddonProvider::Openai if model.is_none() => {
                return Err(bad(
                    "model",
                    "openai needs a model name (for example gpt-4.1-mini)".into(),
                ));
            }
            AddonProvider::OpenaiCompatible => {}
            _ if api_key.is_none() => {
                return Err(bad(
                    "api_key",
                    "this provider needs an API key: set it in the add-on's Configuration tab"
                        .into(),
                ));
            }
            _ => {}
        }
        let household_name =
            text(map, "household_name").map_err(|m| bad("household_name", m.to_string()))?;
        if household_name
            .as_ref()
            .is_some_and(|n| n.chars().count() > 64)
        {
            return Err(bad("household_name", "at most 64 characters".into()));
        }
        let language = match text(map, "language").map_err(|m| bad("language", m.to_string()))? {
            None => None,
            Some(l) => Some(match l.as_str() {
                "zh" => Language::Zh,
                "en" => Language::En,
                other => return Err(bad("language", format!("{other:?} is not zh or en"))),
            }),
        };
        let timezone = text(map, "timezone").map_err(|m| bad("timezone", m.to_string()))?;
        if let Some(tz) = &timezone {
            if tz.parse::<crate::zone::Zone>().is_err() {
                return Err(bad(
                    "timezone",
                    format!("unknown IANA time zone {tz:?} (like Asia/Shanghai)"),
                ));
            }
        }
        let members = members(map).map_err(|(option, m)| bad(&option, m))?;
        Ok(Self {
            provider,
            api_key,
            model,
            base_url,
            household_name,
            language,
            timezone,
            members,
        })
    }
}

/// `members`: a list of `{id, name?, ha_user_ids?, qq_ids?}`, the id lists comma-separated
/// (the Supervisor's option schema nests two levels at most). The ids themselves are
/// checked with the rest of the configuration (`members[i].id` …).
fn members(map: &Map<String, Value>) -> Result<Vec<Member>, (String, String)> {
    let list = match map.get("members") {
        None | Some(Value::Null) => return Ok(Vec::new()),
        Some(Value::Array(list)) => list,
        Some(other) => return Err(("members".into(), format!("must be a list, got {other}"))),
    };
    if list.len() > MAX_MEMBERS {
        return Err(("members".into(), format!("at most {MAX_MEMBERS} members")));
    }
    list.iter()
        .enumerate()
        .map(|(i, v)| {
            let at = |field: &str| format!("members[{i}].{field}");
            let Some(m) = v.as_object() else {
                return Err((
                    format!("members[{i}]"),
                    format!("must be an object, got {v}"),
                ));
            };
            if let Some(k) = m.keys().find(|k| !MEMBER_FIELDS.contains(&k.as_str())) {
                return Err((
                    at(k),
                    format!("unknown field; a member has {}", MEMBER_FIELDS.join(", ")),
                ));
            }
            let id = text(m, "id")
                .map_err(|e| (at("id"), e.to_string()))?
                .ok_or_else(|| (at("id"), "a member needs an id (like mom)".to_string()))?;
            let ids = |field: &str| -> Result<Vec<String>, (String, String)> {
                let list: Vec<String> = text(m, field)
                    .map_err(|e| (at(field), e.to_string()))?
                    .map(|s| {
                        s.split([',', '，'])
                            .map(str::trim)
                            .filter(|s| !s.is_empty())
                            .map(String::from)
                            .collect()
                    })
                    .unwrap_or_default();
                if list.len() > MAX_MEMBER_IDS {
                    return Err((at(field), format!("at most {MAX_MEMBER_IDS} ids")));
                }
                Ok(list)
            };
            Ok(Member {
                id,
                name: text(m, "name").map_err(|e| (at("name"), e.to_string()))?,
                qq_ids: ids("qq_ids")?,
                speaker_ids: Vec::new(),
                ha_user_ids: ids("ha_user_ids")?,
            })
        })
        .collect()
}

/// A member's fields in the option.
const MEMBER_FIELDS: [&str; 4] = ["id", "name", "ha_user_ids", "qq_ids"];

/// An option that must be a string and is not: named by its type only, never its value
/// (it may be a key).
#[derive(Debug, thiserror::Error)]
#[error("must be a string, got {0}")]
struct NotAString(&'static str);

fn type_of(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "an object",
    }
}

/// A string option: absent, `null` and blank are unset; any other type is refused.
fn text(map: &Map<String, Value>, key: &str) -> Result<Option<String>, NotAString> {
    match map.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) if s.trim().is_empty() => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.trim().to_string())),
        Some(other) => Err(NotAString(type_of(other))),
    }
}

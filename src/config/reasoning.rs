//! `[provider] reasoning` (and each `[[provider.fallback]]`'s): how an endpoint's model is
//! asked for a reasoning depth when a strategy preset wants one (`quick` → the least,
//! `careful` → the most), and which way `auto` picks from the host, the dialect and the
//! model's name. A model with no known way is sent nothing: a local llama.cpp or Ollama
//! model would at best ignore the fields, at worst refuse the request.

use super::{is_deepseek, ModelChoice, ProviderKind};
use serde::Deserialize;
use std::fmt;

/// The configured value: `auto` (the default) or a way named outright.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum ReasoningSetting {
    #[default]
    Auto,
    None,
    Deepseek,
    Openai,
    Anthropic,
}

/// How the depth is sent to one endpoint, once `auto` is decided.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Reasoning {
    /// Nothing is sent; the prompt's sentence about thinking depth is all there is.
    #[default]
    None,
    /// DeepSeek's switch: `thinking: {type: enabled|disabled}` + `reasoning_effort`.
    Deepseek,
    /// OpenAI reasoning models (o1/o3/o4, gpt-5): `reasoning_effort` low / high.
    Openai,
    /// Anthropic thinking: `adaptive` for the models that prefer it (Claude 4.6 and
    /// later; 4.7 and later refuse a budget), else `enabled` with `budget_tokens`.
    Anthropic { adaptive: bool },
}

impl Reasoning {
    /// The way for an endpoint: the configured one, or `auto`'s guess.
    pub fn resolve(
        setting: Option<ReasoningSetting>,
        base_url: &str,
        kind: ProviderKind,
        model: &ModelChoice,
    ) -> Self {
        let name = model.name().unwrap_or_default().to_ascii_lowercase();
        match setting.unwrap_or_default() {
            ReasoningSetting::None => Reasoning::None,
            ReasoningSetting::Deepseek => Reasoning::Deepseek,
            ReasoningSetting::Openai => Reasoning::Openai,
            ReasoningSetting::Anthropic => Reasoning::Anthropic {
                adaptive: claude_version(&name).is_some_and(prefers_adaptive),
            },
            ReasoningSetting::Auto => auto(base_url, kind, &name),
        }
    }

    /// What the way does with the presets, for `homebot doctor`.
    pub fn describe(self) -> &'static str {
        match self {
            Reasoning::None => "not sent",
            Reasoning::Deepseek => "DeepSeek thinking switch (quick → off, careful → max effort)",
            Reasoning::Openai => "OpenAI reasoning_effort (quick → low, careful → high)",
            Reasoning::Anthropic { adaptive: false } => {
                "Anthropic extended thinking (quick → off, careful → a thinking budget)"
            }
            Reasoning::Anthropic { adaptive: true } => {
                "Anthropic adaptive thinking (quick → off, careful → adaptive at its default effort)"
            }
        }
    }
}

impl fmt::Display for Reasoning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Reasoning::None => "none",
            Reasoning::Deepseek => "deepseek",
            Reasoning::Openai => "openai",
            Reasoning::Anthropic { .. } => "anthropic",
        })
    }
}

/// `auto`: DeepSeek by its host or a `deepseek*` model; OpenAI's reasoning models by
/// name in the OpenAI dialect; Claude 3.7 and 4+ in the Anthropic dialect; else none.
fn auto(base_url: &str, kind: ProviderKind, name: &str) -> Reasoning {
    match kind {
        ProviderKind::Openai if is_deepseek(base_url) || name.starts_with("deepseek") => {
            Reasoning::Deepseek
        }
        ProviderKind::Openai
            if ["o1", "o3", "o4", "gpt-5"]
                .iter()
                .any(|p| name.starts_with(p)) =>
        {
            Reasoning::Openai
        }
        ProviderKind::Anthropic => match claude_version(name) {
            Some(v) if v >= (3, 7) => Reasoning::Anthropic {
                adaptive: prefers_adaptive(v),
            },
            _ => Reasoning::None,
        },
        ProviderKind::Openai => Reasoning::None,
    }
}

/// Claude 4.6 and later take `adaptive` (a budget is deprecated there and refused from 4.7).
fn prefers_adaptive(v: (u32, u32)) -> bool {
    v >= (4, 6)
}

/// A Claude model's (major, minor) from its name: `claude-3-7-sonnet-20250219` (the old
/// order) or `claude-sonnet-4-5`, `claude-opus-4-20250514`, `claude-sonnet-5` (the new
/// one; an 8-digit date is not a minor version).
pub fn claude_version(name: &str) -> Option<(u32, u32)> {
    let rest = name.strip_prefix("claude-")?;
    let parts: Vec<&str> = rest.split('-').collect();
    let small = |s: &str| (1..=2).contains(&s.len()) && s.bytes().all(|b| b.is_ascii_digit());
    let at = parts.iter().position(|p| small(p))?;
    let major: u32 = parts[at].parse().ok()?;
    let minor = parts
        .get(at + 1)
        .filter(|p| small(p))
        .and_then(|p| p.parse().ok())
        .unwrap_or(0);
    Some((major, minor))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn auto_of(url: &str, kind: ProviderKind, model: &str) -> Reasoning {
        Reasoning::resolve(None, url, kind, &ModelChoice(Some(model.into())))
    }

    #[test]
    fn auto_finds_the_way_from_the_host_the_dialect_and_the_model_name() {
        use ProviderKind::{Anthropic as A, Openai as O};
        let local = "http://127.0.0.1:8080/v1";
        for (url, kind, model, want) in [
            (
                "https://api.deepseek.com",
                O,
                "deepseek-chat",
                Reasoning::Deepseek,
            ),
            (
                "https://api.deepseek.com",
                O,
                "anything",
                Reasoning::Deepseek,
            ),
            (local, O, "deepseek-v4-flash", Reasoning::Deepseek),
            (local, O, "DeepSeek-R1", Reasoning::Deepseek),
            ("https://api.openai.com/v1", O, "o3-mini", Reasoning::Openai),
            ("https://api.openai.com/v1", O, "o1", Reasoning::Openai),
            ("https://api.openai.com/v1", O, "o4-mini", Reasoning::Openai),
            (
                "https://api.openai.com/v1",
                O,
                "gpt-5-mini",
                Reasoning::Openai,
            ),
            ("https://api.openai.com/v1", O, "gpt-4o", Reasoning::None),
            (local, O, "qwen2.5-7b-instruct", Reasoning::None),
            (local, O, "llama3.2", Reasoning::None),
            (local, A, "claude-3-5-sonnet-20241022", Reasoning::None),
            (local, A, "claude-3-opus-20240229", Reasoning::None),
            (
                local,
                A,
                "claude-3-7-sonnet-20250219",
                Reasoning::Anthropic { adaptive: false },
            ),
            (
                local,
                A,
                "claude-sonnet-4-20250514",
                Reasoning::Anthropic { adaptive: false },
            ),
            (
                local,
                A,
                "claude-opus-4-1",
                Reasoning::Anthropic { adaptive: false },
            ),
            (
                local,
                A,
                "claude-sonnet-4-5",
                Reasoning::Anthropic { adaptive: false },
            ),
            (
                local,
                A,
                "claude-haiku-4-5-20251001",
                Reasoning::Anthropic { adaptive: false },
            ),
            (
                local,
                A,
                "claude-opus-4-6",
                Reasoning::Anthropic { adaptive: true },
            ),
            (
                local,
                A,
                "claude-sonnet-5",
                Reasoning::Anthropic { adaptive: true },
            ),
            (local, A, "my-proxy-model", Reasoning::None),
            // a DeepSeek name in the Anthropic dialect is not DeepSeek's OpenAI switch
            (local, A, "deepseek-chat", Reasoning::None),
        ] {
            assert_eq!(auto_of(url, kind, model), want, "{url} {kind:?} {model}");
        }
        // no model configured: nothing to go by but the host
        let none = ModelChoice(None);
        assert_eq!(
            Reasoning::resolve(None, "http://127.0.0.1:1/v1", O, &none),
            Reasoning::None
        );
    }

    #[test]
    fn a_configured_way_overrides_auto() {
        let m = ModelChoice(Some("qwen2.5".into()));
        let url = "http://127.0.0.1:8080/v1";
        let o = ProviderKind::Openai;
        let r = |s| Reasoning::resolve(Some(s), url, o, &m);
        assert_eq!(r(ReasoningSetting::Deepseek), Reasoning::Deepseek);
        assert_eq!(r(ReasoningSetting::Openai), Reasoning::Openai);
        assert_eq!(r(ReasoningSetting::Auto), Reasoning::None);
        let ds = ModelChoice(Some("deepseek-chat".into()));
        assert_eq!(
            Reasoning::resolve(Some(ReasoningSetting::None), url, o, &ds),
            Reasoning::None
        );
        let opus = ModelChoice(Some("claude-opus-4-7".into()));
        assert_eq!(
            Reasoning::resolve(
                Some(ReasoningSetting::Anthropic),
                url,
                ProviderKind::Anthropic,
                &opus
            ),
            Reasoning::Anthropic { adaptive: true }
        );
    }

    #[test]
    fn claude_versions_read_both_name_orders_and_skip_dates() {
        assert_eq!(claude_version("claude-3-7-sonnet-20250219"), Some((3, 7)));
        assert_eq!(claude_version("claude-sonnet-4-20250514"), Some((4, 0)));
        assert_eq!(claude_version("claude-opus-4-1-20250805"), Some((4, 1)));
        assert_eq!(claude_version("claude-sonnet-5"), Some((5, 0)));
        assert_eq!(claude_version("claude-instant"), None);
        assert_eq!(claude_version("gpt-4o"), None);
    }
}

//! `mode.json`: a mode's declaration inside its skill folder. Unknown keys are an
//! error so that a typo is reported instead of silently ignored.

use serde::Deserialize;

#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct ModeManifest {
    /// Stable id, e.g. `cooking`; used in paths and in `switch_mode`.
    pub id: String,
    /// The name users say, e.g. `做饭模式`. Required in the user's words to switch.
    pub display_name: String,
    /// Compiled-in plugin to use (e.g. `plugin.rs:CookingMode`); absent = declarative.
    #[serde(default)]
    pub entrypoint: Option<String>,
    /// Other names that count as the display name (e.g. `cooking mode`).
    #[serde(default)]
    pub aliases: Vec<String>,
    /// Extra enter verbs, added to the built-in ones (打开 进入 开始 切换 启用).
    #[serde(default)]
    pub enter_verbs: Vec<String>,
    /// Extra exit verbs, added to the built-in ones (关闭 退出 结束).
    #[serde(default)]
    pub exit_verbs: Vec<String>,
    #[serde(default)]
    pub expiry: Option<ExpiryPolicy>,
    #[serde(default)]
    pub context: Option<ContextPolicy>,
    /// The agent strategy while this mode is active (`build`, `plan`, …), unless someone
    /// runs `/strategy` during the session.
    #[serde(default)]
    pub strategy: Option<crate::config::StrategyKind>,
    /// Whether homebot may offer this mode, and on which words (absent: never offered).
    #[serde(default)]
    pub offer: Option<OfferPolicy>,
    /// The mode this one is a sub-mode of (`"cooking"`): entered only while that mode is
    /// active, which it pauses; its conclusion goes back into the parent's history when
    /// it ends (see `mode_core::submode`). The parent must be a top-level mode.
    #[serde(default)]
    pub parent: Option<String>,
    /// Which mode is offered when someone's words (or an answer) fit two modes: the
    /// larger wins (default 0, [`MIN_PRIORITY`]..=[`MAX_PRIORITY`]).
    #[serde(default)]
    pub priority: i32,
    /// Learn examples from the household in this mode (absent: never); see
    /// [`super::examples`].
    #[serde(default)]
    pub examples: Option<ExamplesPolicy>,
}

/// `mode.json` `examples`: how many kept cases a new session gets (`use`, 1..=2) and how
/// many the mode keeps (`keep`, 1..=[`super::examples::store::MAX_KEEP`]).
#[derive(Debug, Clone, Copy, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct ExamplesPolicy {
    #[serde(rename = "use")]
    pub use_n: usize,
    pub keep: usize,
}

/// The most examples a session's prompt gets.
pub const MAX_EXAMPLES_USED: usize = 2;

/// The bounds of `priority`.
pub const MIN_PRIORITY: i32 = -1000;
pub const MAX_PRIORITY: i32 = 1000;

/// When a session ends by itself: at `at` (local time), `days_after_start` days after
/// the day it started. Default: 00:10 the next day.
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct ExpiryPolicy {
    #[serde(default = "default_expiry_at")]
    pub at: String,
    #[serde(default = "default_expiry_days")]
    pub days_after_start: u32,
}

fn default_expiry_at() -> String {
    "00:10".into()
}
fn default_expiry_days() -> u32 {
    1
}

impl Default for ExpiryPolicy {
    fn default() -> Self {
        Self {
            at: default_expiry_at(),
            days_after_start: default_expiry_days(),
        }
    }
}

impl ExpiryPolicy {
    pub fn time(&self) -> Result<chrono::NaiveTime, ManifestError> {
        chrono::NaiveTime::parse_from_str(&self.at, "%H:%M")
            .map_err(|_| ManifestError::ExpiryTime(self.at.clone()))
    }

    /// When a session started at `started` expires: `at` local time, `days_after_start`
    /// days after the start day (in a DST gap, the first valid time after it).
    pub fn after(
        &self,
        started: chrono::DateTime<chrono::FixedOffset>,
        tz: crate::zone::Zone,
    ) -> chrono::DateTime<chrono::FixedOffset> {
        use chrono::TimeZone;
        let day = started.with_timezone(&tz).date_naive()
            + chrono::Days::new(u64::from(self.days_after_start));
        let at = self
            .time()
            .expect("expiry time was validated when mode.json loaded");
        let naive = day.and_time(at);
        let local = tz
            .from_local_datetime(&naive)
            .earliest()
            .or_else(|| {
                tz.from_local_datetime(&(naive + chrono::Duration::hours(1)))
                    .earliest()
            })
            .unwrap_or_else(|| tz.from_utc_datetime(&naive));
        local.fixed_offset()
    }
}

/// Context policy: structured, labelled blocks of the frozen prompt.
#[derive(Debug, Clone, Deserialize, PartialEq, Default)]
#[serde(deny_unknown_fields)]
pub struct ContextPolicy {
    #[serde(default)]
    pub role: Option<String>,
    #[serde(default)]
    pub rules: Vec<String>,
    /// What each request in the mode is for, put in the tail as `[OBJECTIVE]`;
    /// `{query}` is replaced by the user's words.
    #[serde(default)]
    pub objective: Option<String>,
    /// Knowledge folders of this mode only (relative to the workspace).
    #[serde(default)]
    pub knowledge: Vec<KnowledgeSource>,
    /// At most this many records are replayed after the checkpoint; past it the
    /// session is compacted (and trimmed in chunks until it is).
    #[serde(default)]
    pub history_limit: Option<usize>,
    /// Replayed history (tokens) above which the session is compacted; default: the
    /// `[context] compact_at_percent` of the history budget.
    #[serde(default)]
    pub summary_threshold_tokens: Option<u32>,
    /// Carry the last session's model-written summary into a new session's frozen
    /// prompt as a marked "last time" block (default on).
    #[serde(default)]
    pub carry_over: Option<bool>,
    /// Tokens of retrieved knowledge snippets put in a request's dynamic tail (default
    /// [`DEFAULT_RETRIEVAL_TOKENS`]; 0 turns retrieval off).
    #[serde(default)]
    pub retrieval_tokens: Option<u32>,
    /// What the session's summary at its end should hold (this mode's words: dishes,
    /// allergies, …); the kernel's generic instruction otherwise.
    #[serde(default)]
    pub summary_instructions: Option<String>,
    /// What a compaction of this mode's history must keep; generic otherwise.
    #[serde(default)]
    pub compaction_instructions: Option<String>,
}

/// Default budget of the knowledge snippets retrieved for one request.
pub const DEFAULT_RETRIEVAL_TOKENS: u32 = 400;
/// The longest `context.objective` template.
pub const MAX_OBJECTIVE_CHARS: usize = 1000;
/// The longest `context.summary_instructions` / `compaction_instructions`.
pub const MAX_INSTRUCTIONS_CHARS: usize = 1000;
/// The most a mode may give its knowledge snippets per request.
pub const MAX_RETRIEVAL_TOKENS: u32 = 4000;

impl ContextPolicy {
    pub fn carries_over(&self) -> bool {
        self.carry_over.unwrap_or(true)
    }
    pub fn retrieval_tokens(&self) -> u32 {
        self.retrieval_tokens.unwrap_or(DEFAULT_RETRIEVAL_TOKENS)
    }
}

/// A knowledge folder of a mode: `path` inside the workspace, or inside the mode's own
/// skill folder when `in` is `"skill"` (knowledge that ships with the skill).
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct KnowledgeSource {
    pub name: String,
    pub path: String,
    #[serde(default, rename = "in")]
    pub root: KnowledgeRoot,
}

#[derive(Debug, Clone, Copy, Deserialize, PartialEq, Eq, Default)]
#[serde(rename_all = "lowercase")]
pub enum KnowledgeRoot {
    #[default]
    Workspace,
    Skill,
}

/// What is wrong with a `mode.json` (the caller adds the path).
#[derive(Debug, thiserror::Error)]
pub enum ManifestError {
    /// Not JSON, an unknown key, a value of the wrong type.
    #[error(transparent)]
    Json(#[from] serde_json::Error),
    #[error("id {0:?} must be letters, digits, '-', '_' or '.'")]
    Id(String),
    #[error("display_name must not be empty")]
    EmptyDisplayName,
    #[error("expiry.at must be HH:MM, got {0:?}")]
    ExpiryTime(String),
    #[error("expiry.days_after_start must be at least 1")]
    ExpiryDays,
    #[error("context.history_limit must be 1..=100000 records, got {0}")]
    HistoryLimit(usize),
    #[error("context.summary_threshold_tokens must be 100..=10000000, got {0}")]
    SummaryThreshold(u32),
    #[error("context.knowledge {name:?}: {why}")]
    Knowledge {
        name: String,
        why: KnowledgePathError,
    },
    #[error("context.objective must be at most {max} characters", max = MAX_OBJECTIVE_CHARS)]
    ObjectiveTooLong,
    /// `summary_instructions` or `compaction_instructions` given but blank.
    #[error("context.{0} must not be empty")]
    EmptyInstructions(&'static str),
    #[error("context.{0} must be at most {max} characters", max = MAX_INSTRUCTIONS_CHARS)]
    InstructionsTooLong(&'static str),
    #[error("context.retrieval_tokens must be at most {max}", max = MAX_RETRIEVAL_TOKENS)]
    RetrievalTokens,
    #[error("{0}")]
    OfferWords(WordsProblem),
    #[error("parent {0:?} must be another mode's id (letters, digits, '-', '_' or '.')")]
    Parent(String),
    #[error("a sub-mode is entered only by its own words: it cannot have `offer`")]
    SubModeOffered,
    #[error("priority must be {MIN_PRIORITY}..={MAX_PRIORITY}, got {0}")]
    Priority(i32),
    #[error("examples.use must be 1..={MAX_EXAMPLES_USED} and examples.keep 1..={max}, got use {0} and keep {1}", max = super::examples::store::MAX_KEEP)]
    Examples(usize, usize),
}

/// Why a knowledge folder of a mode is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum KnowledgePathError {
    #[error("a skill's knowledge path must be a relative folder inside the skill")]
    OutsideSkill,
    #[error("path must be relative to the workspace")]
    NotRelative,
    #[error("path must name a folder inside the workspace, not the workspace")]
    WholeWorkspace,
    #[error("{0:?} is a private or backend folder of the workspace")]
    Private(String),
}

impl ModeManifest {
    /// Parse and check a manifest; the error says what is wrong (the caller adds the path).
    pub fn parse(text: &str) -> Result<Self, ManifestError> {
        let m: ModeManifest = serde_json::from_str(text)?;
        if !crate::config::is_safe_id(&m.id) {
            return Err(ManifestError::Id(m.id));
        }
        if m.display_name.trim().is_empty() {
            return Err(ManifestError::EmptyDisplayName);
        }
        if let Some(o) = &m.offer {
            o.check().map_err(ManifestError::OfferWords)?;
        }
        if let Some(p) = &m.parent {
            if !crate::config::is_safe_id(p) || *p == m.id {
                return Err(ManifestError::Parent(p.clone()));
            }
            if m.offer.is_some() {
                return Err(ManifestError::SubModeOffered);
            }
        }
        if !(MIN_PRIORITY..=MAX_PRIORITY).contains(&m.priority) {
            return Err(ManifestError::Priority(m.priority));
        }
        if let Some(e) = m.examples {
            let keep_ok = (1..=super::examples::store::MAX_KEEP).contains(&e.keep);
            if !(1..=MAX_EXAMPLES_USED).contains(&e.use_n) || !keep_ok {
                return Err(ManifestError::Examples(e.use_n, e.keep));
            }
        }
        let expiry = m.expiry.clone().unwrap_or_default();
        expiry.time()?;
        if expiry.days_after_start == 0 {
            return Err(ManifestError::ExpiryDays);
        }
        if let Some(ctx) = &m.context {
            if let Some(l) = ctx.history_limit.filter(|l| !(1..=100_000).contains(l)) {
                return Err(ManifestError::HistoryLimit(l));
            }
            if let Some(t) = ctx
                .summary_threshold_tokens
                .filter(|t| !(100..=10_000_000).contains(t))
            {
                return Err(ManifestError::SummaryThreshold(t));
            }
            for k in &ctx.knowledge {
                let checked = match k.root {
                    KnowledgeRoot::Workspace => knowledge_path_ok(&k.path),
                    KnowledgeRoot::Skill => skill_path_ok(&k.path),
                };
                checked.map_err(|why| ManifestError::Knowledge {
                    name: k.name.clone(),
                    why,
                })?;
            }
            if ctx
                .objective
                .as_ref()
                .is_some_and(|o| o.chars().count() > MAX_OBJECTIVE_CHARS)
            {
                return Err(ManifestError::ObjectiveTooLong);
            }
            for (key, text) in [
                ("summary_instructions", &ctx.summary_instructions),
                ("compaction_instructions", &ctx.compaction_instructions),
            ] {
                match text.as_deref().map(str::trim) {
                    Some("") => return Err(ManifestError::EmptyInstructions(key)),
                    Some(t) if t.chars().count() > MAX_INSTRUCTIONS_CHARS => {
                        return Err(ManifestError::InstructionsTooLong(key))
                    }
                    _ => {}
                }
            }
            if ctx
                .retrieval_tokens
                .is_some_and(|t| t > MAX_RETRIEVAL_TOKENS)
            {
                return Err(ManifestError::RetrievalTokens);
            }
        }
        Ok(m)
    }

    pub fn expiry(&self) -> ExpiryPolicy {
        self.expiry.clone().unwrap_or_default()
    }

    /// A bare manifest: the id and the name only (a mode whose skill no longer loads).
    pub fn named(id: &str, display_name: &str) -> Self {
        Self {
            id: id.to_string(),
            display_name: display_name.to_string(),
            entrypoint: None,
            aliases: vec![],
            enter_verbs: vec![],
            exit_verbs: vec![],
            expiry: None,
            context: None,
            strategy: None,
            offer: None,
            parent: None,
            priority: 0,
            examples: None,
        }
    }
}

/// A knowledge folder inside the skill: a relative path that stays inside it.
fn skill_path_ok(path: &str) -> Result<(), KnowledgePathError> {
    let p = std::path::Path::new(path.trim());
    let inside = p.components().all(|c| {
        matches!(c, std::path::Component::Normal(n) if !n.to_string_lossy().starts_with('.'))
            || matches!(c, std::path::Component::CurDir)
    });
    let named = p
        .components()
        .any(|c| matches!(c, std::path::Component::Normal(_)));
    if !named || p.is_absolute() || !inside {
        return Err(KnowledgePathError::OutsideSkill);
    }
    Ok(())
}

/// A knowledge folder is a sub-folder of the workspace of its own: not the workspace
/// itself (that would close everything else to other modes), not a private zone.
fn knowledge_path_ok(path: &str) -> Result<(), KnowledgePathError> {
    let p = std::path::Path::new(path.trim());
    let parts: Vec<String> = p
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    if p.is_absolute() || parts.iter().any(|c| c == "..") {
        return Err(KnowledgePathError::NotRelative);
    }
    let parts: Vec<&String> = parts.iter().filter(|c| c.as_str() != ".").collect();
    let Some(top) = parts.first() else {
        return Err(KnowledgePathError::WholeWorkspace);
    };
    let top = top.to_lowercase();
    if top.starts_with('.')
        || crate::workspace::PRIVATE_ZONES
            .iter()
            .any(|z| top.starts_with(&z.to_lowercase()))
        || top == "modes"
        || top == "skills"
    {
        return Err(KnowledgePathError::Private(path.to_string()));
    }
    Ok(())
}

/// Bounds of `offer.words`.
pub const MAX_WORDS: usize = 50;
pub const MAX_WORD_CHARS: usize = 20;
/// `mode.json` `offer`: the words that allow the offer.
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct OfferPolicy {
    /// Phrases that start the mode's activity ("开始做", "我来做饭").
    pub words: Vec<String>,
    /// How an answer shows it was this mode's work, to offer the mode after it
    /// ([`super::answer_signs`]; absent: never offered after an answer).
    #[serde(default)]
    pub answer: Option<super::answer_signs::AnswerSigns>,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum WordsProblem {
    #[error("offer.words must list 1 to {MAX_WORDS} phrases")]
    Count,
    #[error("offer.words must be non-empty phrases of at most {MAX_WORD_CHARS} characters")]
    Length,
    #[error("{0}")]
    Answer(#[from] super::answer_signs::SignsProblem),
}

impl OfferPolicy {
    pub fn check(&self) -> Result<(), WordsProblem> {
        if self.words.is_empty() || self.words.len() > MAX_WORDS {
            return Err(WordsProblem::Count);
        }
        let bad = |w: &String| w.trim().is_empty() || w.chars().count() > MAX_WORD_CHARS;
        if self.words.iter().any(bad) {
            return Err(WordsProblem::Length);
        }
        if let Some(a) = &self.answer {
            a.check()?;
        }
        Ok(())
    }
}

#[cfg(test)]
#[path = "manifest_tests.rs"]
mod tests;

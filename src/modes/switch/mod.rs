//! Validation of a `switch_mode` request against the user's original words (the LLM
//! proposes, the backend decides). Entering needs the mode's display name
//! (or an alias) and an enter verb *commanded* in the same clause; exiting likewise with an
//! exit verb. Negations, questions, reports and retractions do not switch anything — see
//! [`clause`] (where a clause ends, with or without punctuation) and [`judge`] (whether
//! it commands). The same parser checks spoken strategy changes (`set_strategy`). When in
//! doubt the guard refuses, and the refusal says how to switch.

pub mod clause;
pub mod judge;
mod words;

use super::manifest::ModeManifest;
use clause::Lexicon;
use judge::Verdict;

pub const DEFAULT_ENTER_VERBS: &[&str] = &["打开", "进入", "开始", "切换", "启用"];
pub const DEFAULT_EXIT_VERBS: &[&str] = &["关闭", "退出", "结束"];

#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SwitchAction {
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

/// Why the user's words do not ask for a switch; rendered for the model to relay.
#[derive(Debug, Clone, PartialEq)]
pub struct WordsRefusal {
    pub kind: WordsRefusalKind,
    pub action: SwitchAction,
    pub mode_id: String,
    /// The mode's display name and the names that count for it.
    pub display_name: String,
    pub names: Vec<String>,
    /// The verbs that count for this action, the first one being the example.
    pub verbs: Vec<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WordsRefusalKind {
    /// The mode is not named.
    NotNamed,
    /// A how-to question, not a request.
    HowQuestion,
    /// Another question about the mode, a report of its state, or its name as a modifier.
    Question,
    /// Someone else's words or an opinion retold, or a hypothesis ("他说打开…", "如果…").
    Reported,
    /// The verb is negated ("不要打开", "you shouldn't open").
    Negated,
    /// Asked, then taken back ("…算了不用了").
    Retracted,
    /// No enter / exit verb in the clause that names the mode.
    NoVerb,
}

impl std::fmt::Display for WordsRefusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let name = &self.display_name;
        let verb = self.verbs.first().map(String::as_str).unwrap_or_default();
        let verb_kind = match self.action {
            SwitchAction::Enter => "进入",
            SwitchAction::Exit => "退出",
        };
        let how = format!(
            "要{verb_kind}请直接说“{verb}{name}”，或用命令 /mode {} {}",
            self.action.as_str(),
            self.mode_id
        );
        match self.kind {
            WordsRefusalKind::NotNamed => write!(
                f,
                "refused: the user's words do not name the mode. 用户原话没有提到“{}”，不能{verb_kind}{name}。只有用户明确说出模式名称和动作（例如“{verb}{name}”）时才能切换。{how}。",
                self.names.join("”/“")
            ),
            WordsRefusalKind::HowQuestion => write!(
                f,
                "refused: the user is asking how to switch, not asking to switch. 用户是在询问方法，不是要求切换；请告诉用户：{how}。"
            ),
            WordsRefusalKind::Question => write!(
                f,
                "refused: the user is asking or talking about the mode, not asking to switch. 用户是在询问或谈论{name}，不是要求{verb_kind}；照常回答即可。{how}。"
            ),
            WordsRefusalKind::Reported => write!(
                f,
                "refused: the user is retelling someone's words or supposing, not asking to switch. 用户是在转述、谈看法或做假设，不是要求{verb_kind}{name}；照常回答即可。{how}。"
            ),
            WordsRefusalKind::Negated => write!(
                f,
                "refused: the user said not to. 用户原话是否定的（例如“不要{verb}”），不能{verb_kind}{name}。"
            ),
            WordsRefusalKind::Retracted => write!(
                f,
                "refused: the user took the request back. 用户先提出又收回了（例如“算了”），不能{verb_kind}{name}。{how}。"
            ),
            WordsRefusalKind::NoVerb => write!(
                f,
                "refused: no explicit {} verb in the user's words. 用户原话没有明确的{verb_kind}动作（{}），不能{verb_kind}{name}。{how}。",
                self.action.as_str(),
                self.verbs.join("、")
            ),
        }
    }
}

/// Check the user's words against the mode's names and the action's verbs.
pub fn validate(
    manifest: &ModeManifest,
    action: SwitchAction,
    user_text: &str,
) -> Result<(), WordsRefusal> {
    let mut names: Vec<String> = vec![clause::normalize(&manifest.display_name)];
    names.extend(manifest.aliases.iter().map(|a| clause::normalize(a)));
    let verbs = verbs_for(manifest, action);
    let lex = Lexicon {
        names: names.clone(),
        verbs: verbs.clone(),
        phrases: Vec::new(),
    };
    let kind = match judge::judge(user_text, &lex) {
        Verdict::Command => return Ok(()),
        Verdict::Retracted => WordsRefusalKind::Retracted,
        Verdict::Negated => WordsRefusalKind::Negated,
        Verdict::HowQuestion => WordsRefusalKind::HowQuestion,
        Verdict::Question => WordsRefusalKind::Question,
        Verdict::Reported => WordsRefusalKind::Reported,
        Verdict::NoVerb => WordsRefusalKind::NoVerb,
        Verdict::NotNamed => WordsRefusalKind::NotNamed,
    };
    Err(WordsRefusal {
        kind,
        action,
        mode_id: manifest.id.clone(),
        display_name: manifest.display_name.clone(),
        names,
        verbs,
    })
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
        .chain(extra.iter().map(|v| clause::normalize(v)))
        .collect()
}

#[cfg(test)]
mod tests;

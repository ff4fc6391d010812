//! Validation of a `switch_mode` request against the user's original words (the LLM
//! proposes, the backend decides). Entering needs the mode's display name
//! (or an alias) and an enter verb *commanded* in the same clause; exiting likewise with an
//! exit verb. The verbs are the mode's (`verbs_for`, what the model is told), their spoken
//! forms (开启, 换成, 关掉 …) and single-character verbs (开, 关 …) right next to the name.
//! Negations, questions, reports, deferrals and retractions do not switch anything — see
//! [`clause`] (where a clause ends, with or without punctuation), `bound` (where a single
//! character is a verb) and [`judge`] (whether it commands). The same parser checks spoken
//! strategy changes (`set_strategy`). When in doubt the guard refuses, and the refusal
//! says how to switch.

mod bound;
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
    /// For later or not yet ("晚点再关…", "先不关…"): homebot switches only now.
    Deferred,
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
            WordsRefusalKind::Deferred => {
                let now = match self.action {
                    SwitchAction::Enter => "开",
                    SwitchAction::Exit => "关",
                };
                write!(
                    f,
                    "refused: the user is putting it off (later, or not yet), and a mode switches only when asked now. 用户说的是以后再{verb_kind}或暂时不{verb_kind}，现在不切换，也不会到时自动切换。请告诉用户：现在要{now}的话，说“{verb}{name}”。"
                )
            }
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
    let lex = lexicon(names.clone(), &verbs, action);
    let kind = match judge::judge(user_text, &lex) {
        Verdict::Command => return Ok(()),
        Verdict::Retracted => WordsRefusalKind::Retracted,
        Verdict::Deferred => WordsRefusalKind::Deferred,
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

/// What the guard counts for `action`: the mode's `verbs` and their spoken forms (开启,
/// 关掉 …); a single character (the built-in 开, 关 …, or one a mode lists) only next to
/// a name.
fn lexicon(names: Vec<String>, verbs: &[String], action: SwitchAction) -> Lexicon {
    let (spoken, bound) = match action {
        SwitchAction::Enter => (words::SPOKEN_ENTER, words::BOUND_ENTER),
        SwitchAction::Exit => (words::SPOKEN_EXIT, words::BOUND_EXIT),
    };
    let single = |v: &String| v.chars().count() == 1 && !v.is_ascii();
    let mut lex = Lexicon {
        names,
        verbs: verbs.iter().filter(|v| !single(v)).cloned().collect(),
        phrases: Vec::new(),
        bound: verbs.iter().filter(|v| single(v)).cloned().collect(),
    };
    lex.verbs.extend(spoken.iter().map(|v| v.to_string()));
    lex.bound.extend(bound.iter().map(|v| v.to_string()));
    lex
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
mod spoken_table;
#[cfg(test)]
mod tests;

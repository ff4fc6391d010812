//! Why the user's words did not switch (`WordsRefusal`), and the refusal's text, which says
//! how to switch.

use super::SwitchAction;

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
    /// Entering names the parent a running sub-mode paused: it is going back ("回到做饭模式",
    /// which ends the sub-mode), and is asked and explained as such.
    pub returns: bool,
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
    /// Words the guard cannot place ([`super::unsure`]): the backend asks the person
    /// instead of switching or refusing.
    Unsure(super::Unsure),
}

impl WordsRefusalKind {
    /// The backend asks the person rather than refusing.
    pub fn asks(self) -> bool {
        matches!(self, WordsRefusalKind::Unsure(_))
    }
}

impl std::fmt::Display for WordsRefusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let name = &self.display_name;
        let (verb, verb_kind) = match (self.action, self.returns) {
            (SwitchAction::Enter, true) => ("回到", "回到"),
            (SwitchAction::Enter, false) => (self.verbs.first().map_or("", String::as_str), "进入"),
            (SwitchAction::Exit, _) => (self.verbs.first().map_or("", String::as_str), "退出"),
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
            WordsRefusalKind::Unsure(_) => write!(
                f,
                "unsure: the user's words may or may not ask to {} {name}; the backend asks them to confirm ({}).",
                if self.returns { "go back to" } else { self.action.as_str() },
                match (self.action, self.returns) {
                    (SwitchAction::Enter, true) => format!("要回到{name}吗？"),
                    (SwitchAction::Enter, false) => format!("要打开{name}吗？"),
                    (SwitchAction::Exit, _) => format!("要退出{name}吗？"),
                }
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

//! Validation of a `switch_mode` request against the user's original words (the run-mode design:
//! the LLM proposes, the backend decides). Entering needs the mode's display name (or an
//! alias) and an enter verb; exiting needs the name and an exit verb. A verb right after
//! a negation ("不要打开", "don't open") does not count, nor does a how-to question
//! ("怎么打开做饭模式?") — those users are asking, not commanding.

use super::manifest::ModeManifest;

pub const DEFAULT_ENTER_VERBS: &[&str] = &["打开", "进入", "开始", "切换", "启用"];
pub const DEFAULT_EXIT_VERBS: &[&str] = &["关闭", "退出", "结束"];
const NEGATIONS: &[&str] = &[
    "不要",
    "不用",
    "不想",
    "不必",
    "别",
    "甭",
    "没",
    "不",
    "don't",
    "dont",
    "do not",
    "not",
    "never",
    "no need to",
];
const HOW_QUESTIONS: &[&str] = &[
    "怎么", "如何", "怎样", "how do", "how to", "how can", "how does",
];

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
    /// The verb is negated ("不要打开").
    Negated,
    /// No enter / exit verb.
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
        match self.kind {
            WordsRefusalKind::NotNamed => write!(
                f,
                "refused: the user's words do not name the mode. 用户原话没有提到“{}”，不能{verb_kind}{name}。只有用户明确说出模式名称和动作（例如“{verb}{name}”）时才能切换。",
                self.names.join("”/“")
            ),
            WordsRefusalKind::HowQuestion => write!(
                f,
                "refused: the user is asking how to switch, not asking to switch. 用户是在询问方法，不是要求切换；请告诉用户直接说“{verb}{name}”即可。"
            ),
            WordsRefusalKind::Negated => write!(
                f,
                "refused: the user said not to. 用户原话是否定的（例如“不要{verb}”），不能{verb_kind}{name}。"
            ),
            WordsRefusalKind::NoVerb => write!(
                f,
                "refused: no explicit {} verb in the user's words. 用户原话没有明确的{verb_kind}动作（{}），不能{verb_kind}{name}。",
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
    let text = normalize(user_text);
    let mut names: Vec<String> = vec![normalize(&manifest.display_name)];
    names.extend(manifest.aliases.iter().map(|a| normalize(a)));
    let verbs = verbs_for(manifest, action);
    let refuse = |kind| WordsRefusal {
        kind,
        action,
        display_name: manifest.display_name.clone(),
        names: names.clone(),
        verbs: verbs.clone(),
    };
    if !names.iter().any(|n| !find_all(&text, n).is_empty()) {
        return Err(refuse(WordsRefusalKind::NotNamed));
    }
    if HOW_QUESTIONS.iter().any(|q| !find_all(&text, q).is_empty()) {
        return Err(refuse(WordsRefusalKind::HowQuestion));
    }
    let mut negated = false;
    for v in &verbs {
        for pos in find_all(&text, v) {
            if is_negated(&text[..pos]) {
                negated = true;
            } else {
                return Ok(());
            }
        }
    }
    Err(refuse(if negated {
        WordsRefusalKind::Negated
    } else {
        WordsRefusalKind::NoVerb
    }))
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
        .chain(extra.iter().map(|v| normalize(v)))
        .collect()
}

fn normalize(s: &str) -> String {
    let lower = s.to_lowercase().replace('’', "'");
    lower.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Byte offsets where `needle` occurs. ASCII words must stand alone (so `end` does not
/// match `weekend`); CJK needles match anywhere.
fn find_all(hay: &str, needle: &str) -> Vec<usize> {
    if needle.is_empty() {
        return Vec::new();
    }
    let wordy = needle.is_ascii();
    hay.match_indices(needle)
        .map(|(i, _)| i)
        .filter(|&i| {
            if !wordy {
                return true;
            }
            let before = hay[..i].chars().next_back();
            let after = hay[i + needle.len()..].chars().next();
            let boundary = |c: Option<char>| c.is_none_or(|c| !c.is_ascii_alphanumeric());
            boundary(before) && boundary(after)
        })
        .collect()
}

fn is_negated(before: &str) -> bool {
    let b = before.trim_end();
    // allow one softening word between the negation and the verb: "先别打开", "不要再打开"
    let b = b
        .strip_suffix("再")
        .or_else(|| b.strip_suffix("先"))
        .or_else(|| b.strip_suffix("要"))
        .unwrap_or(b)
        .trim_end();
    NEGATIONS.iter().any(|n| {
        b.ends_with(n) && {
            let start = b.len() - n.len();
            let prev = b[..start].chars().next_back();
            !n.is_ascii() || prev.is_none_or(|c| !c.is_ascii_alphanumeric())
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cooking() -> ModeManifest {
        ModeManifest::parse(
            r#"{"id":"cooking","display_name":"做饭模式",
                "aliases":["cooking mode","烹饪模式"],
                "enter_verbs":["开启","start","enter","open","switch to","enable","turn on"],
                "exit_verbs":["exit","stop","close","end","quit","leave","turn off"]}"#,
        )
        .unwrap()
    }

    #[test]
    fn negation_detection() {
        assert!(is_negated("不要"));
        assert!(is_negated("先别"));
        assert!(is_negated("please don't "));
        assert!(!is_negated("帮我"));
        assert!(!is_negated("cannot ")); // "not" inside a word does not count
    }

    #[test]
    fn ascii_words_need_boundaries() {
        assert!(find_all("happy weekend cooking mode", "end").is_empty());
        assert_eq!(find_all("end cooking mode", "end"), vec![0]);
    }

    #[test]
    fn table() {
        use SwitchAction::*;
        let m = cooking();
        let cases: &[(SwitchAction, &str, bool)] = &[
            (Enter, "打开做饭模式", true),
            (Enter, "进入做饭模式吧，今晚三个人吃", true),
            (Enter, "开始做饭模式", true),
            (Enter, "切换到做饭模式", true),
            (Enter, "启用做饭模式", true),
            (Enter, "帮我开启做饭模式", true),
            (Enter, "可以打开做饭模式吗", true),
            (Enter, "Please start cooking mode", true),
            (Enter, "switch to Cooking   Mode", true),
            (Enter, "enable cooking mode now", true),
            (Enter, "进入烹饪模式", true),
            (Enter, "做饭模式是什么", false),
            (Enter, "我想开始做饭", false),
            (Enter, "做饭模式", false),
            (Enter, "不要打开做饭模式", false),
            (Enter, "先别打开做饭模式", false),
            (Enter, "怎么打开做饭模式？", false),
            (Enter, "how do I open cooking mode?", false),
            (Enter, "don't start cooking mode", false),
            (Enter, "what is cooking mode", false),
            (Enter, "reopened the cooking modem", false),
            (Enter, "关闭做饭模式", false),
            (Exit, "关闭做饭模式", true),
            (Exit, "退出做饭模式", true),
            (Exit, "好了，结束做饭模式", true),
            (Exit, "exit cooking mode", true),
            (Exit, "stop cooking mode please", true),
            (Exit, "结束吧", false),
            (Exit, "做饭模式还开着吗", false),
            (Exit, "不要退出做饭模式", false),
            (Exit, "have a nice weekend, cooking mode", false),
            (Exit, "打开做饭模式", false),
        ];
        let mut failures = Vec::new();
        for (action, text, ok) in cases {
            let got = validate(&m, *action, text);
            if got.is_ok() != *ok {
                failures.push(format!(
                    "{action:?} {text:?}: expected ok={ok}, got {got:?}"
                ));
            }
        }
        assert!(failures.is_empty(), "{}", failures.join("\n"));
    }

    #[test]
    fn refusal_reason_is_specific() {
        let m = cooking();
        let e = validate(&m, SwitchAction::Enter, "我想开始做饭")
            .unwrap_err()
            .to_string();
        assert!(e.contains("做饭模式"), "{e}");
        assert!(e.contains("do not name the mode"), "{e}");
        let e = validate(&m, SwitchAction::Enter, "做饭模式是什么")
            .unwrap_err()
            .to_string();
        assert!(e.contains("no explicit enter verb"), "{e}");
    }
}

//! `set_strategy {name}`: a spoken "先给我个计划再做", "用反思模式", "直接做吧" or "switch to
//! careful" changes how the agent works, like `/strategy NAME`. The model proposes, the
//! backend decides: the call is accepted only when the user's own words of this turn ask
//! for *that* strategy or preset — checked by the same clause parser as the mode guard
//! ([`crate::modes::switch::judge`]) with the lexicon of [`SPOKEN`] — and only for a
//! sender who may switch modes here (the permission `/strategy` follows). An accepted call
//! goes through [`Setter`], which the strategy layer hands the turn (it is above the
//! tools); the change applies from the next message.
//!
//! This file holds the words and the guard; the tool itself is `tool.rs` beside it.
//! Its definition is static text: its bytes never change between turns.

use crate::modes::switch::clause::{normalize, Lexicon};
use crate::modes::switch::judge::{judge, Verdict};
use std::fmt;

pub const NAME: &str = "set_strategy";

/// Why the strategy layer did not apply a change (its own error, shown to the model).
pub type SetError = Box<dyn std::error::Error + Send + Sync>;

/// Applies an accepted `set_strategy` (the strategy layer implements it: the same path
/// as `/strategy NAME`). `Ok`: what changed, for the model to relay; `Err`: why not.
#[async_trait::async_trait]
pub trait Setter: Send + Sync {
    async fn set(&self, name: &str) -> Result<String, SetError>;
}

/// What the household says for one strategy or preset.
#[derive(Debug)]
pub struct Spoken {
    /// As `/strategy` takes it.
    pub name: &'static str,
    /// What names it ("计划模式", "careful").
    pub names: &'static [&'static str],
    /// Verbs of its own, besides [`VERBS`] ("给我个" 计划).
    pub verbs: &'static [&'static str],
    /// Whole commands by themselves ("直接做吧"); they count only with nothing but a
    /// tail (吧, 一下, 就行 …) after them, so "直接做红烧肉吧" is not one.
    pub phrases: &'static [&'static str],
    /// What to say instead, for the refusal.
    pub example: &'static str,
}

/// The verbs that ask for any strategy or preset.
pub const VERBS: &[&str] = &[
    "用",
    "使用",
    "采用",
    "改用",
    "换成",
    "换到",
    "换回",
    "切换到",
    "切换成",
    "切换回",
    "切到",
    "切换",
    "改成",
    "改为",
    "改回",
    "回到",
    "设为",
    "设成",
    "恢复",
    "开启",
    "打开",
    "进入",
    "启用",
    "use",
    "switch to",
    "switch back to",
    "change to",
    "go to",
    "go back to",
    "turn on",
    "enable",
    "enter",
    "try",
];

/// Every strategy and preset `set_strategy` takes, with the words that ask for it.
pub const SPOKEN: &[Spoken] = &[
    Spoken {
        name: "build",
        names: &["build", "build mode", "构建模式", "直接模式", "直接做模式"],
        verbs: &[],
        phrases: &[
            "直接做",
            "直接干",
            "直接执行",
            "直接动手",
            "边想边做",
            "不用计划",
            "不要计划",
            "别计划",
            "不用做计划",
            "别做计划",
            "act directly",
            "just do it",
        ],
        example: "直接做吧",
    },
    Spoken {
        name: "plan",
        names: &[
            "计划模式",
            "计划",
            "规划",
            "plan mode",
            "planning mode",
            "plan",
            "planning",
        ],
        verbs: &[
            "给我个",
            "给个",
            "先给我",
            "列个",
            "出个",
            "做个",
            "写个",
            "make a",
            "give me a",
            "write a",
        ],
        phrases: &["先计划", "先规划", "plan first"],
        example: "先给我个计划再做",
    },
    Spoken {
        name: "spec",
        names: &[
            "规格模式",
            "需求规格",
            "规格",
            "spec mode",
            "spec",
            "specification",
        ],
        verbs: &[
            "给我个",
            "先写",
            "写个",
            "列个",
            "出个",
            "write a",
            "give me a",
        ],
        phrases: &["先写需求", "先列需求", "先把需求写清楚", "spec first"],
        example: "用规格模式",
    },
    Spoken {
        name: "reflect",
        names: &[
            "反思模式",
            "反思",
            "自查模式",
            "reflect mode",
            "reflect",
            "reflection",
            "reflection mode",
        ],
        verbs: &[],
        phrases: &["检查一遍再回答", "先检查再回答", "想清楚再回答"],
        example: "用反思模式",
    },
    Spoken {
        name: "assist",
        names: &["协助模式", "辅助模式", "选项模式", "assist mode", "assist"],
        verbs: &[],
        phrases: &[
            "拿不准就问我",
            "不确定就问我",
            "有选择先问我",
            "先问我再做",
            "别替我做决定",
            "别替我拿主意",
            "ask me first",
        ],
        example: "用协助模式",
    },
    Spoken {
        name: "custom",
        names: &[
            "自定义模式",
            "自定义策略",
            "自定义指令",
            "custom mode",
            "custom",
        ],
        verbs: &[],
        phrases: &[],
        example: "用自定义模式",
    },
    Spoken {
        name: "quick",
        names: &["快速模式", "快速预设", "quick mode", "quick"],
        verbs: &[],
        phrases: &[],
        example: "切换到快速模式",
    },
    Spoken {
        name: "standard",
        names: &[
            "标准模式",
            "标准预设",
            "默认模式",
            "默认策略",
            "默认设置",
            "standard mode",
            "standard",
        ],
        verbs: &[],
        phrases: &["恢复默认", "改回默认", "换回默认"],
        example: "切换到标准模式",
    },
    Spoken {
        name: "careful",
        names: &[
            "谨慎模式",
            "仔细模式",
            "小心模式",
            "认真模式",
            "careful mode",
            "careful",
        ],
        verbs: &[],
        phrases: &[],
        example: "切换到谨慎模式",
    },
];

/// The entry of [`SPOKEN`] for `name`.
pub fn spoken(name: &str) -> Option<&'static Spoken> {
    let n = name.trim().to_ascii_lowercase();
    SPOKEN.iter().find(|s| s.name == n)
}

impl Spoken {
    pub fn lexicon(&self) -> Lexicon {
        let norm = |v: &[&str]| v.iter().map(|w| normalize(w)).collect::<Vec<_>>();
        Lexicon {
            names: norm(self.names),
            verbs: VERBS
                .iter()
                .chain(self.verbs)
                .map(|w| normalize(w))
                .collect(),
            phrases: norm(self.phrases),
            bound: Vec::new(),
        }
    }
}

/// Why the user's words do not ask for a strategy, for the model to relay.
#[derive(Debug, Clone)]
pub struct Refusal {
    pub spoken: &'static Spoken,
    pub why: Why,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Why {
    /// The words do not name it.
    NotNamed,
    /// They name it but do not ask to switch.
    NoVerb,
    /// A question about it, or words reported or about it.
    Asking,
    /// For later, or not yet.
    Deferred,
    Negated,
    Retracted,
}

impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let s = self.spoken;
        let name = s.name;
        let how = format!("要换请直接说“{}”，或用命令 /strategy {name}", s.example);
        match self.why {
            Why::NotNamed => write!(
                f,
                "refused: the user's words do not ask for the strategy {name}. 用户原话没有提到“{}”，不能切换策略；只有用户明确要求换一种做事方式时才能调用 set_strategy。{how}。",
                s.names.iter().chain(s.phrases).take(4).copied().collect::<Vec<_>>().join("”/“")
            ),
            Why::NoVerb => write!(
                f,
                "refused: the user names {name} but does not ask to switch to it. 用户提到了它，但没有要求切换（用 / 切换到 / 换成 …）。{how}。"
            ),
            Why::Asking => write!(
                f,
                "refused: the user is asking or talking about the strategy, not asking to switch. 用户是在询问或谈论，不是要求切换策略；照常回答即可。{how}。"
            ),
            Why::Negated => write!(
                f,
                "refused: the user said not to. 用户原话是否定的，不能切换到 {name}。"
            ),
            Why::Deferred => write!(
                f,
                "refused: the user is putting it off, and a strategy changes only when asked now. 用户说的是以后再换或暂时不换，现在不切换。{how}。"
            ),
            Why::Retracted => write!(
                f,
                "refused: the user took the request back. 用户先提出又收回了，不能切换到 {name}。"
            ),
        }
    }
}

impl std::error::Error for Refusal {}

/// Do the user's words ask for `s`? `Err`: the refusal, for the model to relay.
pub fn validate(s: &'static Spoken, user_text: &str) -> Result<(), Refusal> {
    let why = match judge(user_text, &s.lexicon()) {
        Verdict::Command => return Ok(()),
        Verdict::NotNamed => Why::NotNamed,
        Verdict::NoVerb => Why::NoVerb,
        Verdict::HowQuestion | Verdict::Question | Verdict::Reported => Why::Asking,
        Verdict::Negated => Why::Negated,
        Verdict::Retracted => Why::Retracted,
        Verdict::Deferred => Why::Deferred,
    };
    Err(Refusal { spoken: s, why })
}

#[cfg(test)]
#[path = "tests.rs"]
mod tests;

//! The documents the model writes in Plan and Spec: JSON, validated and bounded here,
//! rendered for the household, and the instructions that ask for them.

use super::state::WorkKind;
use serde::Deserialize;

const MAX_GOAL_CHARS: usize = 500;
const MAX_ITEM_CHARS: usize = 300;
const MAX_LIST: usize = 20;

/// How a spec's card begins, before its goal ("需求规格：一桌年夜饭").
pub const SPEC_TITLE: &str = "需求规格";
/// A spec's lists in the card's order: the JSON key, and the heading the card shows the
/// list under (the streamed spec, `super::spec_stream`, uses the same words).
pub const SPEC_LISTS: [(&str, &str); 5] = [
    ("requirements", "需求"),
    ("constraints", "约束"),
    ("acceptance_criteria", "验收标准"),
    ("deliverables", "交付物"),
    ("risks", "风险"),
];

/// A validated plan or spec: what it is for and what runs, in order.
#[derive(Debug, Clone, PartialEq)]
pub struct Work {
    pub goal: String,
    pub steps: Vec<String>,
    /// Extra lists shown with a spec (requirements, constraints, acceptance criteria, risks).
    pub sections: Vec<(&'static str, Vec<String>)>,
    pub doc: serde_json::Value,
}

/// Why the model's plan or spec is not accepted; its text is what the model is told
/// when asked again (and what the journal and the household's apology show).
#[derive(Debug, thiserror::Error)]
pub enum InvalidWork {
    #[error("the answer contains no JSON object")]
    NoJson,
    #[error("the JSON does not parse: {0}")]
    Json(serde_json::Error),
    #[error("not a plan ({{\"goal\", \"steps\": [...]}}): {0}")]
    NotAPlan(serde_json::Error),
    #[error("not a spec (goal, requirements, …): {0}")]
    NotASpec(serde_json::Error),
    #[error("{list} has {len} entries; at most {max}", max = MAX_LIST)]
    ListTooLong { list: &'static str, len: usize },
    #[error("an entry of {0} is longer than {max} characters", max = MAX_ITEM_CHARS)]
    EntryTooLong(&'static str),
    #[error("goal is longer than {max} characters", max = MAX_GOAL_CHARS)]
    GoalTooLong,
    #[error("the plan has 0 steps; a plan needs at least one step")]
    NoSteps,
    #[error("the plan has {len} steps; at most {max}")]
    TooManySteps { len: usize, max: usize },
    #[error("the spec has no goal")]
    NoGoal,
    #[error("the spec has {len} deliverables; at most {max}")]
    TooManyDeliverables { len: usize, max: usize },
    /// The answer called a tool (other than an accepted `set_strategy`).
    #[error("tools must not be called while writing the {flow}")]
    ToolCalled { flow: &'static str },
    /// The answer called `set_strategy` and it was refused (the tool's words).
    #[error("set_strategy was refused ({why}); write the {flow}")]
    SwitchRefused { flow: &'static str, why: String },
}

#[derive(Deserialize)]
#[serde(untagged)]
enum Step {
    Text(String),
    Item {
        title: String,
        #[serde(default)]
        detail: Option<String>,
    },
}

#[derive(Deserialize)]
struct PlanDoc {
    #[serde(default)]
    goal: String,
    steps: Vec<Step>,
}

#[derive(Deserialize)]
struct SpecDoc {
    goal: String,
    #[serde(default)]
    requirements: Vec<String>,
    #[serde(default)]
    constraints: Vec<String>,
    #[serde(default)]
    acceptance_criteria: Vec<String>,
    #[serde(default)]
    deliverables: Vec<String>,
    #[serde(default)]
    risks: Vec<String>,
}

/// The instruction of the planning request (the dynamic tail, never the system prompt).
pub fn instruction(kind: WorkKind, max_steps: usize) -> String {
    match kind {
        WorkKind::Plan => format!(
            "You are in planning mode. Do NOT execute any tools yet. Only output the plan as JSON, nothing else: \
             {{\"goal\": \"一句话目标\", \"steps\": [{{\"title\": \"步骤\", \"detail\": \"怎么做\"}}]}} — 1 to {max_steps} steps, \
             in the user's language. The household will confirm it before anything runs. \
             (One exception: if the user's own words ask to work another way, e.g. “直接做吧”, call set_strategy instead.)"
        ),
        WorkKind::Spec => format!(
            "You are in spec mode. Do NOT execute any tools yet. First write the spec (goal, requirements, constraints, \
             acceptance criteria, deliverables). Only output the spec as JSON, nothing else: \
             {{\"goal\": \"…\", \"requirements\": [\"…\"], \"constraints\": [\"…\"], \"acceptance_criteria\": [\"…\"], \
             \"deliverables\": [\"…\"], \"risks\": [\"…\"]}} — at most {max_steps} deliverables, in the user's language. \
             The household will confirm it, then each deliverable is done in turn. \
             (One exception: if the user's own words ask to work another way, e.g. “直接做吧”, call set_strategy instead.)"
        ),
    }
}

/// The JSON object inside `text` (fences and words around it are tolerated).
fn json_part(text: &str) -> Option<&str> {
    let start = text.find('{')?;
    let end = text.rfind('}')?;
    (end > start).then(|| &text[start..=end])
}

fn clean_list(name: &'static str, items: Vec<String>) -> Result<Vec<String>, InvalidWork> {
    if items.len() > MAX_LIST {
        return Err(InvalidWork::ListTooLong {
            list: name,
            len: items.len(),
        });
    }
    let mut out = Vec::new();
    for it in items {
        let it = it.trim();
        if it.is_empty() {
            continue;
        }
        if it.chars().count() > MAX_ITEM_CHARS {
            return Err(InvalidWork::EntryTooLong(name));
        }
        out.push(it.to_string());
    }
    Ok(out)
}

/// Parse and check the model's answer; the error is what the model is told.
pub fn parse(kind: WorkKind, text: &str, max_steps: usize) -> Result<Work, InvalidWork> {
    let raw = json_part(text).ok_or(InvalidWork::NoJson)?;
    let doc: serde_json::Value = serde_json::from_str(raw).map_err(InvalidWork::Json)?;
    let check_goal = |g: &str| -> Result<String, InvalidWork> {
        let g = g.trim();
        if g.chars().count() > MAX_GOAL_CHARS {
            return Err(InvalidWork::GoalTooLong);
        }
        Ok(g.to_string())
    };
    match kind {
        WorkKind::Plan => {
            let p: PlanDoc = serde_json::from_value(doc.clone()).map_err(InvalidWork::NotAPlan)?;
            let steps: Vec<String> = p
                .steps
                .into_iter()
                .map(|s| match s {
                    Step::Text(t) => t,
                    Step::Item { title, detail } => match detail.filter(|d| !d.trim().is_empty()) {
                        Some(d) => format!("{} — {}", title.trim(), d.trim()),
                        None => title,
                    },
                })
                .collect();
            let steps = clean_list("steps", steps)?;
            if steps.is_empty() {
                return Err(InvalidWork::NoSteps);
            }
            if steps.len() > max_steps {
                return Err(InvalidWork::TooManySteps {
                    len: steps.len(),
                    max: max_steps,
                });
            }
            let goal = check_goal(&p.goal)?;
            Ok(Work {
                goal,
                steps,
                sections: vec![],
                doc,
            })
        }
        WorkKind::Spec => {
            let s: SpecDoc = serde_json::from_value(doc.clone()).map_err(InvalidWork::NotASpec)?;
            let goal = check_goal(&s.goal)?;
            if goal.is_empty() {
                return Err(InvalidWork::NoGoal);
            }
            let requirements = clean_list("requirements", s.requirements)?;
            let deliverables = clean_list("deliverables", s.deliverables)?;
            if deliverables.len() > max_steps {
                return Err(InvalidWork::TooManyDeliverables {
                    len: deliverables.len(),
                    max: max_steps,
                });
            }
            // the fallback chain: deliverables → requirements → the goal
            let steps = if !deliverables.is_empty() {
                deliverables.clone()
            } else if !requirements.is_empty() {
                requirements.iter().take(max_steps).cloned().collect()
            } else {
                vec![goal.clone()]
            };
            Ok(Work {
                goal,
                steps,
                sections: SPEC_LISTS
                    .iter()
                    .map(|(_, heading)| *heading)
                    .zip([
                        requirements,
                        clean_list("constraints", s.constraints)?,
                        clean_list("acceptance_criteria", s.acceptance_criteria)?,
                        deliverables,
                        clean_list("risks", s.risks)?,
                    ])
                    .collect(),
                doc,
            })
        }
    }
}

/// The plan or spec as the household reads it, with how to confirm.
pub fn render(kind: WorkKind, w: &Work) -> String {
    let mut s = String::new();
    match kind {
        WorkKind::Plan => {
            s.push_str("计划");
            if !w.goal.is_empty() {
                s.push_str(&format!("：{}", w.goal));
            }
            for (i, step) in w.steps.iter().enumerate() {
                s.push_str(&format!("\n{}. {step}", i + 1));
            }
        }
        WorkKind::Spec => {
            s.push_str(&format!("{SPEC_TITLE}：{}", w.goal));
            for (name, items) in &w.sections {
                if items.is_empty() {
                    continue;
                }
                s.push_str(&format!("\n{name}："));
                for it in items {
                    s.push_str(&format!("\n- {it}"));
                }
            }
            s.push_str("\n将依次完成：");
            for (i, step) in w.steps.iter().enumerate() {
                s.push_str(&format!("\n{}. {step}", i + 1));
            }
        }
    }
    s.push_str("\n（回复“确认”开始执行，“取消”放弃，或者直接说要改哪里。）");
    s
}

/// Whether a reply confirms or cancels a pending plan; anything else is neither.
/// `strong`: the words name the plan or the act ("确认", "开始执行", "取消计划"); a weak
/// "好的" or "算了" counts only in the chat where the plan was shown, since elsewhere it
/// likely answers something else.
#[derive(Debug, PartialEq)]
pub enum Verdict {
    Confirm { strong: bool },
    Cancel { strong: bool },
    Other,
}

const CONFIRM_STRONG: &[&str] = &[
    "确认",
    "确定",
    "确认执行",
    "确认计划",
    "开始",
    "开始执行",
    "执行",
    "就这么办",
    "照做",
    "按计划来",
    "按这个来",
    "确认开始",
    "执行计划",
    "开始做",
    "confirm",
    "go",
];
const CONFIRM_WEAK: &[&str] = &[
    "好",
    "好的",
    "好啊",
    "可以",
    "行",
    "没问题",
    "就这样",
    "ok",
    "okay",
    "yes",
];
const CANCEL_STRONG: &[&str] = &["取消计划", "放弃计划", "取消这个计划", "不要这个计划"];
const CANCEL_WEAK: &[&str] = &[
    "取消",
    "算了",
    "不要了",
    "不用了",
    "放弃",
    "不做了",
    "cancel",
    "no",
];

pub fn verdict(text: &str) -> Verdict {
    let full: String = text
        .chars()
        .filter(|c| {
            !c.is_whitespace() && !c.is_ascii_punctuation() && !"，。！？、；：“”…～".contains(*c)
        })
        .collect::<String>()
        .to_lowercase();
    let norm = full.trim_end_matches(['吧', '啊', '呀']);
    let is = |list: &[&str], t: &str| list.contains(&t);
    // "好的，开始吧": a weak word before a confirmation
    let rest = ["好的", "好", "行", "可以", "ok"]
        .iter()
        .find_map(|p| norm.strip_prefix(p).filter(|r| !r.is_empty()));
    let strong_confirm = is(CONFIRM_STRONG, norm) || rest.is_some_and(|r| is(CONFIRM_STRONG, r));
    if strong_confirm {
        return Verdict::Confirm { strong: true };
    }
    if is(CONFIRM_WEAK, norm) || rest.is_some_and(|r| is(CONFIRM_WEAK, r)) {
        return Verdict::Confirm { strong: false };
    }
    if is(CANCEL_STRONG, norm) || is(CANCEL_STRONG, &full) {
        return Verdict::Cancel { strong: true };
    }
    if is(CANCEL_WEAK, norm) || is(CANCEL_WEAK, &full) {
        return Verdict::Cancel { strong: false };
    }
    Verdict::Other
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plans_are_checked() {
        let ok = parse(
            WorkKind::Plan,
            "```json\n{\"goal\":\"三道菜\",\"steps\":[{\"title\":\"买菜\",\"detail\":\"番茄、鸡蛋\"},\"做饭\"]}\n```",
            8,
        )
        .unwrap();
        assert_eq!(ok.steps, ["买菜 — 番茄、鸡蛋", "做饭"]);
        let e = parse(WorkKind::Plan, "{\"goal\":\"x\",\"steps\":[]}", 8)
            .unwrap_err()
            .to_string();
        assert!(e.contains("0 steps"), "{e}");
        let e = parse(WorkKind::Plan, "好的，我来计划一下", 8)
            .unwrap_err()
            .to_string();
        assert!(e.contains("no JSON"), "{e}");
        let e = parse(WorkKind::Plan, "{\"goal\": \"x\", \"steps\": [\"a\",}", 8)
            .unwrap_err()
            .to_string();
        assert!(e.contains("does not parse"), "{e}");
        let many: Vec<String> = (0..9).map(|i| format!("s{i}")).collect();
        let e = parse(
            WorkKind::Plan,
            &serde_json::json!({"steps": many}).to_string(),
            8,
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("at most 8"), "{e}");
    }

    #[test]
    fn a_spec_falls_back_from_deliverables_to_requirements_to_the_goal() {
        let d = parse(
            WorkKind::Spec,
            r#"{"goal":"g","requirements":["r1"],"deliverables":["d1","d2"]}"#,
            8,
        )
        .unwrap();
        assert_eq!(d.steps, ["d1", "d2"]);
        let r = parse(
            WorkKind::Spec,
            r#"{"goal":"g","requirements":["r1","r2"]}"#,
            8,
        )
        .unwrap();
        assert_eq!(r.steps, ["r1", "r2"]);
        let g = parse(WorkKind::Spec, r#"{"goal":"做一桌年夜饭"}"#, 8).unwrap();
        assert_eq!(g.steps, ["做一桌年夜饭"]);
        assert!(parse(WorkKind::Spec, r#"{"goal":" "}"#, 8).is_err());
    }

    #[test]
    fn confirmations() {
        for t in ["确认", "好的，开始吧。", "执行吧", "按计划来！"] {
            assert_eq!(verdict(t), Verdict::Confirm { strong: true }, "{t}");
        }
        for t in ["好的", "OK", "可以", "行吧"] {
            assert_eq!(verdict(t), Verdict::Confirm { strong: false }, "{t}");
        }
        assert_eq!(verdict("取消计划"), Verdict::Cancel { strong: true });
        for t in ["取消", "算了吧"] {
            assert_eq!(verdict(t), Verdict::Cancel { strong: false }, "{t}");
        }
        for t in ["第二步换成红烧肉", "好的菜谱在哪", "今天几号"] {
            assert_eq!(verdict(t), Verdict::Other, "{t}");
        }
    }
}

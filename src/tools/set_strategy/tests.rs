//! The `set_strategy` guard, table-driven: what a family says, and whether it asks for
//! that strategy or preset. Same parser as the mode guard, its own words.

use super::*;

/// (the strategy or preset the model asked for, the user's words, is it accepted?)
const CASES: &[(&str, &str, bool)] = &[
    // ---- asked for -----------------------------------------------------------------
    ("plan", "先给我个计划再做", true),
    ("plan", "用计划模式", true),
    ("build", "直接做吧", true),
    ("careful", "switch to careful", true),
    ("plan", "切换到计划模式", true),
    ("plan", "以后先做个计划再动手", true),
    ("plan", "能不能先给我列个计划", true),
    ("plan", "plan first please", true),
    ("plan", "let's use plan mode", true),
    ("build", "不用计划了直接做", true),
    ("build", "别计划了直接干吧", true),
    ("build", "不用计划直接做吧", true),
    ("build", "好了直接做吧", true),
    ("build", "切换到直接模式", true),
    ("build", "switch back to build", true),
    ("spec", "用规格模式", true),
    ("spec", "先写需求再做", true),
    ("reflect", "换成反思模式", true),
    ("reflect", "想清楚再回答", true),
    ("reflect", "use reflect mode from now on", true),
    ("assist", "拿不准就问我", true),
    ("assist", "切换到协助模式吧", true),
    ("custom", "用自定义模式", true),
    ("quick", "切换到快速模式", true),
    ("quick", "switch to quick", true),
    ("standard", "恢复默认", true),
    ("standard", "改回标准模式", true),
    ("careful", "用谨慎模式吧今天的菜复杂", true),
    ("careful", "please use careful mode", true),
    // ---- not asked for -------------------------------------------------------------
    ("plan", "计划模式是什么", false),
    ("plan", "计划模式怎么用", false),
    ("plan", "不要用计划模式", false),
    ("plan", "今天有什么计划", false),
    ("plan", "他说用计划模式", false),
    ("plan", "用计划模式会不会很慢", false),
    ("plan", "如果用计划模式要多久", false),
    ("plan", "之前用过计划模式吗", false),
    ("plan", "用计划模式了吗", false),
    ("plan", "帮我做个红烧肉", false),
    ("plan", "用计划模式吧算了", false),
    ("plan", "换个计划", false),
    ("plan", "切换到计划模式的按钮在哪", false),
    ("plan", "周末的计划定好了吗", false),
    ("plan", "直接做吧", false),
    ("build", "直接做红烧肉吧", false),
    ("build", "别直接做", false),
    ("build", "不要直接做先给我看看", false),
    ("build", "直接做饭吧", false),
    ("build", "你昨天直接做了", false),
    ("build", "先给我个计划再做", false),
    ("careful", "be careful with the knife", false),
    ("careful", "don't switch to careful", false),
    ("careful", "what does careful mode do", false),
    ("quick", "快速模式有什么区别", false),
    ("quick", "快速打开做饭模式", false),
    ("standard", "按标准做", false),
    ("reflect", "我在反思今天做的菜", false),
    ("assist", "协助模式是干嘛的", false),
    ("spec", "规格是多少", false),
    ("custom", "自定义模式怎么设置", false),
];

#[test]
fn the_strategy_table() {
    let yes = CASES.iter().filter(|c| c.2).count();
    assert!(yes >= 20 && CASES.len() - yes >= 20, "20 each way");
    for s in SPOKEN {
        assert!(
            CASES.iter().any(|c| c.0 == s.name && c.2),
            "{} has an accepted sentence",
            s.name
        );
        // the refusal's example is itself accepted
        assert!(validate(s, s.example).is_ok(), "{}: {}", s.name, s.example);
    }
    let mut failures = Vec::new();
    for (name, text, ok) in CASES {
        let got = validate(spoken(name).unwrap(), text);
        if got.is_ok() != *ok {
            failures.push(format!("{name} {text:?}: expected ok={ok}, got {got:?}"));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn refusals_say_why_and_how() {
    let plan = spoken("plan").unwrap();
    let e = validate(plan, "计划模式是什么").unwrap_err().to_string();
    assert!(
        e.contains("does not ask to switch") && e.contains("/strategy plan"),
        "{e}"
    );
    let e = validate(plan, "帮我做个红烧肉").unwrap_err().to_string();
    assert!(e.contains("do not ask for the strategy plan"), "{e}");
    let e = validate(plan, "不要用计划模式").unwrap_err().to_string();
    assert!(e.contains("said not to"), "{e}");
    let e = validate(plan, "他说用计划模式").unwrap_err().to_string();
    assert!(e.contains("talking about"), "{e}");
    assert!(spoken(" Careful").is_some() && spoken("yolo").is_none());
}

#[test]
fn the_definition_is_fixed_and_names_every_entry() {
    use crate::tools::tool::Offered;
    let tool = crate::tools::set_strategy::tool::SetStrategy;
    let a = serde_json::to_string(&tool.definition().parameters).unwrap();
    let b = serde_json::to_string(&tool.definition().parameters).unwrap();
    assert_eq!(a, b);
    for s in SPOKEN {
        assert!(a.contains(&format!("\"{}\"", s.name)), "{a}");
    }
}

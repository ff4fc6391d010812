//! The switch guard, table-driven: sentences a family says, in both languages and both
//! directions, and whether they command the switch.

use super::*;
use crate::modes::manifest::ModeManifest;

fn cooking() -> ModeManifest {
    ModeManifest::parse(
        r#"{"id":"cooking","display_name":"做饭模式",
            "aliases":["cooking mode","烹饪模式"],
            "enter_verbs":["开启","start","enter","open","switch to","enable","turn on"],
            "exit_verbs":["exit","stop","close","end","quit","leave","turn off"]}"#,
    )
    .unwrap()
}

use SwitchAction::{Enter, Exit};

/// (action, the user's words, does it switch?)
const CASES: &[(SwitchAction, &str, bool)] = &[
    // ---- commands that switch ------------------------------------------------------
    (Enter, "打开做饭模式", true),
    (Enter, "进入做饭模式吧，今晚三个人吃", true),
    (Enter, "开始做饭模式", true),
    (Enter, "切换到做饭模式", true),
    (Enter, "启用做饭模式", true),
    (Enter, "帮我开启做饭模式", true),
    (Enter, "可以打开做饭模式吗", true),
    (Enter, "能不能打开做饭模式？", true),
    (Enter, "麻烦打开做饭模式", true),
    (Enter, "请进入烹饪模式", true),
    (Enter, "做饭模式打开", true),
    (Enter, "打开做饭模式，红烧肉怎么做", true),
    (Enter, "打开做饭模式，今晚吃什么？", true),
    (Enter, "好的，打开做饭模式！", true),
    (Enter, "Please start cooking mode", true),
    (Enter, "switch to Cooking   Mode", true),
    (Enter, "enable cooking mode now", true),
    (Enter, "进入烹饪模式", true),
    (Enter, "can you open cooking mode?", true),
    (Enter, "could you please turn on cooking mode", true),
    (Enter, "let's start cooking mode", true),
    (Enter, "open cooking mode, we are making dumplings", true),
    (Exit, "关闭做饭模式", true),
    (Exit, "退出做饭模式", true),
    (Exit, "好了，结束做饭模式", true),
    (Exit, "吃完了，退出做饭模式吧", true),
    (Exit, "可以结束做饭模式了吗？", true),
    (Exit, "请关闭烹饪模式", true),
    (Exit, "exit cooking mode", true),
    (Exit, "stop cooking mode please", true),
    (Exit, "we're done, close cooking mode", true),
    (Exit, "please end cooking mode", true),
    // ---- negations -----------------------------------------------------------------
    (Enter, "不要打开做饭模式", false),
    (Enter, "先别打开做饭模式", false),
    (Enter, "不可以打开做饭模式", false),
    (Enter, "不能打开做饭模式", false),
    (Enter, "不许打开做饭模式", false),
    (Enter, "不准打开做饭模式", false),
    (Enter, "禁止打开做饭模式", false),
    (Enter, "请勿打开做饭模式", false),
    (Enter, "我没说要打开做饭模式", false),
    (Enter, "我不想让你打开做饭模式", false),
    (Enter, "don't start cooking mode", false),
    (Enter, "you shouldn't open cooking mode", false),
    (Enter, "please do not enable cooking mode", false),
    (Enter, "never open cooking mode again", false),
    (Exit, "不要退出做饭模式", false),
    (Exit, "不能关闭做饭模式", false),
    (Exit, "别结束做饭模式，还没做完", false),
    (Exit, "don't close cooking mode yet", false),
    // ---- questions -----------------------------------------------------------------
    (Enter, "怎么打开做饭模式？", false),
    (Enter, "how do I open cooking mode?", false),
    (Enter, "打开做饭模式是什么意思", false),
    (Enter, "为什么要打开做饭模式", false),
    (Enter, "昨天打开做饭模式了吗", false),
    (Enter, "你之前打开过做饭模式吗？", false),
    (Enter, "要不要打开做饭模式？", false),
    (Enter, "会不会自动打开做饭模式", false),
    (Enter, "打开做饭模式以后会怎样", false),
    (Enter, "what happens if I open cooking mode", false),
    (Enter, "why would I start cooking mode?", false),
    (Enter, "did you open cooking mode yesterday?", false),
    (Enter, "is it possible to enable cooking mode?", false),
    (Exit, "做饭模式什么时候结束？", false),
    (Exit, "做饭模式结束了吗", false),
    (Exit, "为什么关闭做饭模式了", false),
    (Exit, "关闭做饭模式的按钮在哪", false),
    (Exit, "做饭模式会不会自己结束？", false),
    (Exit, "退出做饭模式是什么意思", false),
    (Exit, "will cooking mode end soon?", false),
    (Exit, "when does cooking mode end?", false),
    (Exit, "what if I exit cooking mode", false),
    // ---- reports, retractions, the name elsewhere ----------------------------------
    (Enter, "你能打开做饭模式吗？算了不用了", false),
    (Enter, "打开做饭模式，不对，先不要", false),
    (Enter, "open cooking mode... never mind", false),
    (Exit, "做饭模式结束了", false),
    (Exit, "关闭做饭模式，算了，还要做汤", false),
    (Enter, "做饭模式，开始吧", false),
    (Enter, "做饭模式是什么", false),
    (Enter, "我想开始做饭", false),
    (Enter, "做饭模式", false),
    (Enter, "what is cooking mode", false),
    (Enter, "reopened the cooking modem", false),
    (Enter, "关闭做饭模式", false),
    (Exit, "结束吧", false),
    (Exit, "做饭模式还开着吗", false),
    (Exit, "have a nice weekend, cooking mode", false),
    (Exit, "打开做饭模式", false),
];

/// Speech-to-text without punctuation: (action, the user's words, does it switch?).
const UNPUNCTUATED: &[(SwitchAction, &str, bool)] = &[
    // ---- one breath, a command and something else ---------------------------------
    (Enter, "打开做饭模式今晚吃什么", true),
    (Enter, "打开做饭模式教我怎么做红烧肉", true),
    (Enter, "我已经洗好菜了打开做饭模式", true),
    (Enter, "做饭模式开始吧", true),
    (Enter, "帮我打开做饭模式吧", true),
    (Enter, "现在进入做饭模式", true),
    (Exit, "好了关闭做饭模式谢谢", true),
    (Exit, "做饭模式可以结束了", true),
    (Exit, "退出做饭模式吧我吃完了", true),
    (Enter, "start cooking mode please", true),
    (Enter, "打开做饭模式我们今晚做鱼", false), // asks: run on, now or for tonight?
    (Enter, "进入做饭模式然后告诉我先做哪个菜", true),
    (Enter, "开启做饭模式帮我看看冰箱里有什么", true),
    (Enter, "人都到齐了开始做饭模式吧", true),
    (Enter, "打开做饭模式好吗", true),
    (Enter, "能不能打开做饭模式", true),
    (Enter, "请问可以打开做饭模式吗", true),
    (Enter, "做饭模式我们开始吧", true),
    (Enter, "你好呀打开做饭模式", true),
    (Exit, "吃饱了结束做饭模式", true),
    (Exit, "退出做饭模式明天再做", true),
    (Exit, "关闭做饭模式辛苦了", true),
    (Exit, "做饭模式结束吧大家吃饭", true),
    (Exit, "碗都洗完啦退出做饭模式", true),
    (Enter, "open cooking mode we are making dumplings", true),
    (Exit, "exit cooking mode thanks", true),
    // ---- questions, reports, negations and hypotheses without punctuation ------------
    (Enter, "做饭模式怎么打开", false),
    (Enter, "不要打开做饭模式", false),
    (Enter, "打开做饭模式的按钮在哪", false),
    (Enter, "昨天打开做饭模式的时候你说了什么", false),
    (Enter, "他说打开做饭模式", false),
    (Enter, "如果我打开做饭模式会怎样", false),
    (Enter, "打开做饭模式了吗", false),
    (Exit, "别关闭做饭模式", false),
    (Enter, "妈妈说了打开做饭模式", false),
    (Enter, "我觉得应该打开做饭模式", false),
    (Enter, "打开做饭模式会不会很费电", false),
    (Enter, "打开做饭模式以后你会做什么", false),
    (Enter, "打开做饭模式要多久", false),
    (Enter, "要是打开做饭模式的话会怎么样", false),
    (Enter, "万一打开做饭模式你会不会一直说话", false),
    (Enter, "我刚才打开做饭模式你听到了吗", false),
    (Enter, "你打开过做饭模式吗", false),
    (Enter, "打开了做饭模式", false),
    (Enter, "打开做饭模式算了", false),
    (Enter, "打开做饭模式吧算了不用了", false),
    (Enter, "先别打开做饭模式我还没洗菜", false),
    (Enter, "为什么打开做饭模式", false),
    (Exit, "做饭模式结束了", false),
    (Exit, "做饭模式结束了没有", false),
    (Exit, "关闭做饭模式不要了还要做汤", false),
    (Exit, "不想退出做饭模式我还在煮汤", false),
    (Exit, "做饭模式什么时候结束", false),
    (Exit, "他问退出做饭模式以后菜谱还在不在", false),
    // a continuation that is not known to start a clause stays with the command:
    // refused when in doubt (say it with a pause, or "，") — but a question about a dish
    // starts at the dish: "打开做饭模式｜红烧肉怎么做" enters
    (Enter, "打开做饭模式红烧肉怎么做", true),
    (Enter, "he said open cooking mode", false),
    (Enter, "if i open cooking mode what happens", false),
    (Exit, "don't exit cooking mode we are still eating", false),
];

#[test]
fn the_guard_table() {
    assert!(CASES.len() >= 80, "{} sentences", CASES.len());
    let zh = CASES.iter().filter(|c| !c.1.is_ascii()).count();
    assert!(zh >= 40 && CASES.len() - zh >= 20, "both languages");
    check(CASES);
}

#[test]
fn the_unpunctuated_table() {
    assert!(UNPUNCTUATED.len() >= 40, "{} sentences", UNPUNCTUATED.len());
    assert!(UNPUNCTUATED
        .iter()
        .all(|c| !c.1.contains(['，', '。', '？', ',', '.', '?'])));
    let yes = UNPUNCTUATED.iter().filter(|c| c.2).count();
    assert!(yes >= 20 && UNPUNCTUATED.len() - yes >= 20, "both kinds");
    check(UNPUNCTUATED);
}

fn check(cases: &[(SwitchAction, &str, bool)]) {
    let m = cooking();
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
fn refusal_reason_is_specific_and_says_how_to_switch() {
    let m = cooking();
    let e = validate(&m, Enter, "我想开始做饭").unwrap_err().to_string();
    assert!(e.contains("做饭模式"), "{e}");
    assert!(e.contains("do not name the mode"), "{e}");
    let e = validate(&m, Enter, "做饭模式是什么")
        .unwrap_err()
        .to_string();
    assert!(e.contains("no explicit enter verb"), "{e}");
    let e = validate(&m, Exit, "做饭模式什么时候结束？").unwrap_err();
    assert_eq!(e.kind, WordsRefusalKind::Question);
    let text = e.to_string();
    assert!(
        text.contains("“结束做饭模式”") || text.contains("“关闭做饭模式”"),
        "{text}"
    );
    assert!(text.contains("/mode exit cooking"), "{text}");
    let e = validate(&m, Enter, "你能打开做饭模式吗？算了不用了").unwrap_err();
    assert_eq!(e.kind, WordsRefusalKind::Retracted);
    let e = validate(&m, Enter, "禁止打开做饭模式").unwrap_err();
    assert_eq!(e.kind, WordsRefusalKind::Negated);
    let e = validate(&m, Enter, "怎么打开做饭模式？").unwrap_err();
    assert_eq!(e.kind, WordsRefusalKind::HowQuestion);
    // retold words are asked about (the third verdict); a hypothesis is refused
    let e = validate(&m, Enter, "他说打开做饭模式").unwrap_err();
    assert_eq!(e.kind, WordsRefusalKind::Unsure(Unsure::Retold));
    assert!(e.kind.asks() && e.to_string().starts_with("unsure"), "{e}");
    let e = validate(&m, Enter, "如果打开做饭模式，要先洗手").unwrap_err();
    assert_eq!(e.kind, WordsRefusalKind::Reported);
    assert!(!e.kind.asks() && e.to_string().contains("retelling"), "{e}");
    let e = validate(&m, Enter, "打开做饭模式吧算了不用了").unwrap_err();
    assert_eq!(e.kind, WordsRefusalKind::Retracted);
}

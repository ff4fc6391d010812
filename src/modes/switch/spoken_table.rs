//! The switch guard as a new household member tries it: plain spoken sentences, as
//! speech-to-text gives them or typed in a chat, against the shipped cooking mode's
//! `mode.json`. Colloquial verbs and complements (开个, 换成, 关掉), single-character
//! verbs next to words they also begin (开火, 关于), 了 after the verb, a command and a
//! question in one breath, deferrals, the assistant's name and fillers in front. Half of
//! the sentences must switch and half must not; a false switch is the worse mistake.

use super::*;
use crate::modes::manifest::ModeManifest;
use SwitchAction::{Enter, Exit};

fn shipped() -> ModeManifest {
    ModeManifest::parse(include_str!("../../../skills/home-cooking/mode.json"))
        .expect("the shipped cooking mode.json parses")
}

/// (action, the user's words, does it switch?)
const SPOKEN: &[(SwitchAction, &str, bool)] = &[
    // ---- colloquial verbs and complements -------------------------------------------
    (Enter, "开个做饭模式", true),
    (Enter, "给我开个做饭模式", true),
    (Enter, "开一下做饭模式", true),
    (Enter, "帮我开一下做饭模式吧", true),
    (Enter, "换成做饭模式", true),
    (Enter, "切到做饭模式", true),
    (Enter, "切换成做饭模式", true),
    (Enter, "换到做饭模式吧", true),
    (Enter, "开做饭模式", true),
    (Enter, "快开做饭模式", true),
    (Enter, "进做饭模式", true),
    (Enter, "进到做饭模式", true),
    (Enter, "启动做饭模式", true),
    (Enter, "开启一下做饭模式", true),
    (Enter, "把做饭模式打开", true),
    (Enter, "把做饭模式开开", true),
    (Enter, "把做饭模式开一下", true),
    (Enter, "做饭模式开一下", true),
    (Enter, "做饭模式给我开起来", true),
    (Enter, "请帮我开启做饭模式", true),
    (Enter, "能帮我开个做饭模式吗", true),
    (Enter, "我们开始做饭模式吧", true),
    (Enter, "打开下厨模式", true),
    (Enter, "开启烹饪模式", true),
    (Enter, "换成烹饪模式", true),
    (Exit, "关掉做饭模式", true),
    (Exit, "关上做饭模式", true),
    (Exit, "关一下做饭模式", true),
    (Exit, "做饭模式关掉吧", true),
    (Exit, "做饭模式关一下", true),
    (Exit, "停止做饭模式", true),
    (Exit, "停掉做饭模式", true),
    (Exit, "停用做饭模式", true),
    (Exit, "退掉做饭模式", true),
    (Exit, "做饭模式退出吧", true),
    (Exit, "做饭模式结束吧", true),
    (Exit, "把下厨模式关掉吧", true),
    (Exit, "关闭烹饪模式", true),
    // ---- 了 after the verb: a disposal said to homebot, or asked for -----------------
    (Exit, "把做饭模式关了", true),
    (Exit, "把做饭模式关掉", true),
    (Enter, "给我把做饭模式开了", true),
    (Exit, "做饭模式给我关了", true),
    (Exit, "赶紧把做饭模式关了", true),
    (Exit, "吃完了把做饭模式关了", true),
    (Exit, "可以把做饭模式关了吗", true),
    (Exit, "做饭模式可以关了", true),
    // ---- a command, then a question about the food ----------------------------------
    (Enter, "打开做饭模式宫保鸡丁怎么做", true),
    (Enter, "开个做饭模式红烧肉要炖多久", true),
    (Enter, "打开做饭模式番茄炒蛋先放什么", true),
    (Enter, "进入做饭模式鸡翅怎么腌", true),
    (Enter, "开做饭模式土豆丝怎么切", true),
    (Exit, "结束做饭模式碗筷放哪里", true),
    (Exit, "关闭做饭模式剩下的汤怎么处理", true),
    (Enter, "切换到做饭模式今晚吃什么", true),
    // ---- the assistant's name, a wake word, fillers ---------------------------------
    (Enter, "homebot 打开做饭模式", true),
    (Enter, "homebot打开做饭模式", true),
    (Enter, "小助手打开做饭模式", true),
    (Enter, "小助手，开个做饭模式", true),
    (Enter, "嘿 homebot 开启做饭模式", true),
    (Enter, "嗯那个打开做饭模式", true),
    (Enter, "嗯，就是，开一下做饭模式", true),
    (Enter, "那个做饭模式打开一下", true),
    (Enter, "就是说打开做饭模式", true),
    (Exit, "homebot 关闭做饭模式", true),
    (Exit, "小助手把做饭模式关了", true),
    (Exit, "嗯那个退出做饭模式", true),
    (Exit, "那个关掉做饭模式", true),
    (Exit, "关闭做饭模式谢谢小助手", true),
    // ---- now, in a breath with something else ---------------------------------------
    (Enter, "现在就打开做饭模式", true),
    (Enter, "马上打开做饭模式", true),
    (Enter, "我要做饭了打开做饭模式", true),
    (Enter, "要开始做饭了开个做饭模式吧", true),
    (Enter, "打开做饭模式我要做红烧肉", true),
    (Exit, "退出做饭模式吧我们吃饭了", true),
    (Exit, "好了好了关掉做饭模式", true),
    (Exit, "现在关闭做饭模式", true),
    (Exit, "收工了关闭做饭模式", true),
    (Exit, "结束做饭模式吧辛苦了", true),
    (Enter, "开一个做饭模式", true),
    (Enter, "打开做饭模式一会儿要做鱼", true),
    (Exit, "关闭做饭模式下次再做鱼", true),
    (Exit, "先关做饭模式", true),
    // now, beside the deferral rules below: a finished precondition with 了 and no 再,
    // 再 with nothing before it (again), a time or a reminder in a clause of its own
    (Exit, "好了，关闭做饭模式吧", true),
    (Exit, "吃完了，关闭做饭模式", true),
    (Exit, "吃完了关闭做饭模式", true),
    (Enter, "再打开做饭模式", true),
    (Enter, "现在再打开做饭模式", true),
    (Exit, "做饭模式再关一下", true),
    (Enter, "晚上好打开做饭模式", true),
    (Enter, "打开做饭模式今晚做红烧肉", true),
    (Enter, "打开做饭模式十分钟后提醒我翻面", true),
    (Exit, "关闭做饭模式然后提醒我关火", true),
    (Exit, "立刻关闭做饭模式", true),
    (Exit, "立即退出做饭模式", true),
    (Enter, "再次打开做饭模式", true),
    (Enter, "小助手晚上好，开个做饭模式", true),
    (Enter, "open cooking mode, dinner in ten minutes", true),
    // ---- English --------------------------------------------------------------------
    (Enter, "homebot open cooking mode", true),
    (Enter, "hey homebot, start cooking mode", true),
    (Enter, "um, turn on cooking mode", true),
    (Exit, "homebot, exit cooking mode", true),
    (Exit, "ok homebot turn off cooking mode", true),
    (Exit, "please close cooking mode now", true),
    // ==== must not switch ============================================================
    // ---- 开 / 关 beginning other words, right next to the name ----------------------
    (Enter, "做饭模式下开火要注意什么", false),
    (Enter, "做饭模式开火了吗", false),
    (Exit, "关火了做饭模式还开着吗", false),
    (Exit, "关小火做饭模式继续", false),
    (Exit, "关于做饭模式我有个问题", false),
    (Enter, "开心做饭模式真好用", false),
    (Exit, "做饭模式关火提醒", false),
    (Enter, "做饭模式里开大火", false),
    (Enter, "做饭模式开着呢", false),
    (Enter, "做饭模式进度怎么样", false),
    (Exit, "关于做饭模式的问题", false),
    (Exit, "做饭模式关火了", false),
    (Enter, "昨天开的做饭模式", false),
    // ---- 了: a report or a question --------------------------------------------------
    (Exit, "做饭模式结束了", false),
    (Exit, "做饭模式关了吗", false),
    (Exit, "我把做饭模式关了", false),
    (Enter, "他把做饭模式开了", false),
    (Exit, "做饭模式已经关了", false),
    (Exit, "做饭模式关掉了", false),
    (Exit, "把做饭模式关了吗", false),
    (Enter, "做饭模式开了没有", false),
    (Exit, "刚才谁把做饭模式关了", false),
    (Enter, "妈妈把做饭模式打开了", false),
    (Exit, "你把做饭模式关了？", false),
    (Enter, "开了做饭模式", false),
    (Enter, "我开了做饭模式", false),
    // ---- a question about the switch itself -----------------------------------------
    (Enter, "打开做饭模式会怎么样", false),
    (Enter, "打开做饭模式会不会很吵", false),
    (Enter, "打开做饭模式按钮在哪", false),
    (Enter, "打开做饭模式要多久", false),
    (Enter, "打开做饭模式有什么用", false),
    (Exit, "关闭做饭模式以后菜谱还在吗", false),
    (Exit, "关闭做饭模式会保存什么", false),
    (Exit, "退出做饭模式记录还在不在", false),
    (Exit, "退出做饭模式之后还能再进吗", false),
    (Exit, "关闭做饭模式会丢掉今天的记录吗", false),
    (Enter, "打开做饭模式家里人能看到吗", false),
    (Enter, "打开做饭模式电费贵不贵", false),
    (Enter, "打开做饭模式和不打开有什么区别", false),
    (Exit, "关闭做饭模式菜谱会删吗", false),
    (Enter, "打开做饭模式小孩能用吗", false),
    // ---- deferrals: later, or not yet -----------------------------------------------
    (Exit, "晚点再关做饭模式", false),
    (Enter, "回头再打开做饭模式", false),
    (Exit, "过会儿关闭做饭模式", false),
    (Enter, "下次再开做饭模式吧", false),
    (Enter, "明天打开做饭模式", false),
    (Exit, "等会儿关闭做饭模式", false),
    (Exit, "关闭做饭模式等会儿", false),
    (Exit, "关闭做饭模式晚点再说", false),
    (Exit, "先不关做饭模式", false),
    (Exit, "做饭模式先不关", false),
    (Exit, "暂时不退出做饭模式", false),
    (Exit, "还不要关闭做饭模式", false),
    (Enter, "打开做饭模式先不用", false),
    (Enter, "待会儿再打开做饭模式", false),
    (Exit, "一会儿再关做饭模式", false),
    (Enter, "等我洗完菜再打开做饭模式", false),
    (Exit, "等吃完饭再关闭做饭模式", false),
    (Enter, "明天晚上再开做饭模式", false),
    (Exit, "做饭模式晚点再关", false),
    (Exit, "关闭做饭模式明天再说", false),
    (Enter, "打开做饭模式，等一下", false),
    (Exit, "先别关做饭模式汤还在煮", false),
    (Exit, "还早呢先不退出做饭模式", false),
    (Enter, "打开做饭模式等我洗完菜", false),
    (Exit, "做饭模式别关", false),
    // a precondition or a time before 再 + the verb: after that, not now
    (Exit, "吃完饭再关闭做饭模式", false),
    (Exit, "做完这道菜再退出做饭模式", false),
    (Exit, "等等再关闭做饭模式", false),
    (Exit, "等一下再关做饭模式", false),
    (Enter, "晚上再开做饭模式", false),
    (Enter, "今晚再打开做饭模式", false),
    (Exit, "吃完了再关闭做饭模式", false),
    (Exit, "吃完了，再关闭做饭模式", false),
    (Exit, "洗完碗再把做饭模式关了", false),
    // a time of day, or a time from now, before the verb
    (Enter, "晚上打开做饭模式", false),
    (Enter, "今晚打开做饭模式", false),
    (Enter, "下午开做饭模式", false),
    (Exit, "十分钟后关闭做饭模式", false),
    (Exit, "半小时以后关闭做饭模式", false),
    (Exit, "过五分钟关闭做饭模式", false),
    (Exit, "一会儿关闭做饭模式", false),
    (Exit, "等会关闭做饭模式", false),
    (Exit, "等等关闭做饭模式", false),
    (Enter, "一个半小时后打开做饭模式", false),
    (Exit, "关闭做饭模式十分钟后", false),
    (Exit, "关闭做饭模式晚上再说", false),
    // the switch as the time of a reminder: before / after switching, do something
    (Exit, "退出做饭模式前记得保存", false),
    (Enter, "打开做饭模式前先洗手", false),
    (Exit, "关闭做饭模式之后提醒我关火", false),
    (Enter, "打开做饭模式以后要干嘛", false),
    (Exit, "做饭模式关掉之后提醒我", false),
    (Enter, "打开做饭模式时提醒我洗手", false),
    (Enter, "我刚开做饭模式", false),
    (Exit, "close cooking mode later", false),
    (Exit, "i'll exit cooking mode later", false),
    (Enter, "let's open cooking mode tomorrow", false),
    (Exit, "don't exit cooking mode yet", false),
    (Enter, "not now, open cooking mode in a bit", false),
    (Exit, "close cooking mode in ten minutes", false),
    (Exit, "turn off cooking mode in 10 minutes", false),
    (Enter, "turn on cooking mode tonight", false),
    (Exit, "after dinner close cooking mode", false),
    (Enter, "open cooking mode in half an hour", false),
    // ---- the name, a wake word or a filler around a question or a report --------------
    (Enter, "homebot 做饭模式是什么", false),
    (Enter, "小助手，怎么打开做饭模式", false),
    (Exit, "嗯那个做饭模式还开着吗", false),
    (Exit, "homebot 他说要关闭做饭模式", false),
    (Exit, "就是说做饭模式关了吗", false),
    (Enter, "小助手你觉得要不要打开做饭模式", false),
    // ---- cooking, without the mode's name ------------------------------------------
    (Enter, "我要开始做红烧肉了", false),
    (Enter, "今晚我来做饭", false),
    (Enter, "开个火", false),
    (Exit, "关火", false),
    (Exit, "把火关了", false),
    (Enter, "做饭模式挺好用的", false),
    (Enter, "what does cooking mode keep if i close it", false),
    (Exit, "what does closing cooking mode keep?", false),
    (Exit, "will cooking mode be saved if i exit", false),
    (Exit, "turn off the stove", false),
    (Enter, "maybe open cooking mode tomorrow", false),
];

#[test]
fn the_spoken_table() {
    let yes = SPOKEN.iter().filter(|c| c.2).count();
    let no = SPOKEN.len() - yes;
    assert!(SPOKEN.len() >= 150, "{} sentences", SPOKEN.len());
    assert!(
        yes * 100 / SPOKEN.len() >= 45 && no * 100 / SPOKEN.len() >= 45,
        "{yes} switch, {no} do not"
    );
    let m = shipped();
    let mut failures = Vec::new();
    for (action, text, ok) in SPOKEN {
        let got = validate(&m, *action, text);
        if got.is_ok() != *ok {
            failures.push(format!(
                "{action:?} {text:?}: expected ok={ok}, got {got:?}"
            ));
        }
    }
    assert!(
        failures.is_empty(),
        "{} wrong:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

#[test]
fn a_deferral_says_the_words_that_switch_now() {
    let m = shipped();
    let e = validate(&m, Exit, "晚点再关做饭模式").unwrap_err();
    assert_eq!(e.kind, WordsRefusalKind::Deferred);
    let text = e.to_string();
    assert!(text.contains("现在要关的话，说“关闭做饭模式”"), "{text}");
    let e = validate(&m, Enter, "先不打开做饭模式").unwrap_err();
    assert_eq!(e.kind, WordsRefusalKind::Deferred);
    assert!(
        e.to_string().contains("现在要开的话，说“打开做饭模式”"),
        "{e}"
    );
    for (action, said) in [
        (Exit, "关闭做饭模式等会儿"),
        (Exit, "做饭模式晚点再关"),
        (Enter, "明天打开做饭模式"),
    ] {
        let e = validate(&m, action, said).unwrap_err();
        assert_eq!(e.kind, WordsRefusalKind::Deferred, "{said}");
    }
    // a precondition before 再, a time of day or from now, the switch as the time of a
    // reminder: deferrals too, with the same words that switch now
    for (action, said) in [
        (Exit, "吃完饭再关闭做饭模式"),
        (Exit, "吃完了再关闭做饭模式"),
        (Enter, "今晚打开做饭模式"),
        (Exit, "十分钟后关闭做饭模式"),
        (Exit, "关闭做饭模式十分钟后"),
        (Exit, "close cooking mode in ten minutes"),
        (Enter, "turn on cooking mode tonight"),
        (Exit, "退出做饭模式前记得保存"),
        (Exit, "关闭做饭模式之后提醒我关火"),
    ] {
        let e = validate(&m, action, said).unwrap_err();
        assert_eq!(e.kind, WordsRefusalKind::Deferred, "{said}");
        assert!(e.to_string().contains("现在要"), "{said}: {e}");
    }
    // …unless it asks: then the question rule answers it
    let e = validate(&m, Enter, "打开做饭模式以后要干嘛").unwrap_err();
    assert_eq!(e.kind, WordsRefusalKind::Question);
    // a plan of its own after the command is not a deferral of it
    assert!(validate(&m, Exit, "退出做饭模式明天再做").is_ok());
    assert!(validate(&m, Enter, "打开做饭模式十分钟后提醒我翻面").is_ok());
}

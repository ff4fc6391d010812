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

/// (action, the user's words, what the guard must make of them)
const SPOKEN: &[(SwitchAction, &str, Expect)] = &[
    // ---- colloquial verbs and complements -------------------------------------------
    (Enter, "开个做饭模式", S),
    (Enter, "给我开个做饭模式", S),
    (Enter, "开一下做饭模式", S),
    (Enter, "帮我开一下做饭模式吧", S),
    (Enter, "换成做饭模式", S),
    (Enter, "切到做饭模式", S),
    (Enter, "切换成做饭模式", S),
    (Enter, "换到做饭模式吧", S),
    (Enter, "开做饭模式", S),
    (Enter, "快开做饭模式", S),
    (Enter, "进做饭模式", S),
    (Enter, "进到做饭模式", S),
    (Enter, "启动做饭模式", S),
    (Enter, "开启一下做饭模式", S),
    (Enter, "把做饭模式打开", S),
    (Enter, "把做饭模式开开", S),
    (Enter, "把做饭模式开一下", S),
    (Enter, "做饭模式开一下", S),
    (Enter, "做饭模式给我开起来", S),
    (Enter, "请帮我开启做饭模式", S),
    (Enter, "能帮我开个做饭模式吗", S),
    (Enter, "我们开始做饭模式吧", S),
    (Enter, "打开下厨模式", S),
    (Enter, "开启烹饪模式", S),
    (Enter, "换成烹饪模式", S),
    (Exit, "关掉做饭模式", S),
    (Exit, "关上做饭模式", S),
    (Exit, "关一下做饭模式", S),
    (Exit, "做饭模式关掉吧", S),
    (Exit, "做饭模式关一下", S),
    (Exit, "停止做饭模式", S),
    (Exit, "停掉做饭模式", S),
    (Exit, "停用做饭模式", S),
    (Exit, "退掉做饭模式", S),
    (Exit, "做饭模式退出吧", S),
    (Exit, "做饭模式结束吧", S),
    (Exit, "把下厨模式关掉吧", S),
    (Exit, "关闭烹饪模式", S),
    // ---- 了 after the verb: a disposal said to homebot, or asked for -----------------
    (Exit, "把做饭模式关了", S),
    (Exit, "把做饭模式关掉", S),
    (Enter, "给我把做饭模式开了", S),
    (Exit, "做饭模式给我关了", S),
    (Exit, "赶紧把做饭模式关了", S),
    (Exit, "吃完了把做饭模式关了", S),
    (Exit, "可以把做饭模式关了吗", S),
    (Exit, "做饭模式可以关了", S),
    // ---- a command, then a question about the food ----------------------------------
    (Enter, "打开做饭模式宫保鸡丁怎么做", S),
    (Enter, "开个做饭模式红烧肉要炖多久", S),
    (Enter, "打开做饭模式番茄炒蛋先放什么", S),
    (Enter, "进入做饭模式鸡翅怎么腌", S),
    (Enter, "开做饭模式土豆丝怎么切", S),
    (Exit, "结束做饭模式碗筷放哪里", S),
    (Exit, "关闭做饭模式剩下的汤怎么处理", S),
    (Enter, "切换到做饭模式今晚吃什么", S),
    // ---- the assistant's name, a wake word, fillers ---------------------------------
    (Enter, "homebot 打开做饭模式", S),
    (Enter, "homebot打开做饭模式", S),
    (Enter, "小助手打开做饭模式", S),
    (Enter, "小助手，开个做饭模式", S),
    (Enter, "嘿 homebot 开启做饭模式", S),
    (Enter, "嗯那个打开做饭模式", S),
    (Enter, "嗯，就是，开一下做饭模式", S),
    (Enter, "那个做饭模式打开一下", S),
    (Enter, "就是说打开做饭模式", S),
    (Exit, "homebot 关闭做饭模式", S),
    (Exit, "小助手把做饭模式关了", S),
    (Exit, "嗯那个退出做饭模式", S),
    (Exit, "那个关掉做饭模式", S),
    (Exit, "关闭做饭模式谢谢小助手", S),
    // ---- now, in a breath with something else ---------------------------------------
    (Enter, "现在就打开做饭模式", S),
    (Enter, "马上打开做饭模式", S),
    (Enter, "我要做饭了打开做饭模式", S),
    (Enter, "要开始做饭了开个做饭模式吧", S),
    (Enter, "打开做饭模式我要做红烧肉", S),
    (Exit, "退出做饭模式吧我们吃饭了", S),
    (Exit, "好了好了关掉做饭模式", S),
    (Exit, "现在关闭做饭模式", S),
    (Exit, "收工了关闭做饭模式", S),
    (Exit, "结束做饭模式吧辛苦了", S),
    (Enter, "开一个做饭模式", S),
    (Enter, "打开做饭模式一会儿要做鱼", A),
    (Exit, "关闭做饭模式下次再做鱼", S),
    (Exit, "先关做饭模式", S),
    // now, beside the deferral rules below: a finished precondition with 了 and no 再,
    // 再 with nothing before it (again), a time or a reminder in a clause of its own
    (Exit, "好了，关闭做饭模式吧", S),
    (Exit, "吃完了，关闭做饭模式", S),
    (Exit, "吃完了关闭做饭模式", S),
    (Enter, "再打开做饭模式", S),
    (Enter, "现在再打开做饭模式", S),
    (Exit, "做饭模式再关一下", S),
    (Enter, "晚上好打开做饭模式", S),
    (Enter, "打开做饭模式今晚做红烧肉", A),
    (Enter, "打开做饭模式十分钟后提醒我翻面", S),
    (Exit, "关闭做饭模式然后提醒我关火", S),
    (Exit, "立刻关闭做饭模式", S),
    (Exit, "立即退出做饭模式", S),
    (Enter, "再次打开做饭模式", S),
    (Enter, "小助手晚上好，开个做饭模式", S),
    (Enter, "open cooking mode, dinner in ten minutes", S),
    // ---- English --------------------------------------------------------------------
    (Enter, "homebot open cooking mode", S),
    (Enter, "hey homebot, start cooking mode", S),
    (Enter, "um, turn on cooking mode", S),
    (Exit, "homebot, exit cooking mode", S),
    (Exit, "ok homebot turn off cooking mode", S),
    (Exit, "please close cooking mode now", S),
    // ==== must not switch ============================================================
    // ---- 开 / 关 beginning other words, right next to the name ----------------------
    (Enter, "做饭模式下开火要注意什么", R),
    (Enter, "做饭模式开火了吗", R),
    (Exit, "关火了做饭模式还开着吗", R),
    (Exit, "关小火做饭模式继续", R),
    (Exit, "关于做饭模式我有个问题", R),
    (Enter, "开心做饭模式真好用", R),
    (Exit, "做饭模式关火提醒", R),
    (Enter, "做饭模式里开大火", R),
    (Enter, "做饭模式开着呢", R),
    (Enter, "做饭模式进度怎么样", R),
    (Exit, "关于做饭模式的问题", R),
    (Exit, "做饭模式关火了", R),
    (Enter, "昨天开的做饭模式", R),
    // ---- 了: a report or a question --------------------------------------------------
    (Exit, "做饭模式结束了", R),
    (Exit, "做饭模式关了吗", R),
    (Exit, "我把做饭模式关了", R),
    (Enter, "他把做饭模式开了", R),
    (Exit, "做饭模式已经关了", R),
    (Exit, "做饭模式关掉了", R),
    (Exit, "把做饭模式关了吗", R),
    (Enter, "做饭模式开了没有", R),
    (Exit, "刚才谁把做饭模式关了", R),
    (Enter, "妈妈把做饭模式打开了", R),
    (Exit, "你把做饭模式关了？", R),
    (Enter, "开了做饭模式", R),
    (Enter, "我开了做饭模式", R),
    // ---- a question about the switch itself -----------------------------------------
    (Enter, "打开做饭模式会怎么样", R),
    (Enter, "打开做饭模式会不会很吵", R),
    (Enter, "打开做饭模式按钮在哪", R),
    (Enter, "打开做饭模式要多久", R),
    (Enter, "打开做饭模式有什么用", R),
    (Exit, "关闭做饭模式以后菜谱还在吗", R),
    (Exit, "关闭做饭模式会保存什么", R),
    (Exit, "退出做饭模式记录还在不在", R),
    (Exit, "退出做饭模式之后还能再进吗", R),
    (Exit, "关闭做饭模式会丢掉今天的记录吗", R),
    (Enter, "打开做饭模式家里人能看到吗", R),
    (Enter, "打开做饭模式电费贵不贵", R),
    (Enter, "打开做饭模式和不打开有什么区别", R),
    (Exit, "关闭做饭模式菜谱会删吗", R),
    (Enter, "打开做饭模式小孩能用吗", R),
    // ---- deferrals: later, or not yet -----------------------------------------------
    (Exit, "晚点再关做饭模式", R),
    (Enter, "回头再打开做饭模式", R),
    (Exit, "过会儿关闭做饭模式", R),
    (Enter, "下次再开做饭模式吧", R),
    (Enter, "明天打开做饭模式", R),
    (Exit, "等会儿关闭做饭模式", R),
    (Exit, "关闭做饭模式等会儿", R),
    (Exit, "关闭做饭模式晚点再说", R),
    (Exit, "先不关做饭模式", R),
    (Exit, "做饭模式先不关", R),
    (Exit, "暂时不退出做饭模式", R),
    (Exit, "还不要关闭做饭模式", R),
    (Enter, "打开做饭模式先不用", R),
    (Enter, "待会儿再打开做饭模式", R),
    (Exit, "一会儿再关做饭模式", R),
    (Enter, "等我洗完菜再打开做饭模式", R),
    (Exit, "等吃完饭再关闭做饭模式", R),
    (Enter, "明天晚上再开做饭模式", R),
    (Exit, "做饭模式晚点再关", R),
    (Exit, "关闭做饭模式明天再说", R),
    (Enter, "打开做饭模式，等一下", R),
    (Exit, "先别关做饭模式汤还在煮", R),
    (Exit, "还早呢先不退出做饭模式", R),
    (Enter, "打开做饭模式等我洗完菜", R),
    (Exit, "做饭模式别关", R),
    // a precondition or a time before 再 + the verb: after that, not now
    (Exit, "吃完饭再关闭做饭模式", R),
    (Exit, "做完这道菜再退出做饭模式", R),
    (Exit, "等等再关闭做饭模式", R),
    (Exit, "等一下再关做饭模式", R),
    (Enter, "晚上再开做饭模式", R),
    (Enter, "今晚再打开做饭模式", R),
    (Exit, "吃完了再关闭做饭模式", R),
    (Exit, "吃完了，再关闭做饭模式", R),
    (Exit, "洗完碗再把做饭模式关了", R),
    // a time of day, or a time from now, before the verb
    (Enter, "晚上打开做饭模式", R),
    (Enter, "今晚打开做饭模式", R),
    (Enter, "下午开做饭模式", R),
    (Exit, "十分钟后关闭做饭模式", R),
    (Exit, "半小时以后关闭做饭模式", R),
    (Exit, "过五分钟关闭做饭模式", R),
    (Exit, "一会儿关闭做饭模式", R),
    (Exit, "等会关闭做饭模式", R),
    (Exit, "等等关闭做饭模式", R),
    (Enter, "一个半小时后打开做饭模式", R),
    (Exit, "关闭做饭模式十分钟后", R),
    (Exit, "关闭做饭模式晚上再说", R),
    // the switch as the time of a reminder: before / after switching, do something
    (Exit, "退出做饭模式前记得保存", R),
    (Enter, "打开做饭模式前先洗手", R),
    (Exit, "关闭做饭模式之后提醒我关火", R),
    (Enter, "打开做饭模式以后要干嘛", R),
    (Exit, "做饭模式关掉之后提醒我", R),
    (Enter, "打开做饭模式时提醒我洗手", R),
    (Enter, "我刚开做饭模式", R),
    (Exit, "close cooking mode later", R),
    (Exit, "i'll exit cooking mode later", R),
    (Enter, "let's open cooking mode tomorrow", R),
    (Exit, "don't exit cooking mode yet", R),
    (Enter, "not now, open cooking mode in a bit", R),
    (Exit, "close cooking mode in ten minutes", R),
    (Exit, "turn off cooking mode in 10 minutes", R),
    (Enter, "turn on cooking mode tonight", R),
    (Exit, "after dinner close cooking mode", R),
    (Enter, "open cooking mode in half an hour", R),
    // ---- the name, a wake word or a filler around a question or a report --------------
    (Enter, "homebot 做饭模式是什么", R),
    (Enter, "小助手，怎么打开做饭模式", R),
    (Exit, "嗯那个做饭模式还开着吗", R),
    (Exit, "homebot 他说要关闭做饭模式", A),
    (Exit, "就是说做饭模式关了吗", R),
    (Enter, "小助手你觉得要不要打开做饭模式", A),
    // ---- the issue's own unsure examples: the command's time left open -----------------
    (Enter, "今天打开做饭模式", A),
    (Enter, "打开做饭模式下午做蛋糕", A),
    (Enter, "打开做饭模式，晚上做红烧肉", S),
    (Enter, "待会儿蒸馒头，开启做饭模式", A),
    (Enter, "打开做饭模式，我要做红烧肉", S),
    (Exit, "关掉做饭模式，我吃完了", S),
    // ---- cooking, without the mode's name ------------------------------------------
    (Enter, "我要开始做红烧肉了", R),
    (Enter, "今晚我来做饭", R),
    (Enter, "开个火", R),
    (Exit, "关火", R),
    (Exit, "把火关了", R),
    (Enter, "做饭模式挺好用的", R),
    (Enter, "what does cooking mode keep if i close it", R),
    (Exit, "what does closing cooking mode keep?", R),
    (Exit, "will cooking mode be saved if i exit", R),
    (Exit, "turn off the stove", R),
    (Enter, "maybe open cooking mode tomorrow", R),
];

/// What the guard must make of a row's words.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Expect {
    Switch,
    Refuse,
    Ask,
}
use Expect::{Ask as A, Refuse as R, Switch as S};

/// Rows written after the rules above, split before any rule looked at them (seeded
/// shuffle, 40 and 40): the rules were tuned on the first ([`TUNE`]) and never on the
/// second ([`HELD_OUT`]), whose figures are the honest ones (docs/modes-and-skills.md).
const TUNE: &str = include_str!("spoken/tune.tsv");
const HELD_OUT: &str = include_str!("spoken/held_out.tsv");

fn rows_of(tsv: &'static str) -> Vec<(SwitchAction, &'static str, Expect)> {
    tsv.lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| {
            let f: Vec<&str> = l.split('\t').collect();
            let action = match f[0] {
                "enter" => Enter,
                "exit" => Exit,
                other => panic!("row {l:?}: action {other:?}"),
            };
            let expect = match f[2] {
                "switch" => S,
                "refuse" => R,
                "ask" => A,
                other => panic!("row {l:?}: verdict {other:?}"),
            };
            (action, f[1], expect)
        })
        .collect()
}

fn verdict(m: &ModeManifest, action: SwitchAction, text: &str) -> Expect {
    match validate(m, action, text) {
        Ok(()) => S,
        Err(e) if e.kind.asks() => A,
        Err(_) => R,
    }
}

/// A split's figures: switches that must not happen (goal 0), commands refused (goal
/// ≤ 2 % of the commands), questions asked (goal ≤ 15 % of all rows; a question on a
/// clear command counts here, not as a refusal).
#[derive(Debug, Default)]
struct Figures {
    rows: usize,
    commands: usize,
    false_switches: usize,
    commands_refused: usize,
    asked: usize,
    wrong: Vec<String>,
}

impl Figures {
    fn of(rows: &[(SwitchAction, &str, Expect)]) -> Self {
        let m = shipped();
        let mut f = Figures {
            rows: rows.len(),
            ..Default::default()
        };
        for &(action, text, want) in rows {
            let got = verdict(&m, action, text);
            f.commands += usize::from(want == S);
            f.false_switches += usize::from(got == S && want != S);
            f.commands_refused += usize::from(got == R && want == S);
            f.asked += usize::from(got == A);
            if got != want {
                f.wrong.push(format!(
                    "{action:?} {text:?}: expected {want:?}, got {got:?}"
                ));
            }
        }
        f
    }

    fn line(&self, split: &str) -> String {
        let pct = |n: usize, of: usize| n as f64 * 100.0 / of.max(1) as f64;
        format!(
            "{split}: {} rows ({} commands): false switches {}, commands refused {} ({:.1} %), questions asked {} ({:.1} %), rows not as labelled {}",
            self.rows,
            self.commands,
            self.false_switches,
            self.commands_refused,
            pct(self.commands_refused, self.commands),
            self.asked,
            pct(self.asked, self.rows),
            self.wrong.len()
        )
    }
}

#[test]
fn the_spoken_table() {
    let yes = SPOKEN.iter().filter(|c| c.2 == S).count();
    let no = SPOKEN.len() - yes;
    assert!(SPOKEN.len() >= 150, "{} sentences", SPOKEN.len());
    assert!(
        yes * 100 / SPOKEN.len() >= 40 && no * 100 / SPOKEN.len() >= 40,
        "{yes} switch, {no} do not"
    );
    let mut rows = SPOKEN.to_vec();
    rows.extend(rows_of(TUNE));
    let f = Figures::of(&rows);
    println!(
        "{}",
        f.line("written with the rules (the table and the tune split)")
    );
    assert!(
        f.wrong.is_empty(),
        "{} wrong:\n{}",
        f.wrong.len(),
        f.wrong.join("\n")
    );
}

/// The held-out split: its figures printed as they come (docs/modes-and-skills.md,
/// "How well the words are judged"), and held to them: a rule change may improve them,
/// never make them worse. They miss one goal (three commands refused of 18, goal ≤ 2 %);
/// the rows that miss are not tuned on. (The one false switch they had, a plan said
/// before the command, went when the issue's own example of a time beside the command
/// was made to ask — a rule written from the words, not from this row.)
#[test]
fn the_held_out_split() {
    let rows = rows_of(HELD_OUT);
    assert!(rows.len() >= 40, "{} rows", rows.len());
    let f = Figures::of(&rows);
    println!("{}", f.line("held out (never tuned on)"));
    for w in &f.wrong {
        println!("  {w}");
    }
    let line = f.line("held out");
    assert_eq!(f.false_switches, 0, "{line}");
    assert!(f.commands_refused <= 3, "{line}");
    assert!(f.asked * 100 <= f.rows * 15, "{line}");
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

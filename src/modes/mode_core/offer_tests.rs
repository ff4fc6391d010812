//! The offer's rules: which mode is offered, what is a yes, what the question says.

use super::*;

fn offered_on(id: &str, words: &str, priority: i32) -> ModeManifest {
    ModeManifest::parse(&format!(
        r#"{{"id":"{id}","display_name":"{id}模式","priority":{priority},"offer":{{"words":["{words}"]}}}}"#
    ))
    .unwrap()
}

#[test]
fn after_an_answer_that_fits_two_modes_the_larger_priority_is_offered() {
    let tmp = tempfile::tempdir().unwrap();
    let skills = tmp.path().join("skills");
    // cooking matches the answer better (four words), baking has the larger priority
    for (id, prio, words) in [
        ("baking", 5, r#""下锅","小火","出锅""#),
        ("cooking", 0, r#""下锅","小火","出锅","装盘""#),
    ] {
        let d = skills.join(id);
        std::fs::create_dir_all(&d).unwrap();
        std::fs::write(d.join("SKILL.md"), format!("---\nname: {id}\n---\n")).unwrap();
        let json = format!(
            r#"{{"id":"{id}","display_name":"{id}模式","priority":{prio},"offer":{{"words":["开始做"],"answer":{{"words":[{words}]}}}}}}"#
        );
        std::fs::write(d.join("mode.json"), json).unwrap();
    }
    let reg = crate::modes::ModeRegistry::load(&[skills], &[]);
    assert!(reg.issues().is_empty(), "{:?}", reg.issues());
    let now = Utc::now();
    let ws = crate::workspace::Workspace::open(&tmp.path().join("ws")).unwrap();
    let mut core = ModeCore::open(
        ws,
        std::sync::Arc::new(reg),
        "Asia/Shanghai".parse().unwrap(),
        now,
        crate::prompt::frozen_mode_prompt,
    )
    .unwrap();
    let answer = "1. 先把鸡蛋下锅\n2. 小火慢煎\n3. 出锅装盘";
    let offered = core.offer_after_answer(now, "qq:1", answer).unwrap();
    assert_eq!(offered.mode_id, "baking");
    // by the words too: "开始做" fits both, the model asked for cooking
    let offered = core.offer(now, "cooking", "qq:2", "我开始做了").unwrap();
    assert_eq!(offered.mode_id, "baking");
}

#[test]
fn when_the_words_fit_two_modes_the_larger_priority_is_offered() {
    let cooking = offered_on("cooking", "做蛋糕", 0);
    let baking = offered_on("baking", "做蛋糕", 5);
    let homework = offered_on("homework", "写作业", 9);
    let all = [cooking.clone(), baking.clone(), homework.clone()];
    let said = "我要开始做蛋糕了";
    assert_eq!(preferred(&cooking, &all, said).id, "baking");
    assert_eq!(preferred(&baking, &all, said).id, "baking");
    // a mode whose words were not said is never offered, whatever its priority
    assert_eq!(preferred(&cooking, &all, "我要做饭了").id, "cooking");
    // words put off fit no mode: the one asked for stays (and its own check refuses)
    assert_eq!(preferred(&cooking, &all, "明天再做蛋糕").id, "cooking");
    // a tie keeps the one the model asked for
    let even = offered_on("baking", "做蛋糕", 0);
    assert_eq!(
        preferred(&cooking, &[cooking.clone(), even], said).id,
        "cooking"
    );
    assert!(says_offer_words(&baking, said) && !says_offer_words(&homework, said));
}

#[test]
fn a_yes_to_a_switch_question_is_an_assent_or_its_own_verb() {
    for yes in [
        "对",
        "是的",
        "好",
        "嗯",
        "行",
        "可以",
        "退出吧",
        "关吧",
        "关掉",
        "ok",
        "Yes!",
    ] {
        assert!(Confirming::Exit.said_yes(yes), "{yes}");
    }
    for yes in ["开吧", "打开", "好的", "嗯嗯"] {
        assert!(Confirming::Enter.said_yes(yes), "{yes}");
    }
    // the other action's verb, a no, or more than a yes
    for no in [
        "开吧",
        "打开",
        "不用",
        "不要",
        "先不",
        "等会儿",
        "关火",
        "好不好",
        "",
    ] {
        assert!(!Confirming::Exit.said_yes(no), "{no}");
    }
    for no in ["关吧", "退出", "不", "再说吧"] {
        assert!(!Confirming::Enter.said_yes(no), "{no}");
    }
    // going back to the paused parent: an assent or a verb of going back
    for yes in ["好", "回到", "回去吧", "回去", "返回", "嗯", "go back"] {
        assert!(Confirming::Return.said_yes(yes), "{yes}");
    }
    for no in ["不用", "关吧", "退出", "再烤一会儿", "回头再说", ""] {
        assert!(!Confirming::Return.said_yes(no), "{no}");
    }
    let c = |a, r| Confirming::new(a, r);
    assert_eq!(
        c(SwitchAction::Exit, false).question("做饭模式"),
        "要退出做饭模式吗？"
    );
    assert_eq!(
        c(SwitchAction::Enter, false).question("做饭模式"),
        "要打开做饭模式吗？"
    );
    let back = c(SwitchAction::Enter, true);
    assert_eq!(back.question("做饭模式"), "要回到做饭模式吗？");
    assert_eq!(
        (back.yes(), c(SwitchAction::Exit, true)),
        ("回到", Confirming::Exit)
    );
}

#[test]
fn only_a_clear_yes_accepts() {
    for yes in [
        "好",
        "好的",
        "好啊！",
        "1",
        "打开",
        "打开吧",
        "嗯",
        "可以",
        "要",
        "ok",
        "Yes.",
    ] {
        assert!(chose_yes(yes), "{yes}");
    }
    for no in [
        "不用",
        "2",
        "不要",
        "好像不用",
        "先不",
        "等会",
        "",
        "打开冰箱",
        "好不好",
    ] {
        assert!(!chose_yes(no), "{no}");
    }
}

#[test]
fn the_words_are_bounded() {
    let p = |w: &[&str]| OfferPolicy {
        words: w.iter().map(|s| s.to_string()).collect(),
        answer: None,
    };
    assert!(p(&["开始做"]).check().is_ok());
    assert_eq!(p(&[]).check(), Err(WordsProblem::Count));
    assert_eq!(p(&[" "]).check(), Err(WordsProblem::Length));
    assert_eq!(p(&[&"长".repeat(21)]).check(), Err(WordsProblem::Length));
}

#[test]
fn the_words_must_be_said_plainly_and_now() {
    let words = vec!["开始做".to_string(), "我来做饭".to_string()];
    for said in ["我要开始做红烧肉了", "今晚我来做饭", "好，我来做饭吧"] {
        assert!(
            crate::modes::switch::judge::said_now(said, &words),
            "{said}"
        );
    }
    for not in [
        "我不想开始做饭",
        "明天我来做饭",
        "他说他来做饭",
        "你会开始做饭吗",
        "今天天气怎么样",
        "晚点再开始做",
    ] {
        assert!(!crate::modes::switch::judge::said_now(not, &words), "{not}");
    }
}

#[test]
fn the_offer_says_what_the_mode_is_for_briefly() {
    let cooking = "做饭模式：在厨房里一步一步带着家人做饭——按人数算份量、食材替换、火候与计时、安全提醒，并记住每次做了什么。";
    // the first sentence, its own name off the front, cut after the last whole clause
    assert_eq!(
        question("做饭模式", cooking),
        "要打开做饭模式吗？（在厨房里一步一步带着家人做饭——按人数算份量、食材替换、火候与计时、安全提醒）"
    );
    assert_eq!(
        about("作业模式", "陪孩子写作业。不替孩子做题。").as_deref(),
        Some("陪孩子写作业")
    );
    assert_eq!(
        about("x", "Helps with homework. Never does it for the child.").as_deref(),
        Some("Helps with homework")
    );
    // one clause too long to say whole: cut at the limit, and said so
    let long = "长".repeat(60);
    let a = about("x", &long).unwrap();
    assert_eq!(a.chars().count(), MAX_OFFER_ABOUT_CHARS);
    assert!(a.ends_with('…'), "{a}");
    // every description is bounded
    for d in [
        cooking,
        &long,
        &"词，".repeat(100),
        "a b c d e f g h i j k l m n o p q r s t u v w",
    ] {
        let a = about("x", d).unwrap();
        assert!(a.chars().count() <= MAX_OFFER_ABOUT_CHARS, "{a}");
        assert!(!a.ends_with(['，', '、', ' ']), "{a}");
    }
    // no description, or nothing but the name: the bare question
    assert_eq!(question("作业模式", ""), "要打开作业模式吗？");
    assert_eq!(question("作业模式", "  作业模式： "), "要打开作业模式吗？");
}

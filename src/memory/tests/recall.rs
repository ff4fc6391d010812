//! Recall in a room: a turn's own scenes (its room's, its speaker's) are recalled however
//! unlike the words, the room's memories first; a wider scene only when alike.

use super::*;
use crate::memory::fingerprint::similarity;

/// Mom's voice turn in `room` (the room key stated, as the voice channel states it).
fn in_room(room: &str, text: &str, t: chrono::DateTime<chrono::FixedOffset>) -> TurnScene {
    let mut turn = turn_in("voice", "wake-1", "mom", text);
    turn.room = Some(room.to_string());
    turn.facts.scenes = vec![SceneKey::room(room).unwrap().to_string()];
    TurnScene::of(&turn, t, &MemoryConfig::default())
}

fn key(s: &str) -> SceneKey {
    SceneKey::parse(s).unwrap()
}

#[test]
fn a_turns_own_scenes_are_recalled_with_every_feature_unshared_a_wider_one_is_not() {
    // the worst case: a scene whose every occurrence was in the kitchen in the evening,
    // with other words and all the tools, and a turn in the bedroom in the morning with
    // as many new words as allowed
    let cfg = MemoryConfig::default();
    let d = tempfile::tempdir().unwrap();
    let mut s = open(&d);
    let tools: Vec<String> = ["a", "b", "c"]
        .iter()
        .map(|t| format!("tool:{t}"))
        .collect();
    let wide = key("chan:voice");
    for day in [2, 3] {
        let sc = in_room("厨房", "番茄 土豆 茄子 黄瓜 白菜 萝卜", at(day, 19));
        s.observe(&sc, &tools, at(day, 19).timestamp()).unwrap();
        // the wider scene (an owner's) of the same situations
        let above = TurnScene {
            keys: vec![wide.clone()],
            weak: sc.weak.clone(),
        };
        s.observe(&above, &tools, at(day, 19).timestamp()).unwrap();
    }
    let own = key("chan:voice/peer:mom");
    s.commit(
        "妈妈的约定",
        std::slice::from_ref(&own),
        "t",
        at(4, 8).timestamp(),
    )
    .unwrap();
    s.commit(
        "全家的约定",
        std::slice::from_ref(&wide),
        "t",
        at(4, 8).timestamp(),
    )
    .unwrap();
    let idx = s.snapshot().unwrap();
    let turn = in_room("卧室", "电脑 手机 耳机 键盘 鼠标 屏幕", at(4, 8));
    assert_eq!(turn.keys, vec![key("room:卧室"), own.clone()]);
    assert_eq!(turn.weak.len(), 2 + cfg.max_topic_words, "{turn:?}");
    // its identity weighs 2.0 of 10.8: below the threshold, so the key decides
    let scene = idx.scenes.iter().find(|s| s.key == own).unwrap();
    let sim = similarity(&turn.features_for(&own, &[]), &scene.profile);
    assert!((sim - 2.0 / 10.8).abs() < 1e-9, "{sim}");
    assert!(sim < cfg.recall_threshold);
    let got = idx.recall(&turn, &cfg, at(4, 8).timestamp());
    let contents: Vec<&str> = got.iter().map(|r| r.content.as_str()).collect();
    assert_eq!(
        contents,
        ["妈妈的约定"],
        "the wider scene is unlike the turn"
    );
    // a turn like the wider scene's situations recalls it too, after the turn's own
    let alike = in_room("厨房", "番茄 土豆 茄子 黄瓜 白菜 萝卜", at(5, 19));
    let got = idx.recall(&alike, &cfg, at(5, 19).timestamp());
    let contents: Vec<&str> = got.iter().map(|r| r.content.as_str()).collect();
    assert_eq!(contents, ["妈妈的约定", "全家的约定"]);
}

#[test]
fn what_was_said_in_the_kitchen_is_recalled_first_in_the_kitchen_and_by_whoever_is_there() {
    let mut cfg = MemoryConfig::default();
    let d = tempfile::tempdir().unwrap();
    let mut s = open(&d);
    let kitchen = in_room("厨房", "记住汤要少放盐", at(2, 18));
    let bedroom = in_room("卧室", "记住空调开二十六度", at(2, 22));
    let soup = s
        .commit(
            "汤要少放盐",
            &kitchen.keys,
            "voice:wake-1",
            at(2, 18).timestamp(),
        )
        .unwrap();
    // kept later, so by score and id alone it would come first
    let air = s
        .commit(
            "空调开二十六度",
            &bedroom.keys,
            "voice:wake-2",
            at(2, 22).timestamp(),
        )
        .unwrap();
    let idx = s.snapshot().unwrap();
    let now = at(3, 18);
    let ids = |sc: &TurnScene, cfg: &MemoryConfig| -> Vec<i64> {
        idx.recall(sc, cfg, now.timestamp())
            .iter()
            .map(|r| r.memory)
            .collect()
    };
    let back = in_room("厨房", "今晚吃什么", now);
    assert_eq!(
        ids(&back, &cfg),
        [soup, air],
        "mom's own memories, the kitchen's first"
    );
    assert_eq!(ids(&in_room("卧室", "几点了", now), &cfg), [air, soup]);
    // dad in the kitchen: the kitchen's, not mom's bedroom one
    let mut dad = turn_in("voice", "wake-9", "dad", "今晚吃什么");
    dad.facts.scenes = vec!["room:厨房".into()];
    let dad = TurnScene::of(&dad, now, &cfg);
    assert_eq!(ids(&dad, &cfg), [soup]);
    // at the bound, the kitchen's wins
    cfg.recall_max_memories = 1;
    assert_eq!(ids(&back, &cfg), [soup]);
}

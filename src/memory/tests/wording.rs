//! Recall by wording beside the scene: only when the scene brings too few, only what the
//! chat may see, only good matches, bounded in count and tokens.

use super::*;
use crate::memory::wording::{recall as by_wording, section_of};
use crate::tools::memory::visible;

#[test]
fn the_words_find_what_the_scene_does_not_within_the_chats_view_and_the_bounds() {
    let d = tempfile::tempdir().unwrap();
    let mut s = open(&d);
    let mut cfg = MemoryConfig::default();
    let group = scene("qq", "group:1027", "番茄炒蛋怎么做", at(2, 19));
    let other = scene("qq", "group:2048", "x", at(2, 19));
    let private = scene("qq", "private:42", "x", at(2, 19));
    let t = at(2, 19).timestamp();
    let here = s
        .commit("番茄炒蛋要少放糖", &group.keys, "qq:group:1027", t)
        .unwrap();
    let there = s
        .commit("番茄炒蛋要多放葱", &other.keys, "qq:group:2048", t)
        .unwrap();
    let secret = s
        .commit("番茄炒蛋是给妈妈的惊喜", &private.keys, "qq:private:42", t)
        .unwrap();
    s.commit("周末去公园", &group.keys, "qq:group:1027", t)
        .unwrap();
    let idx = s.snapshot().unwrap();
    // a new chat of the group's: the group's own memory by its words, never another
    // chat's (the other group's, the private chat's)
    let see = |sc: &TurnScene, origin: &'static str| {
        let sc = sc.clone();
        move |_: i64, from: &str, keys: &[&SceneKey]| visible(&sc, false, origin, from, keys)
    };
    let ids =
        |found: Vec<crate::memory::Worded>| found.iter().map(|w| w.memory).collect::<Vec<_>>();
    let got = by_wording(
        &idx,
        &cfg,
        &group,
        "番茄炒蛋怎么做",
        &[],
        see(&group, "qq:group:1027"),
    );
    assert_eq!(ids(got), [here]);
    let got = by_wording(
        &idx,
        &cfg,
        &private,
        "番茄炒蛋怎么做",
        &[],
        see(&private, "qq:private:42"),
    );
    assert_eq!(ids(got), [secret]);
    // the owner's terminal sees every memory: the bound keeps two
    let terminal = scene("cli", "local", "x", at(2, 19));
    let all = |_: i64, _: &str, _: &[&SceneKey]| true;
    let got = by_wording(&idx, &cfg, &terminal, "番茄炒蛋", &[], all);
    assert_eq!(got.len(), cfg.wording_max_memories);
    assert!(got
        .iter()
        .all(|w| [here, there, secret].contains(&w.memory)));
    // a poor match (one word of three) is no recall
    let got = by_wording(&idx, &cfg, &group, "番茄 电脑 手机", &[], all);
    assert!(got.is_empty(), "{got:?}");
    // scene recall found enough: none by wording; found fewer: what it found is not twice
    let scene_found = idx.recall(&group, &cfg, t);
    assert_eq!(scene_found.len(), 2);
    assert!(by_wording(&idx, &cfg, &group, "番茄炒蛋", &scene_found, all).is_empty());
    cfg.wording_below = 5;
    let got = ids(by_wording(
        &idx,
        &cfg,
        &group,
        "番茄炒蛋",
        &scene_found,
        all,
    ));
    assert!(!got.contains(&here) && got.len() == 2, "{got:?}");
    // the token bound, and off
    cfg.wording_max_tokens = 10;
    assert_eq!(
        by_wording(&idx, &cfg, &terminal, "番茄炒蛋", &[], all).len(),
        0
    );
    cfg.wording_max_tokens = 16;
    assert_eq!(
        by_wording(&idx, &cfg, &terminal, "番茄炒蛋", &[], all).len(),
        1
    );
    cfg.wording_max_memories = 0;
    assert!(by_wording(&idx, &cfg, &terminal, "番茄炒蛋", &[], all).is_empty());
    // the `none` policy recalls nothing of either kind
    let cfg = MemoryConfig::default();
    assert!(by_wording(&idx, &cfg, &TurnScene::default(), "番茄炒蛋", &[], all).is_empty());
    // the block says how they were found, one line each
    let found = by_wording(
        &idx,
        &cfg,
        &group,
        "番茄炒蛋",
        &[],
        see(&group, "qq:group:1027"),
    );
    let block = section_of(&found).unwrap();
    assert_eq!(block.label, "按字面找到的记忆");
    assert!(
        block
            .body
            .contains(&format!("- [#{here}] 番茄炒蛋要少放糖\n")),
        "{}",
        block.body
    );
    assert!(section_of(&[]).is_none());
}

//! Recall by wording beside the scene, through QQ (a OneBot simulator on the gateway's
//! reverse WebSocket): when the scene brings nothing (a group's memory no longer recalled
//! by the situation after months unused), the memories the words match join the turn in a
//! block of their own — only those the chat may see, never another group's or a private
//! chat's; bounded; sent once while the replayed window holds them, so the next request
//! holds this one whole; and the audit record says which memories came by scene and
//! which by wording, and what the wording block cost.

use crate::memory_home::{at, block, home, Home, DAD, GROUP, GROUP2, MOM};
use serde_json::{json, Value};

const ASK: &str = "番茄炒蛋怎么做？";

/// The messages of the last turn's first request.
fn messages(h: &Home) -> Vec<Value> {
    let r = crate::common::turn_requests(&h.fake).pop().unwrap();
    r["messages"].as_array().unwrap().clone()
}

#[tokio::test]
async fn when_the_scene_brings_nothing_the_words_find_what_this_chat_may_see() {
    let h = home("2026-03-02T19:00:00+08:00", "").await;
    let mut s = h.onebot().await;
    h.in_group(&mut s, GROUP, MOM, 1, "记住：番茄炒蛋要少放糖")
        .await;
    h.in_private(&mut s, MOM, 2, "记住：番茄炒蛋是给妈妈的生日惊喜")
        .await;
    h.in_group(&mut s, GROUP2, DAD, 3, "记住：番茄炒蛋要多放葱")
        .await;
    // today the other group's scene brings its memory: no recall by wording
    h.in_group(&mut s, GROUP2, DAD, 4, ASK).await;
    let msg = h.last_message();
    assert!(
        block(&msg, "场景记忆").is_some_and(|b| b.contains("[#3]")),
        "{msg}"
    );
    assert!(block(&msg, "按字面找到的记忆").is_none(), "{msg}");

    // four months unused: the links faded below the floor, the memories stay
    h.clock.set(at("2026-07-02T19:00:00+08:00"));
    h.in_group(&mut s, GROUP, MOM, 5, ASK).await;
    let msg = h.last_message();
    assert!(block(&msg, "场景记忆").is_none(), "{msg}");
    let found = block(&msg, "按字面找到的记忆").unwrap_or_else(|| panic!("{msg}"));
    let lines: Vec<&str> = found.lines().skip(1).collect();
    assert_eq!(lines, ["- [#1] 番茄炒蛋要少放糖"], "{msg}");
    // after the user's words, never in the system message
    let m = messages(&h);
    assert!(!m[0]["content"]
        .as_str()
        .unwrap()
        .contains("番茄炒蛋要少放糖"));
    let words_at = msg.find(ASK).unwrap();
    assert!(msg.find("[按字面找到的记忆]").unwrap() > words_at, "{msg}");
    // mom's private chat finds its own: nothing crosses chats
    h.in_private(&mut s, MOM, 6, ASK).await;
    let msg = h.last_message();
    let lines: Vec<&str> = block(&msg, "按字面找到的记忆")
        .unwrap()
        .lines()
        .skip(1)
        .collect();
    assert_eq!(lines, ["- [#2] 番茄炒蛋是给妈妈的生日惊喜"], "{msg}");
    // the other group finds its own, which its replayed window already holds: not again
    h.in_group(&mut s, GROUP2, DAD, 7, ASK).await;
    let msg = h.last_message();
    assert!(!msg.contains("记忆"), "{msg}");
    // words that match nothing well bring nothing
    h.in_group(&mut s, GROUP, MOM, 8, "周末去哪里玩比较好？")
        .await;
    assert!(!h.last_message().contains("记忆"), "{}", h.last_message());

    // the bill: the group's turn of July records the memory it found by wording and
    // what its block cost, apart from the tail; the other group's, the memory only
    // (a turn that kept a memory made two requests)
    let recs = h.turn_audit(11).await;
    let by_wording = |chat: String| {
        recs.iter()
            .find(|r| r["chat_id"] == chat && r["shape"]["memories_wording"].is_array())
            .unwrap_or_else(|| panic!("{chat}: {recs:#?}"))
    };
    let july = by_wording(format!("group:{GROUP}"));
    let shape = &july["shape"];
    assert_eq!(shape["memories_wording"], json!([1]), "{shape}");
    assert!(shape.get("memories_scene").is_none(), "{shape}");
    let wording = |shape: &Value| {
        shape["blocks"]
            .as_array()
            .unwrap()
            .iter()
            .find(|b| b["name"] == "memory_wording")
            .map(|b| b["tokens"].as_u64().unwrap())
    };
    let tokens = wording(shape).unwrap_or_else(|| panic!("{shape}"));
    assert!((10..100).contains(&tokens), "{tokens}");
    let other = &by_wording(format!("group:{GROUP2}"))["shape"];
    assert_eq!(other["memories_wording"], json!([3]), "{other}");
    assert_eq!(wording(other), None, "{other}");
    let parsed: Vec<homebot::provider::audit::AuditRecord> = recs
        .iter()
        .map(|r| serde_json::from_value(r.clone()).unwrap())
        .collect();
    let july: homebot::provider::audit::AuditRecord = serde_json::from_value(july.clone()).unwrap();
    let line = homebot::audit::show::readable_line(&july);
    assert!(line.contains("memories_wording=1"), "{line}");
    assert!(line.contains(&format!("memory_wording:{tokens}")), "{line}");
    let stats = homebot::audit::stats::compute(&parsed);
    let sent: u64 = recs.iter().filter_map(|r| wording(&r["shape"])).sum();
    assert_eq!(stats.total.wording, sent);
    assert!(sent > tokens, "the private chat's too");
    assert!(homebot::audit::stats::render(&stats).contains("wording"));
    s.close().await;
    h.kernel
        .shutdown_gracefully(std::time::Duration::from_secs(10))
        .await;
}

/// With scene recall bounded to one memory and the wording recall asked for below two,
/// the words add at most two others of the group's beside the scene's (the same one never
/// twice); the next turn's request holds this one whole, the lines not sent again.
#[tokio::test]
async fn beside_too_little_from_the_scene_bounded_and_sent_once() {
    let h = home(
        "2026-03-02T19:00:00+08:00",
        "[memory]\nrecall_max_memories = 1\nwording_below = 2\nwording_max_memories = 2\n",
    )
    .await;
    let mut s = h.onebot().await;
    // kept in the group earlier (its window holds none of them)
    let memory = h.kernel.memory();
    let group = homebot::memory::SceneKey::parse(&format!("chan:qq/peer:group_{GROUP}")).unwrap();
    for what in [
        "番茄炒蛋要少放糖",
        "番茄炒蛋要先炒蛋",
        "番茄炒蛋出锅前撒葱花",
        "在这个群里回答要简短",
    ] {
        let origin = format!("qq:group:{GROUP}");
        memory
            .commit(what.into(), vec![group.clone()], origin, memory.now())
            .await
            .unwrap();
    }
    h.in_group(&mut s, GROUP, MOM, 10, ASK).await;
    let first = messages(&h);
    let msg = h.last_message();
    let scene: Vec<&str> = block(&msg, "场景记忆")
        .unwrap_or_else(|| panic!("{msg}"))
        .lines()
        .skip(1)
        .collect();
    assert_eq!(scene, ["- [#4] 在这个群里回答要简短"], "{msg}");
    let worded: Vec<&str> = block(&msg, "按字面找到的记忆")
        .unwrap()
        .lines()
        .skip(1)
        .collect();
    assert_eq!(
        worded,
        ["- [#3] 番茄炒蛋出锅前撒葱花", "- [#2] 番茄炒蛋要先炒蛋"],
        "{msg}"
    );
    // the same question again: recalled alike, nothing sent twice, the request before whole
    h.in_group(&mut s, GROUP, MOM, 11, ASK).await;
    let second = messages(&h);
    assert_eq!(
        &second[..first.len()],
        &first[..],
        "the first request is a prefix"
    );
    let msg = h.last_message();
    assert!(!msg.contains("记忆"), "{msg}");
    let recs = h.turn_audit(2).await;
    let shape = &recs[1]["shape"];
    assert_eq!(shape["memories_scene"], json!([4]), "{shape}");
    assert_eq!(shape["memories_wording"], json!([3, 2]), "{shape}");
    let names: Vec<&str> = shape["blocks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| b["name"].as_str().unwrap())
        .collect();
    assert!(!names.contains(&"memory_wording"), "{names:?}");
    s.close().await;
    h.kernel
        .shutdown_gracefully(std::time::Duration::from_secs(10))
        .await;
}

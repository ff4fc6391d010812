//! Scene policy from QQ, through the channel (a OneBot simulator on the gateway's reverse
//! WebSocket): a group whose `[memory.groups]` policy is `none` keeps nothing and recalls
//! nothing; a message's own leading `#不记` / `#记` decides for that message, and the
//! model never sees the marker.

use crate::memory_home::{block, home, GROUP, GROUP2, MOM};

#[tokio::test]
async fn a_group_that_said_none_keeps_nothing_and_a_message_can_say_otherwise() {
    let h = home(
        "2026-03-02T19:00:00+08:00",
        &format!("[memory.groups]\n\"{GROUP2}\" = \"none\"\n"),
    )
    .await;
    let mut s = h.onebot().await;
    // the group that said none: the model is told nothing was kept, and nothing is
    h.in_group(&mut s, GROUP2, MOM, 1, "记住：这个群说话要简短")
        .await;
    let refused = h.last_results();
    assert!(
        refused.contains("does not take part in scene memory"),
        "{refused}"
    );
    h.in_group(&mut s, GROUP2, MOM, 2, "明天几点出发？").await;
    assert!(!h.last_message().contains("记忆"), "{}", h.last_message());
    let c = h.counts();
    assert_eq!((c.memories, c.scenes, c.evidence), (0, 0, 0), "{c:?}");

    // `#不记` in a group that takes part: nothing of that message is kept
    h.in_group(&mut s, GROUP, MOM, 3, "#不记 记住：我下周要做手术")
        .await;
    let msg = h.last_message();
    assert!(
        msg.contains("记住：我下周要做手术") && !msg.contains("#不记"),
        "{msg}"
    );
    assert!(h.last_results().contains("does not take part"));
    let c = h.counts();
    assert_eq!((c.memories, c.evidence), (0, 0), "{c:?}");
    // and the group's other messages do take part
    h.in_group(&mut s, GROUP, MOM, 4, "明天几点出发？").await;
    assert_eq!(h.counts().evidence, 1);

    // `#记` in the group that said none: that message takes part
    h.in_group(&mut s, GROUP2, MOM, 5, "＃记：记住：这个群说话要简短")
        .await;
    let kept = h.last_results();
    assert!(
        kept.contains(&format!(
            "kept as memory #1 for scene chan:qq/peer:group_{GROUP2}"
        )),
        "{kept}"
    );
    let msg = h.last_message();
    assert!(
        msg.contains("记住：这个群说话要简短") && !msg.contains("＃记"),
        "{msg}"
    );
    h.in_group(&mut s, GROUP2, MOM, 6, "#记 明天几点出发？")
        .await;
    let msg = h.last_message();
    let recalled = block(&msg, "场景记忆").unwrap_or_else(|| panic!("{msg}"));
    assert!(recalled.contains("这个群说话要简短"), "{msg}");
    assert!(!msg.contains("#记"), "{msg}");
    // the next message without it: the group's none again
    h.in_group(&mut s, GROUP2, MOM, 7, "明天几点出发？").await;
    assert!(
        !h.last_message().contains("场景记忆"),
        "{}",
        h.last_message()
    );

    // a private chat's `#不记`
    h.in_private(&mut s, MOM, 8, "#不记：记住：银行卡密码是1234")
        .await;
    assert!(h.last_results().contains("does not take part"));
    assert_eq!(h.counts().memories, 1);
    s.close().await;
    h.kernel
        .shutdown_gracefully(std::time::Duration::from_secs(10))
        .await;
}

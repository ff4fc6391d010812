//! What the scene of scene memory is on each channel, through the real channels and
//! kernel: over QQ the group (a OneBot simulator on the real reverse WebSocket), on voice
//! the trusted speaker, not the session; a CLI injection names its scene or opts out. The
//! kit and what is kept and recalled are in [`crate::memory`].

use crate::common;
use crate::memory::*;

use common::*;
use homebot::clock::ManualClock;
use serde_json::json;

/// Through the QQ channel itself (a OneBot simulator on the real reverse WebSocket of
/// `homebot gateway`): the group's id becomes the scene's peer, so a memory kept in one
/// family group is recalled there — and not in the other group, nor in a private chat.
#[tokio::test]
async fn over_qq_the_group_is_the_scene() {
    use common::qq::{at_bot, gateway, sim, text as seg, GROUP, GROUP2, MOM};
    let dir = workspace();
    let ws = dir.path();
    let fake = fake().await;
    let gw = gateway(ws, &fake).await;
    let mut s = sim(&gw).await;
    s.group_msg(
        GROUP,
        MOM,
        1,
        json!([at_bot(), seg("记住：这个群里说话要简短")]),
    )
    .await;
    s.expect_send().await;
    let results = tool_results(fake.requests().last().unwrap());
    assert!(
        results[0]
            .1
            .contains(&format!("chan:qq/peer:group_{GROUP}")),
        "{results:?}"
    );
    s.group_msg(GROUP, MOM, 2, json!([at_bot(), seg("明天几点出发？")]))
        .await;
    s.expect_send().await;
    assert!(
        last_tail(&fake).contains("这个群里说话要简短"),
        "{}",
        last_tail(&fake)
    );
    s.group_msg(GROUP2, MOM, 3, json!([at_bot(), seg("明天几点出发？")]))
        .await;
    s.expect_send().await;
    assert!(
        !last_tail(&fake).contains("场景记忆"),
        "{}",
        last_tail(&fake)
    );
    s.private_msg(MOM, 4, json!([seg("明天几点出发？")])).await;
    s.expect_send().await;
    assert!(
        !last_tail(&fake).contains("场景记忆"),
        "{}",
        last_tail(&fake)
    );
    s.close().await;
}

/// Every wake is a new voice session: the trusted speaker, not the session, is the peer.
#[tokio::test]
async fn on_voice_the_trusted_speaker_is_the_peer() {
    let dir = workspace();
    let ws = dir.path();
    let fake = fake().await;
    let clock = ManualClock::new(at("2026-03-02T18:30:00+08:00"));
    let k = kernel(ws, &fake, &clock);
    k.handle_turn(homebot::channels::voice::turn(
        "wake-1",
        "mom",
        "记住：我做饭按三个人的量",
    ))
    .await;
    k.memory().flush().await;
    clock.set(at("2026-03-05T18:30:00+08:00"));
    k.handle_turn(homebot::channels::voice::turn(
        "wake-2",
        "mom",
        "今晚煮多少米？",
    ))
    .await;
    assert!(
        last_tail(&fake).contains("三个人的量"),
        "{}",
        last_tail(&fake)
    );
    for (session, speaker) in [("wake-3", "guest"), ("wake-4", "dad")] {
        k.handle_turn(homebot::channels::voice::turn(
            session,
            speaker,
            "今晚煮多少米？",
        ))
        .await;
        assert!(!last_tail(&fake).contains("场景记忆"), "{speaker}");
    }
    k.shutdown();
}

/// An injection with an explicit scene: `homebot chat --scene KEY` keeps and recalls
/// there; `--scene-policy none` leaves nothing.
#[tokio::test]
async fn a_cli_injection_names_its_scene_or_opts_out() {
    let dir = workspace();
    let ws = dir.path();
    let fake = fake().await;
    let run = |args: &[&str]| {
        let mut c = homebot(ws, Some(&fake));
        c.arg("chat").args(args);
        c
    };
    let out = run(&[
        "-m",
        "记住：厨房里份量按三个人",
        "--scene",
        "Chan:Kitchen / Place:Stove",
    ])
    .output()
    .await
    .unwrap();
    assert!(out.status.success(), "{out:?}");
    let results = tool_results(fake.requests().last().unwrap());
    assert!(
        results[0].1.contains("chan:kitchen/place:stove"),
        "{results:?}"
    );
    // recalled for that scene, whatever the words
    let out = run(&["-m", "今晚吃什么", "--scene", "chan:kitchen/place:stove"])
        .output()
        .await
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    assert!(
        last_tail(&fake).contains("份量按三个人"),
        "{}",
        last_tail(&fake)
    );
    // opted out: no recall and no trace
    run(&[
        "-m",
        "今晚吃什么",
        "--scene",
        "chan:kitchen/place:stove",
        "--scene-policy",
        "none",
    ])
    .output()
    .await
    .unwrap();
    assert!(
        !last_tail(&fake).contains("份量按三个人"),
        "{}",
        last_tail(&fake)
    );
    let out = homebot(ws, None).args(["memory"]).output().await.unwrap();
    let listing = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(listing.contains("chan:kitchen/place:stove"), "{listing}");
}

//! A reminder for a Home Assistant satellite that rings while Home Assistant cannot be
//! reached waits for that satellite's next turn — and when Home Assistant comes back
//! during that wait (against the simulated Home Assistant of tests/it/ha_fake), it is
//! announced at once, once, and the reminder is marked rung: one set by a Wyoming turn
//! (the voice channel's door) and one set by Home Assistant's own agent (the Home
//! Assistant channel's door, which holds through voice).

use crate::common;
use crate::ha_fake;

use common::gateway::Gateway;
use common::*;
use ha_fake::SimHa;
use homebot::reminders::book::{Origin, ReminderBook};
use std::time::Duration;

const TOKEN: &str = "sim-token-for-held";

#[tokio::test]
async fn a_reminder_held_while_home_assistant_was_down_is_announced_when_it_comes_back() {
    // a free port where Home Assistant will be
    let held = Refusing::new(); // HA's port, refusing until it comes up
    let addr = held.addr;
    let fake = FakeLlm::start(|_, _| text("好的")).await;
    let dir = workspace();
    let ws = dir.path().join("ws");
    std::fs::create_dir_all(&ws).unwrap();
    std::fs::write(
        ws.join("config.toml"),
        format!("[voice]\nwyoming_listen = \"127.0.0.1:0\"\n\n[home_assistant]\nurl = \"http://{addr}\"\n"),
    )
    .unwrap();
    // a reminder a Wyoming turn in the kitchen set, due as the gateway starts
    let now = chrono::Local::now().fixed_offset();
    let mut book = ReminderBook::default();
    book.add(
        now - chrono::Duration::seconds(2),
        now - chrono::Duration::seconds(1),
        "关火",
        Origin {
            channel: "voice".into(),
            chat_id: "kitchen-session".into(),
            speaker_id: "guest".into(),
            target: "ha:assist_satellite.kitchen".into(),
        },
    )
    .unwrap();
    // … and one Home Assistant's own agent set there (the Home Assistant channel's door)
    book.add(
        now - chrono::Duration::seconds(2),
        now - chrono::Duration::seconds(1),
        "看汤",
        Origin {
            channel: "home_assistant".into(),
            chat_id: "01jqhaconv0001".into(),
            speaker_id: "guest".into(),
            target: "assist_satellite.kitchen".into(),
        },
    )
    .unwrap();
    homebot::reminders::store::save(&ws.join("reminders.json"), &book).unwrap();

    let gw = Gateway::start(&ws, &fake, &[("HOMEBOT_HA_TOKEN", TOKEN)], &["wyoming"]).await;
    // Home Assistant cannot be reached: both held for the satellite's next turn (not
    // retried blindly by the Cron until they expire)
    eventually_async("both reminders held", Duration::from_secs(30), || {
        let log = gw.log();
        async move {
            match log.matches("the message waits for its next turn").count() {
                2 => Ok(()),
                _ => Err(log),
            }
        }
    })
    .await;

    // Home Assistant comes back; no turn is said meanwhile
    let ha = SimHa::start_on(held, TOKEN).await;
    let announced_of = |ha: &SimHa, words: &str| {
        ha.service_calls("assist_satellite", "announce")
            .into_iter()
            .filter(|c| {
                c["service_data"]["message"]
                    .as_str()
                    .unwrap_or_default()
                    .contains(words)
            })
            .collect::<Vec<_>>()
    };
    let announced = |ha: &SimHa| announced_of(ha, "关火");
    // (the reconnect backoff is at most a few seconds here; the bound is only a bound)
    eventually_async("the announcement", Duration::from_secs(90), || {
        let none = announced(&ha).is_empty() || announced_of(&ha, "看汤").is_empty();
        let log = gw.log();
        async move {
            if none {
                Err(format!("the gateway's log:\n{log}"))
            } else {
                Ok(())
            }
        }
    })
    .await;
    let calls = announced(&ha);
    assert_eq!(
        calls[0]["target"]["entity_id"], "assist_satellite.kitchen",
        "{calls:?}"
    );
    // said, so marked rung
    let mut listed = String::new();
    for _ in 0..200 {
        let out = homebot(&ws, None)
            .args(["reminders", "--all"])
            .output()
            .await
            .unwrap();
        listed = String::from_utf8_lossy(&out.stdout).into_owned();
        if listed.matches("已响").count() == 2 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(listed.matches("已响").count(), 2, "{listed}");
    gw.wait_log("announced when it came back", 10).await;
    // once: it no longer waits for the satellite, and was announced one time
    assert_eq!(announced(&ha).len(), 1, "{}", gw.log());
    assert_eq!(announced_of(&ha, "看汤").len(), 1, "{}", gw.log());
}

//! The dashboard against a running gateway (`homebot gateway` as a child, the fake
//! model, real sockets): its JSON API field by field after a turn enters cooking, the
//! live poll after a second turn, session id validation, and who a session names as
//! having entered it. The token rules are in [`crate::dashboard_token`].

use crate::common;

use common::gateway::Gateway;
use common::{homebot, read_json, scripted, text, tool_call, user_words, FakeLlm};
use reqwest::StatusCode;
use serde_json::{json, Value};
use std::path::Path;
use std::time::Duration;

pub(crate) const TOKEN: &str = "tok-3f9c-dashboard-owner";

/// The model: sets a reminder when asked, else the cooking assistant of `scripted`.
pub(crate) async fn fake() -> FakeLlm {
    FakeLlm::start(|body, _| {
        let msgs = body["messages"].as_array().cloned().unwrap_or_default();
        let last = msgs.last().cloned().unwrap_or_default();
        if last["role"] == "tool" {
            return text(&format!(
                "（工具结果）{}",
                last["content"].as_str().unwrap()
            ));
        }
        if user_words(&last).contains("提醒") {
            return tool_call("set_reminder", json!({"in_seconds": 3600, "text": "关火"}));
        }
        scripted(body)
    })
    .await
}

/// The gateway with the dashboard on `listen` (and `token`); its base URL through
/// loopback, whatever address it bound.
pub(crate) async fn start(
    ws: &Path,
    fake: &FakeLlm,
    listen: &str,
    token: Option<&str>,
) -> (Gateway, String) {
    std::fs::write(
        ws.join("config.toml"),
        "[[members]]\nid = \"mom\"\nname = \"妈妈\"\nqq_ids = [\"10001\"]\n",
    )
    .unwrap();
    let mut env = vec![("HOMEBOT_HTTP_LISTEN", listen)];
    if let Some(t) = token {
        env.push(("HOMEBOT_HTTP_TOKEN", t));
    }
    let gw = Gateway::start(ws, fake, &env, &[]).await;
    let addr = gw.dashboard_addr().await;
    let port = addr.rsplit(':').next().unwrap();
    (gw, format!("http://127.0.0.1:{port}"))
}

pub(crate) async fn chat(ws: &Path, fake: &FakeLlm, words: &str) -> String {
    chat_as(ws, fake, "mom", words).await
}

async fn chat_as(ws: &Path, fake: &FakeLlm, speaker: &str, words: &str) -> String {
    let o = homebot(ws, Some(fake))
        .args(["chat", "-m", words, "--speaker", speaker])
        .output()
        .await
        .unwrap();
    assert!(o.status.success(), "{o:?}");
    String::from_utf8_lossy(&o.stdout).to_string()
}

pub(crate) fn client() -> reqwest::Client {
    reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .timeout(Duration::from_secs(20))
        .build()
        .unwrap()
}

pub(crate) async fn get_json(url: &str) -> Value {
    let r = client().get(url).send().await.unwrap();
    assert_eq!(r.status(), StatusCode::OK, "{url}");
    r.json().await.unwrap()
}

/// Poll `url` until `ok` holds for its JSON.
async fn poll_json(url: &str, ok: impl Fn(&Value) -> bool) -> Value {
    let what = format!("{url} to answer as expected");
    common::eventually_async(&what, Duration::from_secs(30), || async {
        let v = get_json(url).await;
        if ok(&v) {
            Ok(v)
        } else {
            Err(v)
        }
    })
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_api_shows_a_cooking_session_field_by_field_and_the_poll_sees_the_next_turn() {
    let ws = common::workspace();
    let ws = ws.path();
    let fake = fake().await;
    let (_gw, base) = start(ws, &fake, "127.0.0.1:0", Some(TOKEN)).await;

    let st = get_json(&format!("{base}/api/status")).await;
    assert_eq!(st["mode"]["active"], false, "{st}");
    assert!(st["session"].is_null(), "{st}");
    assert_eq!(st["channels"], json!([]));
    assert_eq!(st["reminders"], json!([]));
    assert_eq!(st["household"], "家");
    assert!(st["uptime_secs"].is_u64(), "{st}");
    // the modes, each with its SKILL.md's description
    let cooking = st["modes"]
        .as_array()
        .and_then(|m| m.iter().find(|m| m["id"] == "cooking"))
        .unwrap_or_else(|| panic!("no cooking mode: {st}"));
    assert!(
        cooking["description"]
            .as_str()
            .is_some_and(|d| d.starts_with("做饭模式：在厨房里")),
        "{st}"
    );

    chat(ws, &fake, "打开做饭模式，今晚三个人吃番茄炒蛋").await;
    let action = read_json(&ws.join("modes/action.json"));
    let sid = action["session_id"].as_str().unwrap().to_string();
    let st = get_json(&format!("{base}/api/status")).await;
    // the mode state exactly as action.json has it: the same ten keys and values
    assert_eq!(st["mode"], action, "{st}");
    assert_eq!(st["mode"]["active"], true);
    assert_eq!(st["mode"]["mode_id"], "cooking");
    assert_eq!(st["mode"]["display_name"], "做饭模式");
    assert_eq!(st["session"]["session_id"], sid.as_str());
    assert_eq!(st["session"]["entered_by"], "妈妈");
    assert_eq!(st["session"]["entered_on"], "cli");
    assert_eq!(st["session"]["entered_how"], "switch");
    assert_eq!(st["session"]["turns"], 1);
    assert!(st.to_string().find(TOKEN).is_none());

    let list = get_json(&format!("{base}/api/sessions")).await;
    let s = &list["sessions"][0];
    assert_eq!(list["sessions"].as_array().unwrap().len(), 1, "{list}");
    assert_eq!(s["session_id"], sid.as_str());
    assert_eq!(s["mode_id"], "cooking");
    assert_eq!(s["display_name"], "做饭模式");
    assert_eq!(s["state"], "active");
    assert_eq!(s["turns"], 1);
    assert_eq!(s["started_at"], action["started_at"]);
    assert!(s["summary"].is_null(), "{s}");

    let live = get_json(&format!("{base}/api/live?after=0")).await;
    assert_eq!(live["session_id"], sid.as_str());
    assert_eq!(live["total"], 1);
    let r = &live["records"][0];
    assert_eq!(r["index"], 0);
    assert_eq!(r["speaker"], "妈妈");
    assert_eq!(r["channel"], "cli");
    assert_eq!(r["user"], "打开做饭模式，今晚三个人吃番茄炒蛋");
    assert_eq!(r["failed"], false);

    // a second turn: the poll from where the page stood sees it, and only it
    chat(ws, &fake, "番茄要放几个？").await;
    let live = get_json(&format!("{base}/api/live?after=1")).await;
    assert_eq!(live["total"], 2, "{live}");
    assert_eq!(live["records"].as_array().unwrap().len(), 1, "{live}");
    assert_eq!(live["records"][0]["index"], 1);
    assert_eq!(live["records"][0]["user"], "番茄要放几个？");
    assert_eq!(live["records"][0]["assistant"], "好的：番茄要放几个？");

    // the session in full; the second turn's one call is in its audit file (written
    // in the background, so polled): prompt 120, of which 64 cached (the fake's usage)
    let d = poll_json(&format!("{base}/api/sessions/{sid}"), |d| {
        d["tokens"]
            .as_array()
            .is_some_and(|t| t.iter().any(|p| p["turn"] == 2))
    })
    .await;
    assert_eq!(d["session_id"], sid.as_str());
    assert_eq!(d["turns"], 2);
    assert_eq!(d["conversation"]["total"], 2);
    assert_eq!(d["conversation"]["records"][1]["user"], "番茄要放几个？");
    let t2 = d["tokens"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["turn"] == 2)
        .unwrap();
    assert_eq!(
        *t2,
        json!({"turn": 2, "prompt": 120, "cached": 64, "completion": 12, "calls": 1})
    );

    // a reminder shows in the status, and the owner cancels it through the API
    chat(ws, &fake, "十分钟后提醒我关火").await;
    let st = poll_json(&format!("{base}/api/status"), |s| {
        s["reminders"].as_array().is_some_and(|r| !r.is_empty())
    })
    .await;
    let rem = &st["reminders"][0];
    assert_eq!(rem["text"], "关火");
    assert_eq!(rem["channel"], "cli");
    let id = rem["id"].as_u64().unwrap();
    let url = format!("{base}/api/reminders/{id}/cancel");
    let r = client().post(&url).send().await.unwrap();
    assert_eq!(r.status(), StatusCode::UNAUTHORIZED);
    let r = client()
        .post(&url)
        .bearer_auth(TOKEN)
        .header("accept", "application/json")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::OK);
    let v: Value = r.json().await.unwrap();
    assert_eq!(v["ok"], true, "{v}");
    assert!(v["text"].as_str().unwrap().contains("关火"), "{v}");
    let st = get_json(&format!("{base}/api/status")).await;
    assert_eq!(st["reminders"], json!([]), "{st}");

    // the page itself: the mode, the conversation, the member, never the token
    let page = client().get(&base).send().await.unwrap();
    assert_eq!(page.status(), StatusCode::OK);
    let csp = page.headers()["content-security-policy"]
        .to_str()
        .unwrap()
        .to_string();
    assert!(csp.contains("default-src 'none'"), "{csp}");
    assert!(csp.contains("script-src 'sha256-"), "{csp}");
    assert!(!csp.contains("unsafe-inline"), "{csp}");
    let html = page.text().await.unwrap();
    // a policy without unsafe-inline would drop style attributes: the page has none
    assert!(!html.contains(" style="), "{html}");
    for want in [
        "做饭模式",
        "番茄要放几个？",
        "妈妈",
        "退出模式",
        &sid,
        "id=\"modes\"",
        "<b>做饭模式</b> — 做饭模式：在厨房里",
    ] {
        assert!(html.contains(want), "{want} missing from the page");
    }
    assert!(!html.contains(TOKEN));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn session_ids_are_checked_before_they_come_near_a_path() {
    let ws = common::workspace();
    let ws = ws.path();
    let fake = fake().await;
    let (_gw, base) = start(ws, &fake, "127.0.0.1:0", None).await;
    std::fs::write(ws.join("secret.txt"), "do not show").unwrap();
    let long = "a".repeat(4000);
    for (id, want) in [
        ("..%2F..%2Fsecret.txt", StatusCode::BAD_REQUEST),
        ("%2e%2e%2fconfig.toml", StatusCode::BAD_REQUEST),
        ("cook-20261022-195500-a1b2c3%00", StatusCode::BAD_REQUEST),
        ("cook-20261022-195500-zzzzzz", StatusCode::BAD_REQUEST),
        (long.as_str(), StatusCode::BAD_REQUEST),
        ("cook-20261022-195500-a1b2c3", StatusCode::NOT_FOUND),
    ] {
        for prefix in ["/api/sessions/", "/sessions/"] {
            let r = client()
                .get(format!("{base}{prefix}{id}"))
                .send()
                .await
                .unwrap();
            let status = r.status();
            let body = r.text().await.unwrap();
            assert_eq!(status, want, "{prefix}{id}: {body}");
            assert!(!body.contains("do not show"));
        }
    }
    // a reminder id that is not a number
    let r = client()
        .post(format!("{base}/api/reminders/1;rm/cancel"))
        .send()
        .await
        .unwrap();
    assert_eq!(
        r.status(),
        StatusCode::FORBIDDEN,
        "no token is set: no actions at all"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn entered_by_names_who_entered_and_how_not_who_spoke_first() {
    let ws = common::workspace();
    let ws = ws.path();
    let fake = fake().await;
    let (_gw, base) = start(ws, &fake, "127.0.0.1:0", Some(TOKEN)).await;
    // mom enters by command (not recorded), then the kid speaks first in the session
    chat_as(ws, &fake, "mom", "/mode enter cooking").await;
    chat_as(ws, &fake, "kid", "今天吃什么").await;
    let st = get_json(&format!("{base}/api/status")).await;
    assert_eq!(st["session"]["turns"], 1, "{st}");
    assert_eq!(st["session"]["entered_by"], "妈妈", "{st}");
    assert_eq!(st["session"]["entered_on"], "cli", "{st}");
    assert_eq!(st["session"]["entered_how"], "command", "{st}");

    // a session written before entered.json existed: who spoke first, no `how`
    let action = read_json(&ws.join("modes/action.json"));
    let dir = std::path::PathBuf::from(action["session_dir"].as_str().unwrap());
    std::fs::remove_file(dir.join("entered.json")).unwrap();
    let st = get_json(&format!("{base}/api/status")).await;
    assert_eq!(st["session"]["entered_by"], "kid", "{st}");
    assert!(st["session"]["entered_how"].is_null(), "{st}");
}

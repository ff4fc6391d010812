//! The learned examples on the dashboard, against a running gateway (`homebot gateway`
//! as a child, the fake model, the OneBot simulator for QQ, real sockets): a QQ group's
//! thanked answer shows in `GET /api/examples` and on `/examples`; the owner keeps the
//! group's next answer from the dashboard (a `dashboard` case) while a private chat's is
//! neither offered nor kept; a forget needs the token and takes the case off the disk
//! (`homebot examples` no longer lists it), an unknown id is a conflict; in the group a
//! guest may neither list nor forget, a member may; a corrupt cases file is a warning.

use crate::common;

use common::gateway::Gateway;
use common::onebot::{text_of, OneBotSim};
use common::qq::{at_bot, text, DAD, GROUP, MOM};
use common::{homebot, read_json, FakeLlm};
use reqwest::StatusCode;
use serde_json::{json, Value};
use std::path::Path;
use std::time::Duration;

const TOKEN: &str = "tok-7d1e-examples-owner";
const CHAT: &str = "group:5550001";

/// The gateway with QQ and the dashboard (and its token); its base URL, a connected
/// OneBot simulator.
async fn start(ws: &Path, fake: &FakeLlm) -> (Gateway, String, OneBotSim) {
    common::qq::config(ws, "");
    let group = GROUP.to_string();
    let gw = Gateway::start(
        ws,
        fake,
        &[
            ("HOMEBOT_QQ_LISTEN", "127.0.0.1:0"),
            ("HOMEBOT_QQ_ACCESS_TOKEN", common::qq::TOKEN),
            ("HOMEBOT_QQ_ALLOW_GROUPS", &group),
            ("HOMEBOT_HTTP_LISTEN", "127.0.0.1:0"),
            ("HOMEBOT_HTTP_TOKEN", TOKEN),
        ],
        &["qq"],
    )
    .await;
    let addr = gw.dashboard_addr().await;
    let port = addr.rsplit(':').next().unwrap().to_string();
    let sim = common::qq::sim(&gw).await;
    (gw, format!("http://127.0.0.1:{port}"), sim)
}

/// What homebot answered `user` in the group.
async fn in_group(s: &mut OneBotSim, user: u64, id: i64, words: &str) -> String {
    s.group_msg(GROUP, user, id, json!([at_bot(), text(words)]))
        .await;
    let a = s.expect_send().await;
    assert_eq!(a["action"], "send_group_msg", "{a}");
    text_of(&a).trim().to_string()
}

fn client() -> reqwest::Client {
    reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .timeout(Duration::from_secs(20))
        .build()
        .unwrap()
}

async fn get(url: &str) -> reqwest::Response {
    let r = client().get(url).send().await.unwrap();
    assert_eq!(r.status(), StatusCode::OK, "{url}");
    r
}

/// `/api/examples`, once `ok` holds for it.
async fn examples_when(base: &str, ok: impl Fn(&Value) -> bool) -> Value {
    let url = format!("{base}/api/examples");
    common::eventually_async(
        "/api/examples as expected",
        Duration::from_secs(30),
        || async {
            let v: Value = get(&url).await.json().await.unwrap();
            if ok(&v) {
                Ok(v)
            } else {
                Err(v)
            }
        },
    )
    .await
}

fn mode<'a>(v: &'a Value, id: &str) -> &'a Value {
    v["modes"]
        .as_array()
        .and_then(|m| m.iter().find(|m| m["mode_id"] == id))
        .unwrap_or_else(|| panic!("no mode {id}: {v}"))
}

/// The cases on disk.
fn kept(ws: &Path) -> Vec<Value> {
    let path = ws.join("modes/examples/cooking.json");
    read_json(&path)["cases"].as_array().unwrap().clone()
}

fn ids(ws: &Path) -> Vec<String> {
    kept(ws)
        .iter()
        .map(|c| c["id"].as_str().unwrap().to_string())
        .collect()
}

/// A token-bearing JSON action: its status and answer.
async fn act(url: &str, form: Option<&[(&str, &str)]>) -> (StatusCode, Value) {
    let mut req = client()
        .post(url)
        .bearer_auth(TOKEN)
        .header("accept", "application/json");
    if let Some(f) = form {
        req = req.form(f);
    }
    let r = req.send().await.unwrap();
    let status = r.status();
    (status, r.json().await.unwrap_or(Value::Null))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_owner_sees_keeps_and_forgets_learned_examples_from_the_dashboard() {
    let dir = common::workspace();
    let ws = dir.path();
    let fake = FakeLlm::scripted().await;
    let (_gw, base, mut s) = start(ws, &fake).await;

    // a cooking session in the group; an answer there, thanked by another: kept
    in_group(&mut s, MOM, 1, "打开做饭模式").await;
    let asked = "红烧肉 <不腻> 怎么做";
    assert_eq!(
        in_group(&mut s, MOM, 2, asked).await,
        format!("好的：{asked}")
    );
    in_group(&mut s, DAD, 3, "谢谢！").await;
    let v = examples_when(&base, |v| {
        v["modes"].as_array().is_some_and(|m| {
            m.iter()
                .any(|m| m["mode_id"] == "cooking" && m["cases"].as_array().unwrap().len() == 1)
        })
    })
    .await;
    let cooking = mode(&v, "cooking");
    assert_eq!(cooking["display_name"], "做饭模式");
    let case = &cooking["cases"][0];
    assert_eq!(case["id"], "cooking-1");
    assert_eq!(case["judged"], "thanked");
    assert_eq!(case["channel"], "qq");
    assert_eq!(case["chat_id"], CHAT);
    assert_eq!(case["room"], Value::Null);
    assert_eq!(case["user"], asked);
    assert_eq!(case["answer"], format!("好的：{asked}"));
    assert!(case["at"].as_str().unwrap().starts_with("20"), "{case}");
    let sid = read_json(&ws.join("modes/action.json"))["session_id"].clone();
    assert_eq!(case["session_id"], sid);
    // the thanks kept the answer before it and is no candidate itself
    assert_eq!(v["candidates"], json!([]), "{v}");

    // the page: linked from `/`, the case escaped, with its forget button
    let home = get(&base).await.text().await.unwrap();
    assert!(home.contains("href=\"/examples\""), "{home}");
    let page = get(&format!("{base}/examples")).await.text().await.unwrap();
    for want in [
        "学到的例子",
        "做饭模式",
        "红烧肉 &lt;不腻&gt; 怎么做",
        "道谢",
        "qq/group:5550001",
        "action=\"/action/examples/cooking-1/forget\"",
        "忘掉",
    ] {
        assert!(page.contains(want), "{want} missing from {page}");
    }
    assert!(!page.contains("<不腻>"), "unescaped: {page}");

    // the group's next answer and a private chat's: only the group's is offered
    in_group(&mut s, MOM, 4, "番茄炒蛋先放什么").await;
    s.private_msg(MOM, 5, json!([text("清蒸鲈鱼蒸几分钟")]))
        .await;
    let a = s.expect_send().await;
    assert_eq!(a["action"], "send_private_msg", "{a}");
    let v = examples_when(&base, |v| {
        v["candidates"].as_array().is_some_and(|c| !c.is_empty())
    })
    .await;
    let offered = v["candidates"].as_array().unwrap();
    assert_eq!(offered.len(), 1, "{v}");
    assert_eq!(offered[0]["channel"], "qq");
    assert_eq!(offered[0]["chat_id"], CHAT);
    assert_eq!(offered[0]["user"], "番茄炒蛋先放什么");
    assert_eq!(offered[0]["answer"], "好的：番茄炒蛋先放什么");
    assert!(!v.to_string().contains("鲈鱼"), "{v}");
    let page = get(&format!("{base}/examples")).await.text().await.unwrap();
    assert!(page.contains("value=\"group:5550001\""), "{page}");
    assert!(page.contains("记作例子"), "{page}");
    assert!(
        !page.contains("鲈鱼") && !page.contains("private:"),
        "{page}"
    );

    // keeping the private chat's answer, named by hand: refused, saying why
    let keep = format!("{base}/api/examples/keep");
    let private = [("channel", "qq"), ("chat_id", "private:10001")];
    let (status, r) = act(&keep, Some(&private)).await;
    assert_eq!(status, StatusCode::CONFLICT, "{r}");
    assert!(r["text"].as_str().unwrap().contains("私聊"), "{r}");
    assert_eq!(ids(ws), ["cooking-1"]);
    // without the token nothing is kept; with it the group's answer is, as the owner's
    let group = [("channel", "qq"), ("chat_id", CHAT)];
    let r = client().post(&keep).form(&group).send().await.unwrap();
    assert_eq!(r.status(), StatusCode::UNAUTHORIZED);
    assert_eq!(ids(ws), ["cooking-1"]);
    let (status, r) = act(&keep, Some(&group)).await;
    assert_eq!(status, StatusCode::OK, "{r}");
    assert!(r["text"].as_str().unwrap().contains("cooking-2"), "{r}");
    let cases = kept(ws);
    assert_eq!(cases.len(), 2);
    assert_eq!(cases[1]["judged"], "dashboard");
    assert_eq!(cases[1]["user"], "番茄炒蛋先放什么");
    assert_eq!(cases[1]["scene"]["chat_id"], CHAT);
    // kept once: no longer offered, and a second keep is a conflict
    let v = get(&format!("{base}/api/examples"))
        .await
        .json::<Value>()
        .await
        .unwrap();
    assert_eq!(v["candidates"], json!([]), "{v}");
    assert_eq!(
        mode(&v, "cooking")["cases"][0]["judged"],
        "dashboard",
        "newest first"
    );
    assert_eq!(act(&keep, Some(&group)).await.0, StatusCode::CONFLICT);
    // a chat that cannot be named in a command is refused before one is made
    let spaced = [("channel", "qq"), ("chat_id", "group 1")];
    assert_eq!(act(&keep, Some(&spaced)).await.0, StatusCode::BAD_REQUEST);

    // forgetting: the token always, another site never, the id checked, unknown a conflict
    let forget = |id: &str| format!("{base}/api/examples/{id}/forget");
    let r = client().post(forget("cooking-1")).send().await.unwrap();
    assert_eq!(r.status(), StatusCode::UNAUTHORIZED);
    let r = client()
        .post(forget("cooking-1"))
        .bearer_auth(TOKEN)
        .header("origin", "http://elsewhere.example")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::FORBIDDEN);
    let long = format!("cooking-{}", "1".repeat(200));
    for bad in ["..%2Fx-1", "cooking", long.as_str()] {
        assert_eq!(
            act(&forget(bad), None).await.0,
            StatusCode::BAD_REQUEST,
            "{bad}"
        );
    }
    let (status, r) = act(&forget("cooking-99"), None).await;
    assert_eq!(status, StatusCode::CONFLICT, "{r}");
    assert!(r["text"].as_str().unwrap().contains("cooking-99"), "{r}");
    assert_eq!(ids(ws), ["cooking-1", "cooking-2"]);
    // the page's own form: a small page whose way back is the examples page
    let r = client()
        .post(format!("{base}/action/examples/cooking-1/forget"))
        .bearer_auth(TOKEN)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::OK);
    let html = r.text().await.unwrap();
    assert!(html.contains("已忘掉例子 cooking-1"), "{html}");
    assert!(html.contains("href=\"/examples\""), "{html}");
    assert_eq!(ids(ws), ["cooking-2"], "gone from the disk");
    let o = homebot(ws, None).arg("examples").output().await.unwrap();
    let listed = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{o:?}");
    assert!(listed.contains("cooking: 1 case(s)"), "{listed}");
    assert!(
        listed.contains("cooking-2") && !listed.contains("cooking-1 "),
        "{listed}"
    );
    assert_eq!(
        act(&forget("cooking-1"), None).await.0,
        StatusCode::CONFLICT
    );

    // in the group: a guest may neither list nor forget; a member may both
    let said = in_group(&mut s, DAD, 6, "/examples forget cooking-2").await;
    assert!(said.contains("没有忘掉例子的权限"), "{said}");
    let said = in_group(&mut s, DAD, 7, "/examples").await;
    assert!(said.contains("只给家里人看"), "{said}");
    assert_eq!(ids(ws), ["cooking-2"]);
    let said = in_group(&mut s, MOM, 8, "/examples").await;
    assert!(said.contains("cooking：1 个例子"), "{said}");
    assert!(
        said.contains("cooking-2") && said.contains("网页上记下"),
        "{said}"
    );
    let said = in_group(&mut s, MOM, 9, "/examples forget cooking-9").await;
    assert!(said.contains("没有例子 cooking-9"), "{said}");
    let said = in_group(&mut s, MOM, 10, "/examples forget cooking-2").await;
    assert!(said.contains("已忘掉例子 cooking-2"), "{said}");
    assert!(kept(ws).is_empty());

    // a corrupt cases file: a warning on the page and in the JSON, and left in place
    let corrupt = ws.join("modes/examples/baking.json");
    std::fs::write(&corrupt, "{not json").unwrap();
    let v = get(&format!("{base}/api/examples"))
        .await
        .json::<Value>()
        .await
        .unwrap();
    let baking = mode(&v, "baking");
    assert!(
        baking["warning"].as_str().unwrap().contains("unreadable"),
        "{v}"
    );
    assert_eq!(baking["cases"], json!([]));
    let page = get(&format!("{base}/examples")).await.text().await.unwrap();
    assert!(page.contains("class=\"bad warning\""), "{page}");
    assert!(corrupt.exists(), "the dashboard only reads");
}

//! The dashboard's token rules against a running gateway (`homebot gateway` as a child,
//! the fake model, real sockets): reads open on loopback, actions always need the token,
//! everything needs it beyond loopback, and beyond loopback without a token the gateway
//! does not start; the login form's limit on wrong tokens. The kit and the API itself
//! are in [`crate::dashboard`].

use crate::common;
use crate::dashboard::*;

use common::{homebot, read_json};
use reqwest::StatusCode;
use serde_json::Value;
use std::time::Duration;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_loopback_reads_are_open_and_actions_need_the_token_always() {
    let ws = common::workspace();
    let ws = ws.path();
    let fake = fake().await;
    let (_gw, base) = start(ws, &fake, "127.0.0.1:0", Some(TOKEN)).await;
    chat(ws, &fake, "打开做饭模式").await;
    let exit = format!("{base}/api/mode/exit");
    let active = || read_json(&ws.join("modes/action.json"))["active"] == true;

    assert_eq!(
        get_json(&format!("{base}/api/status")).await["mode"]["active"],
        true
    );
    for r in [
        client().post(&exit).send().await.unwrap(),
        client()
            .post(&exit)
            .bearer_auth("wrong")
            .send()
            .await
            .unwrap(),
        client()
            .post(&exit)
            .header("cookie", "homebot_dash=00")
            .send()
            .await
            .unwrap(),
        client()
            .post(format!("{base}/action/mode/exit"))
            .send()
            .await
            .unwrap(),
    ] {
        assert_eq!(r.status(), StatusCode::UNAUTHORIZED);
    }
    // the right token from another site's page is refused too
    let r = client()
        .post(&exit)
        .bearer_auth(TOKEN)
        .header("origin", "http://evil.example")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::FORBIDDEN);
    assert!(active(), "nothing above may exit the mode");

    // a `?token=` link is exchanged for an HttpOnly cookie and a redirect without it
    let r = client()
        .get(format!("{base}/?token={TOKEN}"))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::SEE_OTHER);
    assert_eq!(r.headers()["location"], "/");
    let cookie = r.headers()["set-cookie"].to_str().unwrap().to_string();
    assert!(cookie.contains("HttpOnly") && cookie.contains("SameSite=Strict"));
    assert!(
        !cookie.contains(TOKEN),
        "the cookie holds no readable token"
    );
    let pair = cookie.split(';').next().unwrap().to_string();
    let r = client()
        .get(format!("{base}/?token=nope"))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::UNAUTHORIZED);

    let r = client()
        .post(&exit)
        .header("cookie", &pair)
        .header("origin", &base)
        .header("accept", "application/json")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::OK);
    let v: Value = r.json().await.unwrap();
    assert_eq!(v["ok"], true, "{v}");
    assert!(!active());
    let st = get_json(&format!("{base}/api/status")).await;
    assert_eq!(st["mode"]["active"], false);
    assert_eq!(st["mode"]["exit_reason"], "user");
    // the kernel answered it as a refusal when there is nothing to exit
    let r = client()
        .post(&exit)
        .bearer_auth(TOKEN)
        .header("accept", "application/json")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::CONFLICT);

    // the cookie is a login, not the token: its hex is nobody, and a logout ends it
    assert!(
        !pair.contains(&hex(TOKEN)),
        "the cookie is not the token's hex"
    );
    let post_with = |cookie: String| {
        client()
            .post(format!("{base}/api/reminders/none/cancel"))
            .header("cookie", cookie)
            .header("origin", &base)
            .send()
    };
    let r = post_with(format!("homebot_dash={}", hex(TOKEN)))
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::UNAUTHORIZED);
    assert_ne!(
        post_with(pair.clone()).await.unwrap().status(),
        StatusCode::UNAUTHORIZED
    );
    let r = client()
        .post(format!("{base}/logout"))
        .header("cookie", &pair)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::SEE_OTHER);
    assert!(r.headers()["set-cookie"]
        .to_str()
        .unwrap()
        .contains("Max-Age=0"));
    let r = post_with(pair.clone()).await.unwrap();
    assert_eq!(r.status(), StatusCode::UNAUTHORIZED, "logged out");
}

/// Lower-case hex of `s` (what the cookie held before logins had ids of their own).
fn hex(s: &str) -> String {
    s.bytes().map(|b| format!("{b:02x}")).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn beyond_loopback_every_request_needs_the_token() {
    let ws = common::workspace();
    let ws = ws.path();
    let fake = fake().await;
    let (gw, base) = start(ws, &fake, "0.0.0.0:0", Some(TOKEN)).await;
    assert!(gw.log().contains("addr=0.0.0.0:"), "{}", gw.log());
    assert!(!gw.log().contains(TOKEN), "the token is never logged");
    for path in [
        "/",
        "/api/status",
        "/api/sessions",
        "/api/live",
        "/sessions/x",
    ] {
        let r = client().get(format!("{base}{path}")).send().await.unwrap();
        assert_eq!(r.status(), StatusCode::UNAUTHORIZED, "{path}");
        let r = client()
            .get(format!("{base}{path}"))
            .bearer_auth("wrong")
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), StatusCode::UNAUTHORIZED, "{path}");
    }
    for path in ["/api/status", "/api/sessions", "/api/live"] {
        let r = client()
            .get(format!("{base}{path}"))
            .bearer_auth(TOKEN)
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), StatusCode::OK, "{path}");
    }
    // the login form is reachable, and logging in works
    let r = client().get(format!("{base}/login")).send().await.unwrap();
    assert_eq!(r.status(), StatusCode::OK);
    let r = client()
        .post(format!("{base}/login"))
        .form(&[("token", TOKEN)])
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::SEE_OTHER);
    let pair = r.headers()["set-cookie"]
        .to_str()
        .unwrap()
        .split(';')
        .next()
        .unwrap()
        .to_string();
    let r = client()
        .get(&base)
        .header("cookie", pair)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::OK);
    assert!(!r.text().await.unwrap().contains(TOKEN));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_login_form_takes_a_few_wrong_tokens_a_minute_then_answers_429() {
    let ws = common::workspace();
    let ws = ws.path();
    let fake = fake().await;
    let (gw, base) = start(ws, &fake, "127.0.0.1:0", Some(TOKEN)).await;
    let login = |token: &str| {
        client()
            .post(format!("{base}/login"))
            .form(&[("token", token)])
            .send()
    };
    for i in 0..5 {
        let r = login("wrong-guess").await.unwrap();
        assert_eq!(r.status(), StatusCode::UNAUTHORIZED, "try {i}");
    }
    // the rest of sixty at once: refused unlooked-at, with the wait
    for _ in 0..55 {
        let r = login("wrong-guess").await.unwrap();
        assert_eq!(r.status(), StatusCode::TOO_MANY_REQUESTS);
        let wait: u64 = r.headers()["retry-after"]
            .to_str()
            .unwrap()
            .parse()
            .unwrap();
        assert!((1..=12).contains(&wait), "{wait}");
    }
    // the right token too, while the address is shut out
    let r = login(TOKEN).await.unwrap();
    assert_eq!(r.status(), StatusCode::TOO_MANY_REQUESTS);
    assert!(r.headers().get("set-cookie").is_none());
    // logged once, with the address, never the tries
    gw.wait_log("too many wrong tokens", 10).await;
    let log = gw.log();
    assert_eq!(log.matches("too many wrong tokens").count(), 1, "{log}");
    assert!(log.contains("addr=127.0.0.1"), "{log}");
    assert!(!log.contains("wrong-guess") && !log.contains(TOKEN));
    // reading is not limited
    let r = client().get(&base).send().await.unwrap();
    assert_eq!(r.status(), StatusCode::OK);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn beyond_loopback_without_a_token_the_gateway_does_not_start() {
    let ws = common::workspace();
    let fake = fake().await;
    let o = tokio::time::timeout(
        Duration::from_secs(60),
        homebot(ws.path(), Some(&fake))
            .arg("gateway")
            .env("HOMEBOT_HTTP_LISTEN", "0.0.0.0:0")
            .env_remove("HOMEBOT_HTTP_TOKEN")
            .output(),
    )
    .await
    .expect("the gateway must refuse at once, not run")
    .unwrap();
    assert!(!o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("http.listen"), "{err}");
    assert!(err.contains("HOMEBOT_HTTP_TOKEN"), "{err}");
}

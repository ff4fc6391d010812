//! The dashboard in a real browser: headless Chromium (Debian's `chromium`), driven over
//! the Chrome DevTools Protocol on its WebSocket (with `tokio-tungstenite`, which homebot
//! already uses), against a running gateway. The status page shows the mode after a turn
//! enters it; the conversation grows by itself when a second turn is said, pushed (the
//! page does not poll); the exit
//! button is refused without the token and works with it. A screenshot of the page
//! (phone-sized) is kept in `target/test-artifacts/dashboard.png`.
//!
//! Without a Chromium the test fails and says how to install it (`tests/run.sh` installs
//! `chromium` and `fonts-noto-cjk`).

use crate::common;

use base64::Engine;
use common::gateway::Gateway;
use common::{homebot, read_json, FakeLlm};
use futures_util::{SinkExt, StreamExt};
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::time::Duration;
use tokio::net::TcpStream;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::{MaybeTlsStream, WebSocketStream};

const TOKEN: &str = "browser-owner-token-7c1e";

fn chromium() -> Option<PathBuf> {
    if let Ok(p) = std::env::var("HOMEBOT_CHROMIUM") {
        return Some(PathBuf::from(p));
    }
    let path = std::env::var_os("PATH")?;
    for dir in std::env::split_paths(&path) {
        for name in ["chromium", "chromium-browser", "google-chrome"] {
            let p = dir.join(name);
            if p.is_file() {
                return Some(p);
            }
        }
    }
    None
}

/// A headless Chromium and one page of it, spoken to over CDP.
struct Browser {
    _child: tokio::process::Child,
    _profile: tempfile::TempDir,
    ws: WebSocketStream<MaybeTlsStream<TcpStream>>,
    session: String,
    next_id: u64,
}

impl Browser {
    async fn launch(exe: &Path) -> Self {
        let profile = tempfile::tempdir().unwrap();
        let child = tokio::process::Command::new(exe)
            .args([
                "--headless=new",
                "--no-sandbox",
                "--disable-gpu",
                "--no-first-run",
                "--disable-extensions",
                "--remote-debugging-port=0",
                "--window-size=412,915",
            ])
            .arg(format!("--user-data-dir={}", profile.path().display()))
            .arg("about:blank")
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .unwrap();
        // Chromium writes the port it chose and the browser's path here
        let port_file = profile.path().join("DevToolsActivePort");
        let text = loop {
            match std::fs::read_to_string(&port_file) {
                Ok(t) if t.lines().count() >= 2 => break t,
                _ => tokio::time::sleep(Duration::from_millis(50)).await,
            }
        };
        let mut lines = text.lines();
        let (port, path) = (lines.next().unwrap(), lines.next().unwrap());
        let (ws, _) = tokio_tungstenite::connect_async(format!("ws://127.0.0.1:{port}{path}"))
            .await
            .unwrap();
        let mut b = Self {
            _child: child,
            _profile: profile,
            ws,
            session: String::new(),
            next_id: 0,
        };
        let target = b
            .call("Target.createTarget", json!({"url": "about:blank"}))
            .await;
        let attached = b
            .call(
                "Target.attachToTarget",
                json!({"targetId": target["targetId"], "flatten": true}),
            )
            .await;
        b.session = attached["sessionId"].as_str().unwrap().to_string();
        b.call("Page.enable", json!({})).await;
        b.call(
            "Emulation.setDeviceMetricsOverride",
            json!({"width": 412, "height": 915, "deviceScaleFactor": 1, "mobile": true}),
        )
        .await;
        b
    }

    /// Send one command (to the page once attached) and wait for its answer; events in
    /// between are skipped.
    async fn call(&mut self, method: &str, params: Value) -> Value {
        match self.try_call(method, params).await {
            Ok(v) => v,
            Err(e) => panic!("{method}: {e}"),
        }
    }

    /// [`Browser::call`], with the browser's error as it came.
    async fn try_call(&mut self, method: &str, params: Value) -> Result<Value, Value> {
        self.next_id += 1;
        let id = self.next_id;
        let mut msg = json!({"id": id, "method": method, "params": params});
        if !self.session.is_empty() {
            msg["sessionId"] = json!(self.session);
        }
        self.ws.send(Message::Text(msg.to_string())).await.unwrap();
        loop {
            let frame = self.ws.next().await.expect("the browser closed").unwrap();
            let Message::Text(t) = frame else { continue };
            let v: Value = serde_json::from_str(&t).unwrap();
            if v["id"] == id {
                return match v["error"].is_null() {
                    true => Ok(v["result"].clone()),
                    false => Err(v),
                };
            }
        }
    }

    async fn goto(&mut self, url: &str) {
        self.call("Page.navigate", json!({"url": url})).await;
        self.wait_for("document.readyState === 'complete' && location.href !== 'about:blank'")
            .await;
    }

    /// The value of `expr` in the page. An evaluation the page's navigation overtook (the
    /// document it ran in went away: after `Page.navigate`, or the page reloading itself)
    /// is asked again in the new document.
    async fn eval(&mut self, expr: &str) -> Value {
        let params = json!({"expression": expr, "returnByValue": true});
        loop {
            match self.try_call("Runtime.evaluate", params.clone()).await {
                Ok(r) => return r["result"]["value"].clone(),
                Err(e) if navigated(&e) => {
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
                Err(e) => panic!("Runtime.evaluate: {e}"),
            }
        }
    }

    /// Poll `expr` until it is true (the test's timeout bounds the wait).
    async fn wait_for(&mut self, expr: &str) {
        loop {
            if self.eval(expr).await == json!(true) {
                return;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    async fn text(&mut self) -> String {
        self.eval("document.body ? document.body.innerText : ''")
            .await
            .as_str()
            .unwrap_or_default()
            .to_string()
    }

    /// A PNG of the whole page, phone-wide.
    async fn screenshot(&mut self, to: &Path) {
        let height = self
            .eval("document.documentElement.scrollHeight")
            .await
            .as_u64()
            .unwrap_or(915)
            .clamp(400, 4000);
        self.call(
            "Emulation.setDeviceMetricsOverride",
            json!({"width": 412, "height": height, "deviceScaleFactor": 1, "mobile": true}),
        )
        .await;
        let shot = self
            .call("Page.captureScreenshot", json!({"format": "png"}))
            .await;
        let png = base64::engine::general_purpose::STANDARD
            .decode(shot["data"].as_str().unwrap())
            .unwrap();
        assert!(png.starts_with(b"\x89PNG"), "not a PNG");
        std::fs::create_dir_all(to.parent().unwrap()).unwrap();
        std::fs::write(to, png).unwrap();
    }
}

/// Whether a DevTools error says the evaluation's document went away under it.
fn navigated(error: &Value) -> bool {
    let m = error["error"]["message"].as_str().unwrap_or_default();
    m.contains("Inspected target navigated or closed")
        || m.contains("Cannot find context with specified id")
        || m.contains("Execution context was destroyed")
}

async fn chat(ws: &Path, fake: &FakeLlm, words: &str) {
    let o = homebot(ws, Some(fake))
        .args(["chat", "-m", words, "--speaker", "mom"])
        .output()
        .await
        .unwrap();
    assert!(o.status.success(), "{o:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_status_page_follows_the_mode_live_and_exits_only_with_the_token() {
    let exe = chromium().expect(
        "no chromium on PATH (apt-get install chromium fonts-noto-cjk, as tests/run.sh does; or set HOMEBOT_CHROMIUM)",
    );
    let tmp = common::workspace();
    let ws = tmp.path();
    std::fs::write(
        ws.join("config.toml"),
        "[[members]]\nid = \"mom\"\nname = \"妈妈\"\n",
    )
    .unwrap();
    let fake = FakeLlm::scripted().await;
    let gw = Gateway::start(
        ws,
        &fake,
        &[
            ("HOMEBOT_HTTP_LISTEN", "127.0.0.1:0"),
            ("HOMEBOT_HTTP_TOKEN", TOKEN),
        ],
        &[],
    )
    .await;
    let addr = gw.dashboard_addr().await;
    let base = format!("http://{addr}");

    let mut b = Browser::launch(&exe).await;
    b.goto(&format!("{base}/")).await;
    assert!(b.text().await.contains("没有进行中的模式"));

    // a turn enters cooking: the page shows it (it reloads by itself when the active
    // session changes)
    chat(ws, &fake, "打开做饭模式，今晚三个人吃番茄炒蛋").await;
    b.wait_for("document.getElementById('mode-name') && document.getElementById('mode-name').innerText === '做饭模式'")
        .await;
    let page = b.text().await;
    assert!(
        page.contains("打开做饭模式，今晚三个人吃番茄炒蛋"),
        "{page}"
    );
    assert!(page.contains("妈妈"), "{page}");

    // a second turn: the conversation grows without a reload, pushed by the server (the
    // page asked /api/live not once: the poll is only the fallback)
    b.eval("window.__same_page = true").await;
    chat(ws, &fake, "番茄要放几个？").await;
    b.wait_for("document.querySelectorAll('#live li').length === 2")
        .await;
    assert_eq!(b.eval("window.__same_page === true").await, json!(true));
    assert_eq!(
        b.eval("performance.getEntriesByType('resource').filter(e => e.name.includes('/api/live?')).length")
            .await,
        json!(0),
        "the page polled instead of listening"
    );
    assert!(b.text().await.contains("好的：番茄要放几个？"));
    // the token chart is drawn when the page is made: load it again until the second
    // turn's call (its audit line is written in the background) is in it
    loop {
        b.goto(&format!("{base}/")).await;
        if b.eval("document.querySelectorAll('svg.chart rect.cached').length > 0")
            .await
            == json!(true)
        {
            break;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let shot = Path::new(env!("CARGO_MANIFEST_DIR")).join("target/test-artifacts/dashboard.png");
    b.screenshot(&shot).await;
    eprintln!("screenshot: {}", shot.display());

    // the exit button without the token: refused, the mode stays
    b.eval("document.getElementById('exit').click()").await;
    b.wait_for("!!document.getElementById('refusal')").await;
    let refused = b.text().await;
    assert!(refused.contains("需要主人令牌"), "{refused}");
    assert_eq!(read_json(&ws.join("modes/action.json"))["active"], true);

    // with the token (a `?token=` link sets the cookie and drops it from the address)
    b.goto(&format!("{base}/?token={TOKEN}")).await;
    b.wait_for(
        "location.pathname === '/' && location.search === '' && !!document.getElementById('exit')",
    )
    .await;
    assert_eq!(
        b.eval("document.cookie").await,
        json!(""),
        "the cookie is HttpOnly"
    );
    b.eval("document.getElementById('exit').click()").await;
    b.wait_for("!!document.getElementById('outcome')").await;
    let outcome = b.text().await;
    assert!(outcome.contains("已完成"), "{outcome}");
    assert_eq!(read_json(&ws.join("modes/action.json"))["active"], false);
    b.eval("document.getElementById('back').click()").await;
    b.wait_for("document.getElementById('mode-name') && document.getElementById('mode-name').innerText === '没有进行中的模式'")
        .await;
    let page = b.text().await;
    assert!(
        page.contains("做饭模式"),
        "the past session is listed: {page}"
    );
    assert!(!page.contains(TOKEN));
}

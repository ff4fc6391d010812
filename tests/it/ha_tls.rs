//! https to a REAL Home Assistant (core 2025.4.4, tests/it/real_ha) serving TLS:
//!
//! 1. with a private CA and a leaf it signed for 127.0.0.1 and localhost: without
//!    `ca_file` the certificate is refused, by name, in `homebot doctor` and in the running
//!    gateway's `homebot status`; with `ca_file` both connect and read the rooms (the
//!    satellite in 厨房), by address and by host name;
//! 2. with a self-signed certificate made the way HA's documentation makes one (its own
//!    CA, `CA:TRUE`): given as `ca_file` rustls refuses it, and homebot says to pin it;
//!    pinned with the fingerprint `openssl` prints, it connects; a wrong pin is refused,
//!    naming the certificate HA presented;
//! 3. a CA file that is not there or a malformed pin stops `config check` and the gateway.
//!
//! The certificates are made with the `openssl` command line for each run.

use crate::common;
use crate::real_ha;

use common::gateway::Gateway;
use common::*;
use real_ha::{RealHa, TOKEN};
use std::path::Path;
use std::time::Duration;

/// A workspace whose `[home_assistant]` has `url` and the extra lines.
fn workspace_for(root: &Path, name: &str, url: &str, extra: &str) -> std::path::PathBuf {
    let ws = root.join(name);
    std::fs::create_dir_all(&ws).unwrap();
    std::fs::write(
        ws.join("config.toml"),
        format!("[home_assistant]\nurl = \"{url}\"\n{extra}\n"),
    )
    .unwrap();
    ws
}

/// The Home Assistant lines of `homebot doctor` on `ws` (its model probe is not this
/// test's concern: no model is configured, so its exit status says nothing of HA).
async fn doctor(ws: &Path) -> String {
    let o = homebot(ws, None)
        .arg("doctor")
        .env("HOMEBOT_HA_TOKEN", TOKEN)
        .output()
        .await
        .unwrap();
    let out = format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(!out.contains(TOKEN), "the token is never printed: {out}");
    let ha: Vec<&str> = out
        .lines()
        .filter(|l| l.starts_with("Home Assistant"))
        .collect();
    assert!(!ha.is_empty(), "doctor probed Home Assistant: {out}");
    ha.join("\n")
}

/// The Home Assistant lines of `homebot status` once the first one contains `want`.
async fn status_says(ws: &Path, want: &str) -> String {
    eventually_async(
        &format!("homebot status to say {want:?}"),
        Duration::from_secs(60),
        || async {
            let o = homebot(ws, None).arg("status").output().await.unwrap();
            let out = String::from_utf8_lossy(&o.stdout).to_string();
            let ha: Vec<&str> = out
                .lines()
                .filter(|l| l.contains("Home Assistant"))
                .collect();
            let ha = ha.join("\n");
            match ha.lines().next() {
                Some(first) if first.contains(want) => Ok(ha),
                _ => Err(out),
            }
        },
    )
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn https_with_a_private_ca() {
    let python = real_ha::ha_python();
    let dir = workspace();
    let (ca, leaf) = real_ha::private_ca(&dir.path().join("pki"));
    let ha = RealHa::start_tls(&python, leaf).await;
    let url = ha.url();
    assert!(url.starts_with("https://127.0.0.1:"), "{url}");
    let fake = FakeLlm::scripted().await;
    let kitchen = format!("{}（厨房）", ha.satellite_entity);

    // without ca_file: the public roots do not know the household's CA
    let plain = workspace_for(dir.path(), "plain", &url, "");
    let out = doctor(&plain).await;
    println!("homebot doctor without ca_file:\n{out}");
    assert!(
        out.contains(": certificate not trusted: it is signed by an unknown CA")
            && out.contains("ca_file")
            && out.contains("fingerprint"),
        "{out}"
    );
    assert!(!out.contains("版本 2025.4.4"), "{out}");
    let gw = Gateway::start(&plain, &fake, &[("HOMEBOT_HA_TOKEN", TOKEN)], &[]).await;
    let st = status_says(&plain, "not connected: certificate not trusted").await;
    println!("homebot status without ca_file:\n{st}");
    assert!(st.contains("set [home_assistant] ca_file"), "{st}");
    gw.wait_log("https connection failed", 30).await;
    drop(gw);

    // with ca_file (relative to the workspace): connected, the rooms read
    let trusted = workspace_for(
        dir.path(),
        "trusted",
        &url,
        "ca_file = \"household-ca.pem\"",
    );
    std::fs::copy(&ca, trusted.join("household-ca.pem")).unwrap();
    let out = doctor(&trusted).await;
    println!("homebot doctor with ca_file:\n{out}");
    assert!(
        out.contains("/api/websocket: connected · 版本 2025.4.4") && out.contains(&kitchen),
        "{out}"
    );
    assert!(out.contains("wss://127.0.0.1:"), "{out}");
    let gw = Gateway::start(&trusted, &fake, &[("HOMEBOT_HA_TOKEN", TOKEN)], &[]).await;
    gw.wait_log("Home Assistant registries read", 60).await;
    let st = status_says(&trusted, "connected · 版本 2025.4.4").await;
    println!("homebot status with ca_file:\n{st}");
    assert!(st.contains(&kitchen), "{st}");
    drop(gw);

    // the leaf names localhost too
    let by_name = url.replace("127.0.0.1", "localhost");
    let named = workspace_for(
        dir.path(),
        "named",
        &by_name,
        &format!("ca_file = {:?}", ca.display().to_string()),
    );
    let out = doctor(&named).await;
    assert!(out.contains("connected · 版本 2025.4.4"), "{out}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn https_with_a_self_signed_certificate() {
    let python = real_ha::ha_python();
    let dir = workspace();
    let cert = real_ha::self_signed(&dir.path().join("pki"));
    let pin = real_ha::fingerprint(&cert.cert);
    let ha = RealHa::start_tls(&python, cert.clone()).await;
    let url = ha.url();
    let fake = FakeLlm::scripted().await;
    let kitchen = format!("{}（厨房）", ha.satellite_entity);

    // the certificate as ca_file: rustls refuses a CA as the server's own certificate
    let as_ca = workspace_for(
        dir.path(),
        "as-ca",
        &url,
        &format!("ca_file = {:?}", cert.cert.display().to_string()),
    );
    let out = doctor(&as_ca).await;
    println!("homebot doctor, the self-signed certificate as ca_file:\n{out}");
    assert!(
        out.contains(
            "certificate not trusted: it is self-signed and marked as its own CA (CA:TRUE)"
        ) && out.contains(&format!("Home Assistant presented {pin}"))
            && out.contains("pin it: [home_assistant] fingerprint"),
        "{out}"
    );

    // pinned, in the form openssl prints it: connected, the rooms read
    let pinned = workspace_for(
        dir.path(),
        "pinned",
        &url,
        &format!("fingerprint = \"{pin}\""),
    );
    let out = doctor(&pinned).await;
    println!("homebot doctor, pinned:\n{out}");
    assert!(
        out.contains("connected · 版本 2025.4.4") && out.contains(&kitchen),
        "{out}"
    );
    let gw = Gateway::start(&pinned, &fake, &[("HOMEBOT_HA_TOKEN", TOKEN)], &[]).await;
    gw.wait_log("Home Assistant registries read", 60).await;
    let st = status_says(&pinned, "connected · 版本 2025.4.4").await;
    println!("homebot status, pinned:\n{st}");
    assert!(st.contains(&kitchen), "{st}");
    drop(gw);

    // a wrong pin (the last byte changed): refused, naming what HA presented
    let last = &pin[pin.len() - 2..];
    let other = if last == "00" { "01" } else { "00" };
    let wrong_pin = format!("{}{other}", &pin[..pin.len() - 2]);
    let wrong = workspace_for(
        dir.path(),
        "wrong",
        &url,
        &format!("fingerprint = \"{wrong_pin}\""),
    );
    let out = doctor(&wrong).await;
    println!("homebot doctor, a wrong pin:\n{out}");
    assert!(
        out.contains(&format!(
            "certificate not trusted: it does not match [home_assistant] fingerprint {wrong_pin}"
        )) && out.contains(&format!("Home Assistant presented {pin}")),
        "{out}"
    );
    let gw = Gateway::start(&wrong, &fake, &[("HOMEBOT_HA_TOKEN", TOKEN)], &[]).await;
    let st = status_says(&wrong, "not connected: certificate not trusted").await;
    println!("homebot status, a wrong pin:\n{st}");
    assert!(st.contains("does not match"), "{st}");
    assert!(!gw.log().contains(TOKEN), "the token is never logged");
}

/// A CA file that is not there and a malformed pin stop `config check` and the gateway
/// at start, naming the key (no Home Assistant needed: nothing connects).
#[tokio::test]
async fn a_bad_ca_file_or_fingerprint_stops_the_start() {
    let dir = workspace();
    for (name, extra, key, says) in [
        (
            "missing",
            "ca_file = \"no-such-ca.pem\"",
            "home_assistant.ca_file",
            "cannot read",
        ),
        (
            "malformed",
            "fingerprint = \"sha256:AB:CD\"",
            "home_assistant.fingerprint",
            "32 bytes in hex",
        ),
    ] {
        let ws = workspace_for(dir.path(), name, "https://127.0.0.1:8123", extra);
        for args in [&["config", "check"][..], &["gateway"][..]] {
            let o = homebot(&ws, None)
                .args(args)
                .env("HOMEBOT_HA_TOKEN", TOKEN)
                .output()
                .await
                .unwrap();
            let err = String::from_utf8_lossy(&o.stderr);
            assert!(!o.status.success(), "{args:?} {name}: {err}");
            assert!(
                err.contains(&format!("key `{key}`")) && err.contains(says),
                "{args:?} {name}: {err}"
            );
        }
    }
}

//! A real Home Assistant (core 2025.4.4, installed by tests/peers/ha/install.sh into
//! `.venv-ha`) for tests/it/ha_real.rs, offline, on a free port of 127.0.0.1, ready in a few
//! seconds: its storage is seeded with a test user and a long-lived token (a throw-away
//! key that unlocks only this HA), a Wyoming satellite stand-in
//! (tests/peers/ha/fake_satellite.py) is added through the real `wyoming` config flow,
//! and the area 厨房 holds it. Every process is killed when the test ends.
#![allow(dead_code)]

mod tls;
pub use tls::{fingerprint, private_ca, self_signed, TlsFiles};

use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;
use tokio::process::{Child, Command};

use crate::common::ports;

mod events;
mod ws;
pub use events::HaEvents;
pub use ws::HaWs;

/// The long-lived token of the seeded storage below (HS256 over a fixed refresh token id
/// and `jwt_key`, valid until 2036): a test-only key for a throw-away HA on 127.0.0.1.
pub const TOKEN: &str = "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJpc3MiOiJob21lYm90dGVzdHJlZnJlc2h0b2tlbjAwMDAwMDAxIiwiaWF0IjoxNzY3MjI1NjAwLCJleHAiOjIwODI1ODU2MDB9.SjaBljgTY8XR-hQKcMWF35g044pydVL-Yw4AavCfOcE";

/// The seeded user's id (the token's user: `context.user_id` of what it runs).
pub const USER_ID: &str = "homebottestuser0000000000000001";

pub struct RealHa {
    pub dir: tempfile::TempDir,
    pub port: u16,
    pub hass: Child,
    pub satellite: Child,
    /// `assist_satellite.<name>` of the stand-in.
    pub satellite_entity: String,
    pub satellite_out: PathBuf,
    /// The certificate HA serves when started with [`RealHa::start_tls`] (`https://`).
    pub tls: Option<TlsFiles>,
    http: reqwest::Client,
}

/// `GET url` with the test token, as JSON.
async fn get_json(http: &reqwest::Client, url: &str) -> Result<Value, String> {
    let r = http
        .get(url)
        .bearer_auth(TOKEN)
        .send()
        .await
        .map_err(|e| e.to_string())?;
    r.json().await.map_err(|e| e.to_string())
}

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).to_path_buf()
}

/// The HA venv's python (`HOMEBOT_TEST_HA_PYTHON`, else `.venv-ha`). Missing, the
/// test fails and says how to install it: a green run always includes the real HA.
pub fn ha_python() -> PathBuf {
    let p = std::env::var("HOMEBOT_TEST_HA_PYTHON")
        .map(PathBuf::from)
        .unwrap_or_else(|_| repo().join(".venv-ha/bin/python"));
    assert!(
        p.exists(),
        "{} does not exist: run tests/run.sh (it installs Home Assistant 2025.4.4 with tests/peers/ha/install.sh)",
        p.display()
    );
    p
}

fn seed_storage(config: &Path) {
    let st = config.join(".storage");
    std::fs::create_dir_all(&st).unwrap();
    let now = "2026-01-01T00:00:00.000000+00:00";
    let auth = json!({"version": 1, "minor_version": 1, "key": "auth", "data": {
        "users": [{"id": "homebottestuser0000000000000001", "group_ids": ["system-admin"], "is_owner": true,
                   "is_active": true, "name": "Homebot Test", "system_generated": false, "local_only": false}],
        "groups": [{"id": "system-admin", "name": "Administrators"}, {"id": "system-users", "name": "Users"},
                   {"id": "system-read-only", "name": "Read Only"}],
        "credentials": [],
        "refresh_tokens": [{"id": "homebottestrefreshtoken00000001", "user_id": "homebottestuser0000000000000001",
            "client_id": null, "client_name": "homebot-tests", "client_icon": null,
            "token_type": "long_lived_access_token", "created_at": now,
            "access_token_expiration": 315360000.0, "token": "0".repeat(128),
            "jwt_key": "homebot-test-jwt-key-not-secret-0123456789abcdef0123456789abcdef",
            "last_used_at": null, "last_used_ip": null, "expire_at": null, "credential_id": null,
            "version": "2025.4.4"}]}});
    let onboarding = json!({"version": 4, "minor_version": 1, "key": "onboarding",
        "data": {"done": ["user", "core_config", "analytics", "integration"]}});
    std::fs::write(st.join("auth"), auth.to_string()).unwrap();
    std::fs::write(st.join("onboarding"), onboarding.to_string()).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(st.join("auth"), std::fs::Permissions::from_mode(0o600)).unwrap();
}

fn configuration(port: u16) -> String {
    configuration_with(port, None)
}

/// HA's configuration; with `tls`, HA serves https only (`ssl_certificate`, `ssl_key`).
fn configuration_with(port: u16, tls: Option<&TlsFiles>) -> String {
    let (scheme, ssl) = tls::http_lines(tls);
    format!(
        r#"homeassistant:
  name: homebot-test
  latitude: 52.37
  longitude: 4.89
  elevation: 0
  unit_system: metric
  time_zone: UTC
  country: NL
  currency: EUR
  language: en
  internal_url: {scheme}://127.0.0.1:{port}
logger:
  default: warning
http:
  server_host: 127.0.0.1
  server_port: {port}
{ssl}api:
websocket_api:
conversation:
diagnostics:
ffmpeg:
demo:
input_boolean:
  kitchen_light_power: {{name: Kitchen light power}}
light:
  - platform: template
    lights:
      kitchen_light:
        friendly_name: "Kitchen Light"
        unique_id: homebot_kitchen_light
        value_template: "{{{{ is_state('input_boolean.kitchen_light_power', 'on') }}}}"
        turn_on: {{action: input_boolean.turn_on, target: {{entity_id: input_boolean.kitchen_light_power}}}}
        turn_off: {{action: input_boolean.turn_off, target: {{entity_id: input_boolean.kitchen_light_power}}}}
"#
    )
}

fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let name = e.file_name();
        if name == "__pycache__" {
            continue;
        }
        if e.file_type().unwrap().is_dir() {
            copy_tree(&e.path(), &to.join(&name));
        } else {
            std::fs::copy(e.path(), to.join(&name)).unwrap();
        }
    }
}

/// HA's log line when its HTTP server cannot bind its port: HA runs on without one.
const PORT_TAKEN: &str = "Failed to create HTTP server at port";

/// The end of HA's log (its own words, for a failure message).
fn log_tail(log: &Path) -> String {
    let text = std::fs::read_to_string(log).unwrap_or_default();
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(80)..].join("\n")
}

/// How a start of `hass` ended.
enum Started {
    Running,
    /// Something bound its port between our choosing it and HA binding it.
    PortTaken,
}

/// A test that fails with HA running shows what HA said (as a gateway shows its log).
impl Drop for RealHa {
    fn drop(&mut self) {
        if std::thread::panicking() {
            eprintln!(
                "--- Home Assistant's last log lines ---\n{}",
                log_tail(&self.dir.path().join("hass.log"))
            );
        }
    }
}

impl RealHa {
    /// Start hass on a port below the ephemeral range ([`ports::for_a_child`]); when its
    /// HTTP server could not bind it after all, start it again on another.
    /// `first`, when given, is the port of the first attempt.
    async fn start_hass(
        python: &Path,
        dir: &Path,
        tls: Option<&TlsFiles>,
        http: &reqwest::Client,
        mut first: Option<u16>,
    ) -> (Child, u16) {
        let config = dir.join("config");
        let log = dir.join("hass.log");
        for attempt in 1..=5 {
            let port = first.take().unwrap_or_else(ports::for_a_child);
            std::fs::write(
                config.join("configuration.yaml"),
                configuration_with(port, tls),
            )
            .unwrap();
            let mut hass = Command::new(python.with_file_name("hass"))
                .arg("-c")
                .arg(&config)
                .args(["--skip-pip", "--log-no-color"])
                .stdout(Stdio::null())
                .stderr(std::fs::File::create(&log).unwrap())
                .kill_on_drop(true)
                .spawn()
                .expect("hass starts");
            let url = format!("{}://127.0.0.1:{port}", tls::http_lines(tls).0);
            match Self::wait_running(&mut hass, &url, &log, http).await {
                Started::Running => return (hass, port),
                Started::PortTaken => {
                    println!("attempt {attempt}: port {port} was taken before HA bound it; again on another");
                    let _ = hass.kill().await;
                    let _ = std::fs::rename(&log, dir.join(format!("hass.{attempt}.log")));
                }
            }
        }
        panic!(
            "HA could not bind a port in 5 attempts:\n{}",
            log_tail(&log)
        );
    }

    /// Wait for `GET /api/config` to say RUNNING, for a failed bind in HA's log, or fail
    /// with HA's own log after 180 s or when it exits.
    async fn wait_running(
        hass: &mut Child,
        url: &str,
        log: &Path,
        http: &reqwest::Client,
    ) -> Started {
        let started = std::time::Instant::now();
        loop {
            // bounded: whatever took the port may accept and never answer
            let up = tokio::time::timeout(
                Duration::from_secs(5),
                get_json(http, &format!("{url}/api/config")),
            )
            .await
            .unwrap_or_else(|_| Err("no answer within 5 s".into()));
            if up.as_ref().is_ok_and(|v| v["state"] == "RUNNING") {
                println!(
                    "real Home Assistant 2025.4.4 RUNNING after {:.1} s",
                    started.elapsed().as_secs_f64()
                );
                return Started::Running;
            }
            if std::fs::read_to_string(log)
                .unwrap_or_default()
                .contains(PORT_TAKEN)
            {
                return Started::PortTaken;
            }
            if let Ok(Some(st)) = hass.try_wait() {
                panic!("hass exited ({st}):\n{}", log_tail(log));
            }
            assert!(
                started.elapsed() < Duration::from_secs(180),
                "HA not RUNNING after 180 s: {up:?}\nHA's log:\n{}",
                log_tail(log)
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// Start HA and the satellite stand-in; put the satellite in the area 厨房.
    pub async fn start(python: &Path) -> Self {
        Self::start_with(python, None, None).await
    }

    /// [`RealHa::start`], trying `taken` first: the test of a port taken before HA binds it.
    pub async fn start_trying_first(python: &Path, taken: u16) -> Self {
        Self::start_with(python, None, Some(taken)).await
    }

    /// [`RealHa::start`] with HA serving https with this certificate (only https).
    pub async fn start_tls(python: &Path, tls: TlsFiles) -> Self {
        Self::start_with(python, Some(tls), None).await
    }

    async fn start_with(python: &Path, tls: Option<TlsFiles>, first: Option<u16>) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let config = dir.path().join("config");
        std::fs::create_dir_all(&config).unwrap();
        // homebot's own integration, as HACS installs it
        copy_tree(
            &repo().join("custom_components"),
            &config.join("custom_components"),
        );
        seed_storage(&config);
        // the satellite stand-in starts while HA does
        let satellite_out = dir.path().join("satellite");
        let sat_log = dir.path().join("satellite.log");
        let mut satellite = Command::new(python)
            .arg(repo().join("tests/peers/ha/fake_satellite.py"))
            .arg("--outdir")
            .arg(&satellite_out)
            .stdout(Stdio::piped())
            .stderr(std::fs::File::create(&sat_log).unwrap())
            .kill_on_drop(true)
            .spawn()
            .unwrap();
        // the kit's set-up requests trust the HA it started (homebot never uses this)
        let http = reqwest::Client::builder()
            .danger_accept_invalid_certs(tls.is_some())
            .build()
            .unwrap();
        let (hass, port) = Self::start_hass(python, dir.path(), tls.as_ref(), &http, first).await;
        let sat_port =
            ports::reported_port("the satellite stand-in", &mut satellite, &sat_log).await;
        let mut ha = RealHa {
            dir,
            port,
            hass,
            satellite,
            satellite_entity: String::new(),
            satellite_out,
            http,
            tls,
        };
        let entry = ha.add_wyoming(sat_port).await;
        // its assist_satellite entity, in a new area 厨房
        let mut ws = match ha.tls {
            None => HaWs::connect(port).await,
            Some(_) => HaWs::connect_tls(port).await,
        };
        let entities = ws
            .call(json!({"type": "config/entity_registry/list"}))
            .await
            .unwrap();
        let sat = entities
            .as_array()
            .unwrap()
            .iter()
            .find(|e| {
                e["config_entry_id"] == entry.as_str()
                    && e["entity_id"]
                        .as_str()
                        .unwrap()
                        .starts_with("assist_satellite.")
            })
            .unwrap_or_else(|| panic!("no assist_satellite entity for the stand-in: {entities}"))
            .clone();
        ha.satellite_entity = sat["entity_id"].as_str().unwrap().to_string();
        let area = ws
            .call(json!({"type": "config/area_registry/create", "name": "厨房"}))
            .await
            .unwrap();
        let area_id = area["area_id"].as_str().unwrap().to_string();
        ws.call(json!({"type": "config/device_registry/update", "device_id": sat["device_id"], "area_id": area_id}))
            .await
            .unwrap();
        ha
    }

    pub fn url(&self) -> String {
        let scheme = if self.tls.is_some() { "https" } else { "http" };
        format!("{scheme}://127.0.0.1:{}", self.port)
    }

    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("hass.log")).unwrap_or_default()
    }

    pub async fn get(&self, path: &str) -> Result<Value, String> {
        get_json(&self.http, &format!("{}{path}", self.url())).await
    }

    pub async fn post(&self, path: &str, body: Value) -> Value {
        self.try_post(path, body)
            .await
            .unwrap_or_else(|e| panic!("{e}"))
    }

    /// [`RealHa::post`] that says what went wrong instead of failing the test (for a
    /// wait: while HA reloads an entry, its entities are briefly unknown to it).
    pub async fn try_post(&self, path: &str, body: Value) -> Result<Value, String> {
        let r = self
            .http
            .post(format!("{}{path}", self.url()))
            .bearer_auth(TOKEN)
            .json(&body)
            .timeout(Duration::from_secs(60))
            .send()
            .await
            .map_err(|e| format!("POST {path} {body}: {e}"))?;
        let status = r.status();
        let v: Value = r.json().await.unwrap_or(Value::Null);
        match status.is_success() {
            true => Ok(v),
            false => Err(format!("POST {path} {body}: {status} {v}")),
        }
    }

    /// Add a Wyoming service (a satellite, or homebot's handle service) through the real
    /// config flow; the config entry id.
    pub async fn add_wyoming(&self, port: u16) -> String {
        self.add_local("wyoming", port).await
    }

    /// Add an ESPHome device through the real `esphome` config flow; the entry id.
    pub async fn add_esphome(&self, port: u16) -> String {
        self.add_local("esphome", port).await
    }

    /// The config flow of `handler` for a device on 127.0.0.1:`port`, to its entry id.
    async fn add_local(&self, handler: &str, port: u16) -> String {
        let flow = self
            .post(
                "/api/config/config_entries/flow",
                json!({"handler": handler}),
            )
            .await;
        let id = flow["flow_id"].as_str().unwrap().to_string();
        let done = self
            .post(
                &format!("/api/config/config_entries/flow/{id}"),
                json!({"host": "127.0.0.1", "port": port}),
            )
            .await;
        assert_eq!(done["type"], "create_entry", "{done}");
        done["result"]["entry_id"].as_str().unwrap().to_string()
    }

    /// Run a stand-in from tests/peers/ha with the HA venv's python (killed with the test)
    /// and wait for the port it reports once it listens.
    pub async fn peer(&self, python: &Path, script: &str, args: &[&str]) -> (Child, u16) {
        let log = self.dir.path().join(format!("{script}.log"));
        let mut child = Command::new(python)
            .arg(repo().join("tests/peers/ha").join(script))
            .args(args)
            .stdout(Stdio::piped())
            .stderr(std::fs::File::create(&log).unwrap())
            .kill_on_drop(true)
            .spawn()
            .unwrap();
        let port = ports::reported_port(script, &mut child, &log).await;
        (child, port)
    }

    /// The stand-in's logged events (`announcement-recorded`, `audio-start`, …).
    pub fn satellite_events(&self) -> Vec<Value> {
        std::fs::read_to_string(self.satellite_out.join("events.jsonl"))
            .unwrap_or_default()
            .lines()
            .filter_map(|l| serde_json::from_str(l).ok())
            .collect()
    }
}

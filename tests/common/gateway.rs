//! Run `homebot gateway` as a child process and find the ports its channels bound
//! (channels log `channel listening channel="…" addr=…`; tests pass `:0`).
#![allow(dead_code)]

use super::{eventually, eventually_async, FakeLlm};
use std::collections::HashMap;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};

pub struct Gateway {
    pub child: Child,
    /// channel name → bound address
    pub addrs: HashMap<String, String>,
    /// everything the gateway logged
    pub log: Arc<Mutex<String>>,
}

/// A test that fails with a gateway running shows the gateway's last log lines beside
/// its own message (a flaky failure on CI is then readable from CI's output alone).
impl Drop for Gateway {
    fn drop(&mut self) {
        if std::thread::panicking() {
            let log = self.log();
            let lines: Vec<&str> = log.lines().collect();
            let tail = &lines[lines.len().saturating_sub(40)..];
            eprintln!("--- the gateway's last log lines ---\n{}", tail.join("\n"));
        }
    }
}

impl Gateway {
    /// Start with these extra environment variables; waits until `channels` are listening
    /// and the control socket is up.
    pub async fn start(ws: &Path, fake: &FakeLlm, env: &[(&str, &str)], channels: &[&str]) -> Self {
        Self::start_limited(ws, fake, env, channels, None).await
    }

    /// [`Gateway::start`] with the child's `RLIMIT_NOFILE` set to `(soft, hard)` before
    /// it runs (as `prlimit` would), to run it short of descriptors.
    pub async fn start_limited(
        ws: &Path,
        fake: &FakeLlm,
        env: &[(&str, &str)],
        channels: &[&str],
        nofile: Option<(u64, u64)>,
    ) -> Self {
        let mut c = Command::new(env!("CARGO_BIN_EXE_homebot"));
        if let Some((soft, hard)) = nofile {
            // SAFETY: only setrlimit, which is async-signal-safe, runs between fork and exec.
            unsafe {
                c.pre_exec(move || {
                    let lim = libc::rlimit {
                        rlim_cur: soft as libc::rlim_t,
                        rlim_max: hard as libc::rlim_t,
                    };
                    if libc::setrlimit(libc::RLIMIT_NOFILE, &lim) != 0 {
                        return Err(std::io::Error::last_os_error());
                    }
                    Ok(())
                });
            }
        }
        c.arg("--workspace")
            .arg(ws)
            .arg("gateway")
            .env("HOMEBOT_BASE_URL", &fake.url)
            .env("RUST_LOG", "info")
            .env_remove("HOMEBOT_FAILPOINT")
            .stderr(std::process::Stdio::piped())
            .kill_on_drop(true);
        for (k, v) in env {
            c.env(k, v);
        }
        let mut child = c.spawn().unwrap();
        let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
        let log = Arc::new(Mutex::new(String::new()));
        let mut addrs = HashMap::new();
        let found = tokio::time::timeout(Duration::from_secs(60), async {
            while addrs.len() < channels.len() {
                let Some(l) = lines.next_line().await.unwrap() else {
                    return false;
                };
                log.lock().unwrap().push_str(&l);
                log.lock().unwrap().push('\n');
                if l.contains("channel listening") {
                    let ch = field(&l, "channel=").trim_matches('"').to_string();
                    addrs.insert(ch, field(&l, "addr=").to_string());
                }
            }
            true
        })
        .await
        .unwrap_or(false);
        assert!(
            found,
            "gateway did not start its channels:\n{}",
            log.lock().unwrap()
        );
        let log2 = log.clone();
        tokio::spawn(async move {
            while let Ok(Some(l)) = lines.next_line().await {
                let mut g = log2.lock().unwrap();
                g.push_str(&l);
                g.push('\n');
            }
        });
        eventually(
            "the gateway opened its control socket",
            Duration::from_secs(30),
            || ws.join("control.sock").exists(),
        )
        .await;
        Gateway { child, addrs, log }
    }

    /// Kill it and wait until it is gone (its ports and its workspace free again).
    pub async fn stop(mut self) {
        let _ = self.child.kill().await;
    }

    /// The child's process id (for `/proc/<pid>/…`).
    pub fn pid(&self) -> u32 {
        self.child
            .id()
            .expect("the gateway runs until the test drops it")
    }

    pub fn addr(&self, channel: &str) -> &str {
        &self.addrs[channel]
    }

    pub fn log(&self) -> String {
        self.log.lock().unwrap().clone()
    }

    /// Wait until the log contains `needle` (or panic after `secs`).
    pub async fn wait_log(&self, needle: &str, secs: u64) {
        let what = format!("the gateway to log {needle:?}");
        eventually_async(&what, Duration::from_secs(secs), || {
            let log = self.log();
            async move {
                if log.contains(needle) {
                    Ok(())
                } else {
                    Err(format!("its log:\n{log}"))
                }
            }
        })
        .await
    }

    /// The dashboard's bound address (`[http] listen`, e.g. `127.0.0.1:41234`), once it
    /// has logged `dashboard listening`.
    pub async fn dashboard_addr(&self) -> String {
        self.wait_log("dashboard listening", 30).await;
        let log = self.log();
        let line = log
            .lines()
            .find(|l| l.contains("dashboard listening"))
            .expect("logged just above");
        field(line, "addr=").to_string()
    }
}

fn field<'a>(line: &'a str, key: &str) -> &'a str {
    let i = line.find(key).map(|i| i + key.len()).unwrap_or(line.len());
    line[i..].split_whitespace().next().unwrap_or("")
}

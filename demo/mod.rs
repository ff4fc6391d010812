//! `homebot demo`: the whole product in one command, with no key and no device.
//!
//! It makes a fresh workspace, starts a model — the [`script`]ed one built into the
//! binary (a real OpenAI-compatible server on loopback whose every answer is labelled
//! [`script::LABEL`]), or a real endpoint given with `--model-url` — then the real
//! gateway in this process with QQ (reverse WebSocket) and voice (Wyoming and the
//! satellite WebSocket) on `127.0.0.1:0`, and plays a short cooking session ([`story`])
//! through real clients of those servers ([`peers`]) and the terminal. Then, unless
//! `--exit`, it keeps the gateway running with the dashboard ([`dashboard`]) until Ctrl-C.
//!
//! This folder sits beside `channels/` (not in `src/`): it drives the channels, and the
//! kernel side never imports them (`tests/it/imports/layering.rs`). Only `main` imports it.

pub mod dashboard;
pub mod model;
pub mod peers;
pub mod script;
pub mod story;

use crate::channels::{self, contract::StartError};
use crate::config::{EnvOverrides, Secret};
use crate::kernel::{Kernel, KernelOptions};
use crate::turn::Reply;
use anyhow::Context;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// The demo household's QQ group, members and devices.
pub const GROUP: u64 = 5_550_001;
pub const BOT_QQ: u64 = 3_000_000_001;
pub const MOM_QQ: u64 = 10_001;
pub const SATELLITE: &str = "kitchen";
/// What Home Assistant reports as mom's speaker id (mapped in `voice.wyoming_speakers`).
pub const HA_SPEAKER: &str = "ha-user-mom";
/// What the kitchen satellite reports as mom's voice profile (its `speakers`).
pub const SATELLITE_SPEAKER: &str = "voice-profile-mom";

#[derive(clap::Args, Debug, Clone, Default)]
pub struct DemoArgs {
    /// Use this OpenAI-compatible endpoint instead of the built-in scripted model, e.g.
    /// llama.cpp's server at http://127.0.0.1:8080/v1 (HOMEBOT_API_KEY is sent if set).
    #[arg(long = "model-url")]
    pub model_url: Option<String>,
    /// The model name to ask that endpoint for.
    #[arg(long, requires = "model_url")]
    pub model: Option<String>,
    /// Play the session and stop, instead of running on until Ctrl-C; the kitchen timer
    /// is 3 s instead of 10 s.
    #[arg(long)]
    pub exit: bool,
}

/// The model the demo talks to.
pub enum ModelChoice {
    Scripted(model::ScriptedModel),
    Real { url: String, name: String },
}

impl ModelChoice {
    pub fn scripted(&self) -> bool {
        matches!(self, ModelChoice::Scripted(_))
    }
    fn url(&self) -> String {
        match self {
            ModelChoice::Scripted(m) => m.base_url(),
            ModelChoice::Real { url, .. } => url.clone(),
        }
    }
    fn name(&self) -> String {
        match self {
            ModelChoice::Scripted(_) => script::MODEL.to_string(),
            ModelChoice::Real { name, .. } => name.clone(),
        }
    }
}

/// What went wrong with a reply that is not an answer. The one place the demo reads
/// a reply's outcome.
pub fn failure(r: &Reply) -> Option<String> {
    r.problem()
}

/// Run the demo; `workspace` is the global `--workspace` (else a fresh temporary folder).
pub async fn run(workspace: Option<PathBuf>, args: DemoArgs) -> anyhow::Result<()> {
    let root = prepare_workspace(workspace)?;
    let stop_model = CancellationToken::new();
    let model = match &args.model_url {
        None => ModelChoice::Scripted(
            model::ScriptedModel::start(stop_model.clone())
                .await
                .context("cannot start the scripted model")?,
        ),
        Some(url) => ModelChoice::Real {
            url: url.clone(),
            name: args.model.clone().unwrap_or_else(|| "default".into()),
        },
    };
    let tokens = Tokens::new();
    crate::fsutil::write_atomic(
        &root.join(crate::workspace::CONFIG_FILE),
        config_toml(&model, &tokens).as_bytes(),
    )
    .with_context(|| format!("cannot write the demo's config in {}", root.display()))?;
    println!("homebot demo — workspace {}", root.display());
    match &model {
        ModelChoice::Scripted(m) => println!(
            "model: {} at {} — a SCRIPT built into homebot, not a language model; every answer it writes starts with {}",
            script::MODEL,
            m.base_url(),
            script::LABEL
        ),
        ModelChoice::Real { url, name } => {
            println!("model: {name} at {url} (your endpoint: its answers are its own)")
        }
    }
    let kernel = Kernel::start(
        &root,
        KernelOptions {
            env: Some(env_overrides(&model)),
            ..Default::default()
        },
    )
    .with_context(|| format!("cannot start homebot in {}", root.display()))?;
    // the dashboard from the start: the story can be watched on it as it plays
    let url = dashboard::start(&kernel, &tokens.http).await;
    if let Some(url) = &url {
        println!("dashboard: {url}");
    }
    let result = play(&kernel, &model, &tokens, &args).await;
    if result.is_ok() && !args.exit {
        match &url {
            Some(url) => println!("dashboard (open it in a browser): {url}"),
            None => println!("dashboard: not running (see the message above)"),
        }
        println!(
            "the gateway keeps running on workspace {}; try `homebot --workspace {} status` in another terminal. Ctrl-C to stop.",
            root.display(),
            root.display()
        );
        wait_for_stop().await;
    }
    let grace = Duration::from_secs(kernel.config().agent.shutdown_grace_secs);
    kernel.shutdown_gracefully(grace).await;
    stop_model.cancel();
    result?;
    println!("demo finished; workspace {}", root.display());
    Ok(())
}

async fn play(
    kernel: &Kernel,
    model: &ModelChoice,
    tokens: &Tokens,
    args: &DemoArgs,
) -> anyhow::Result<()> {
    let bound = start_channels(kernel)
        .await
        .context("cannot start the channels")?;
    let addr = |label: &str| {
        bound
            .get(label)
            .cloned()
            .with_context(|| format!("the {label} server did not start"))
    };
    let (qq, wyoming, voice_ws) = (addr("qq")?, addr("wyoming")?, addr("voice-ws")?);
    println!("gateway: QQ reverse WebSocket ws://{qq}/onebot/v11/ws · Wyoming tcp://{wyoming} · satellites ws://{voice_ws}/voice/ws");
    let onebot = peers::OneBot::connect(&qq, BOT_QQ, &tokens.qq)
        .await
        .map_err(|e| anyhow::anyhow!("the OneBot simulator cannot connect: {e}"))?;
    let satellite = peers::Satellite::connect(&voice_ws, SATELLITE, &tokens.satellite)
        .await
        .map_err(|e| anyhow::anyhow!("the kitchen satellite cannot connect: {e}"))?;
    let mut stage = story::Stage {
        kernel: kernel.clone(),
        qq: onebot,
        satellite,
        wyoming,
        strict: model.scripted(),
        timer_secs: if args.exit { 3 } else { 10 },
        wait: if model.scripted() {
            Duration::from_secs(30)
        } else {
            Duration::from_secs(300)
        },
    };
    stage.play().await
}

/// Start every channel the demo's configuration enables, as the gateway does, keeping
/// the addresses they bound (label → address).
async fn start_channels(kernel: &Kernel) -> Result<HashMap<String, String>, StartError> {
    let mut bound = HashMap::new();
    for ch in channels::enabled(kernel.config()) {
        let name = ch.name();
        let started = ch
            .start(kernel.clone(), kernel.cancel_token().child_token())
            .await?;
        for (label, addr) in &started.bound {
            bound.insert(label.to_string(), addr.to_string());
        }
        if let Some(door) = started.outbound {
            kernel.doors().register(name, door);
        }
    }
    Ok(bound)
}

/// `--workspace DIR` if it is new or empty (the demo writes its own config there, and
/// never over a household's); else a fresh folder under the system's temporary folder.
fn prepare_workspace(given: Option<PathBuf>) -> anyhow::Result<PathBuf> {
    let dir = match given {
        Some(d) => {
            if d.exists() && std::fs::read_dir(&d)?.next().is_some() {
                anyhow::bail!(
                    "{} is not empty: the demo writes its own config.toml, so give it a new or empty folder (or none)",
                    d.display()
                );
            }
            std::fs::create_dir_all(&d)?;
            d
        }
        None => {
            let name = format!(
                "homebot-demo-{}-{}",
                chrono::Local::now().format("%Y%m%d-%H%M%S"),
                std::process::id()
            );
            let d = std::env::temp_dir().join(name);
            std::fs::create_dir(&d)
                .with_context(|| format!("cannot make the workspace {}", d.display()))?;
            d
        }
    };
    Ok(dir.canonicalize()?)
}

/// The secrets of this run, fresh each time.
struct Tokens {
    qq: String,
    satellite: String,
    /// The dashboard's owner token (its link carries it, so the buttons work).
    http: String,
}

impl Tokens {
    fn new() -> Self {
        let t = || format!("{:032x}", rand::random::<u128>());
        Self {
            qq: t(),
            satellite: t(),
            http: t(),
        }
    }
}

/// A TOML string literal.
fn toml_str(s: &str) -> String {
    toml::Value::String(s.to_string()).to_string()
}

fn config_toml(model: &ModelChoice, tokens: &Tokens) -> String {
    format!(
        r#"# Written by `homebot demo`: a household with a QQ group, a kitchen speaker and a terminal.
[household]
name = "演示之家"

[provider]
kind = "openai"
base_url = {url}
model = {model}
stream = true

[qq]
listen = "127.0.0.1:0"
access_token = {qq_token}
groups = {{ policy = "allowlist", allow = ["{GROUP}"] }}
send_interval_ms = 100

[voice]
wyoming_listen = "127.0.0.1:0"
ws_listen = "127.0.0.1:0"
wyoming_speakers = {{ "{HA_SPEAKER}" = "mom" }}

[[voice.satellites]]
id = "{SATELLITE}"
token = {sat_token}
speakers = {{ "{SATELLITE_SPEAKER}" = "mom" }}

[http]
listen = "127.0.0.1:0"
token = {http_token}

[[members]]
id = "mom"
name = "妈妈"
qq_ids = ["{MOM_QQ}"]

[[members]]
id = "dad"
name = "爸爸"
"#,
        url = toml_str(&model.url()),
        model = toml_str(&model.name()),
        qq_token = toml_str(&tokens.qq),
        sat_token = toml_str(&tokens.satellite),
        http_token = toml_str(&tokens.http),
    )
}

/// The environment the demo's kernel sees: not the caller's provider settings (the
/// config names the model), only a key for a real endpoint and the context window.
fn env_overrides(model: &ModelChoice) -> EnvOverrides {
    let get = |k: &str| std::env::var(k).ok().filter(|v| !v.trim().is_empty());
    EnvOverrides {
        api_key: match model {
            ModelChoice::Real { .. } => get("HOMEBOT_API_KEY").map(Secret::new),
            ModelChoice::Scripted(_) => None,
        },
        context_window: get("HOMEBOT_CONTEXT_WINDOW"),
        // a fixed address for the dashboard (the config's is a free loopback port)
        http_listen: get("HOMEBOT_HTTP_LISTEN"),
        ..Default::default()
    }
}

/// Ctrl-C, or SIGTERM where there is one.
async fn wait_for_stop() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{signal, SignalKind};
        match signal(SignalKind::terminate()) {
            Ok(mut term) => tokio::select! {
                _ = tokio::signal::ctrl_c() => {}
                _ = term.recv() => {}
            },
            Err(_) => {
                let _ = tokio::signal::ctrl_c().await;
            }
        }
    }
    #[cfg(not(unix))]
    {
        let _ = tokio::signal::ctrl_c().await;
    }
}

/// `path`'s text, if it is there.
pub fn read(path: &Path) -> Option<String> {
    std::fs::read_to_string(path).ok()
}

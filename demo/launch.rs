//! The demo's run: the model, the gateway with its channels on loopback, the story played,
//! then the dashboard until Ctrl-C.

use super::workspace::{config_toml, env_overrides, prepare_workspace, Tokens};
use super::{DemoArgs, ModelChoice, BOT_QQ, SATELLITE};
use crate::channels::{self, contract::StartError};
use crate::kernel::{Kernel, KernelOptions};
use anyhow::Context;
use std::collections::HashMap;
use std::path::PathBuf;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// Run the demo; `workspace` is the global `--workspace` (else a fresh temporary folder).
pub async fn run(workspace: Option<PathBuf>, args: DemoArgs) -> anyhow::Result<()> {
    let root = prepare_workspace(workspace)?;
    let stop_model = CancellationToken::new();
    let model = match &args.model_url {
        None => ModelChoice::Scripted(
            super::model::ScriptedModel::start(stop_model.clone())
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
            super::script::MODEL,
            m.base_url(),
            super::script::LABEL
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
    let url = super::dashboard::start(&kernel, &tokens.http).await;
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

pub(super) async fn play(
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
    let onebot = super::peers::OneBot::connect(&qq, BOT_QQ, &tokens.qq)
        .await
        .map_err(|e| anyhow::anyhow!("the OneBot simulator cannot connect: {e}"))?;
    let satellite = super::peers::Satellite::connect(&voice_ws, SATELLITE, &tokens.satellite)
        .await
        .map_err(|e| anyhow::anyhow!("the kitchen satellite cannot connect: {e}"))?;
    let mut stage = super::story::Stage {
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
    let running = channels::start_enabled(kernel).await?;
    Ok(running
        .bound
        .iter()
        .map(|(label, addr)| (label.to_string(), addr.to_string()))
        .collect())
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

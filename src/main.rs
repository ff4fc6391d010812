//! `homebot` — the command line. See `homebot --help`. `main` parses the arguments and
//! dispatches to one function per subcommand.

use anyhow::Context;
use clap::{Parser, Subcommand};
use homebot::channels::cli::{self, CliOptions, Door};
use homebot::config::Config;
use homebot::kernel::{skill_search_path, Kernel, KernelOptions};
use homebot::modes::ModeRegistry;
use homebot::skills;
use homebot::turn::Command as Slash;
use homebot::workspace::Workspace;
use std::path::{Path, PathBuf};
use std::time::Duration;

#[derive(Parser)]
#[command(
    name = "homebot",
    version,
    about = "A home assistant bot gateway with run modes"
)]
struct Cli {
    /// Workspace folder (default: $HOMEBOT_WORKSPACE or ~/.homebot/workspace); created on first use.
    #[arg(long, global = true)]
    workspace: Option<PathBuf>,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Chat from the terminal: one turn with -m, else interactive.
    Chat(ChatArgs),
    /// Run every enabled channel until Ctrl-C / SIGTERM.
    Gateway,
    /// Show the mode state, provider and warnings.
    Status,
    /// List mode sessions, newest first.
    Sessions,
    /// List reminders (pending; with --all also fired, late, undelivered), or cancel one.
    Reminders {
        /// Also the finished ones.
        #[arg(long)]
        all: bool,
        #[command(subcommand)]
        action: Option<ReminderCommand>,
    },
    /// Scene memory: list scenes with their keys, features and memories; or forget one.
    /// Works whether or not a gateway runs.
    Memory {
        /// Only scenes under this key (e.g. `chan:qq`; matched at `/` boundaries).
        #[arg(long)]
        scene: Option<String>,
        #[command(subcommand)]
        action: Option<MemoryCommand>,
    },
    /// The examples modes learned from the household: list them (of one mode), or forget
    /// one. Works whether or not a gateway runs.
    #[command(args_conflicts_with_subcommands = true)]
    Examples {
        /// Only this mode's examples (e.g. `cooking`).
        mode: Option<String>,
        #[command(subcommand)]
        action: Option<ExamplesCommand>,
    },
    /// Send a proactive message through a running gateway's channel.
    Announce {
        /// Channel name (e.g. `voice`).
        #[arg(long, default_value = homebot::channels::voice::CHANNEL)]
        channel: String,
        /// Target inside the channel (e.g. a satellite id).
        #[arg(long = "to")]
        to: String,
        text: String,
    },
    /// The provider calls' audit trail: one line per call (blocks, history range, usage, latency, outcome).
    Audit {
        /// Only this mode session's calls (an id such as cook-20261022-195500-a1b2c3).
        #[arg(long)]
        session: Option<String>,
        /// At most N records, newest last.
        #[arg(long)]
        last: Option<usize>,
        /// Print the JSON records, one per line.
        #[arg(long)]
        json: bool,
    },
    /// Prefix-cache hit ratio and tokens per day and per mode session.
    Stats,
    /// Probe the configured LLM endpoint: reachable, models, context size; exit 1 if not reachable.
    Doctor,
    /// Play a short cooking session across QQ, a kitchen speaker and the terminal on a
    /// fresh workspace, with a scripted model built in (or --model-url), then keep running.
    Demo(homebot::demo::DemoArgs),
    /// Configuration commands.
    Config {
        #[command(subcommand)]
        command: ConfigCommand,
    },
}

#[derive(clap::Args)]
struct ChatArgs {
    /// One message; prints the reply and exits.
    #[arg(short = 'm', long = "message")]
    message: Option<String>,
    /// Speaker id (a member id, or any id).
    #[arg(long, default_value = "owner")]
    speaker: String,
    /// Chat id inside the CLI channel.
    #[arg(long = "chat-id", default_value = "local")]
    chat_id: String,
    /// An explicit scene key for these turns (e.g. `chan:qq/peer:group_1027`);
    /// repeat for more. Memories are recalled and kept there.
    #[arg(long = "scene")]
    scenes: Vec<String>,
    /// `none`: these turns leave no trace in scene memory and recall nothing by scene.
    #[arg(long = "scene-policy", value_parser = ["auto", "none"])]
    scene_policy: Option<String>,
}

#[derive(Subcommand)]
enum ReminderCommand {
    /// Cancel a pending reminder by its id.
    Cancel { id: u32 },
}

#[derive(Subcommand)]
enum MemoryCommand {
    /// Remove one memory (and its links to scenes) by its id.
    Forget { id: i64 },
}

#[derive(Subcommand)]
enum ExamplesCommand {
    /// Remove one example by its id (`cooking-3`).
    Forget { id: String },
}

#[derive(Subcommand)]
enum ConfigCommand {
    /// Validate config.toml and every skill folder; exit 1 on any problem.
    Check,
}

/// Logs to stderr, filtered by `RUST_LOG` (`warn`, `homebot=debug,info`: targets and
/// levels; an unreadable value falls back to `default`).
fn init_logging(default: &str) {
    use std::io::IsTerminal;
    use tracing_subscriber::filter::Targets;
    use tracing_subscriber::layer::SubscriberExt;
    use tracing_subscriber::util::SubscriberInitExt;
    let filter = std::env::var("RUST_LOG")
        .ok()
        .and_then(|v| v.parse::<Targets>().ok())
        .unwrap_or_else(|| default.parse().expect("the default filter is a level"));
    tracing_subscriber::fmt()
        .with_ansi(std::io::stderr().is_terminal())
        .with_writer(std::io::stderr)
        .finish()
        .with(filter)
        .init();
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    let root = cli
        .workspace
        .clone()
        .unwrap_or_else(Workspace::default_root);
    init_logging(if matches!(cli.command, Command::Gateway) {
        "info"
    } else {
        "warn"
    });
    match cli.command {
        Command::Chat(args) => chat(&root, args).await,
        Command::Gateway => gateway(&root).await,
        Command::Status => status(&root).await,
        Command::Announce { channel, to, text } => announce(&root, &channel, &to, &text).await,
        Command::Reminders { all, action } => reminders(&root, all, action).await,
        Command::Memory { scene, action } => memory(&root, scene, action),
        // list the kept examples, or forget one (with or without a gateway)
        Command::Examples { mode, action } => {
            let forget = action.map(|ExamplesCommand::Forget { id }| id);
            let ws = Workspace::open(&root)?;
            let text = homebot::modes::examples::cli::run(&ws, mode.as_deref(), forget.as_deref());
            print!("{}", text?);
            Ok(())
        }
        Command::Sessions => sessions(&root),
        Command::Audit {
            session,
            last,
            json,
        } => audit(&root, session, last, json),
        Command::Stats => stats(&root),
        Command::Doctor => doctor(&root).await,
        Command::Demo(args) => Ok(homebot::demo::run(cli.workspace, args).await?),
        Command::Config {
            command: ConfigCommand::Check,
        } => config_check(&root),
    }
}

/// `homebot chat`: one turn with `-m`, else the interactive terminal.
async fn chat(root: &Path, args: ChatArgs) -> anyhow::Result<()> {
    let door = open_door(root).await?;
    let opts = CliOptions {
        speaker: args.speaker,
        chat_id: args.chat_id,
        scenes: args.scenes,
        scene_policy: args.scene_policy.map(|p| match p.as_str() {
            "none" => homebot::config::ScenePolicy::None,
            _ => homebot::config::ScenePolicy::Auto,
        }),
    };
    let ended = match args.message {
        Some(m) => cli::one_shot(&door, &opts, &m, &mut cli::Interrupts::new()).await,
        None => {
            let history = Workspace::open(root)?.cli_history();
            cli::interactive(&door, history, &opts).await?
        }
    };
    // the reply was printed (`one_shot`) before the shutdown's housekeeping (its record
    // is on the disk already: a reply is only given once it is)
    if let cli::Typed::Replied(reply) = &ended {
        if let Some(e) = reply.problem() {
            eprintln!("homebot: turn not answered: {e}");
        }
    }
    door.close().await; // admitted turns record; the control socket is removed
    if let cli::Typed::Quit = ended {
        eprintln!("homebot: interrupted");
        std::process::exit(130);
    }
    Ok(())
}

/// `homebot gateway`: every enabled channel and the dashboard, until Ctrl-C / SIGTERM.
async fn gateway(root: &Path) -> anyhow::Result<()> {
    // idle peers cost a descriptor each: use all the system allows (the connection caps
    // and the control socket's reserve are sized from it)
    #[cfg(unix)]
    match homebot::netutil::raise_fd_limit() {
        Ok((before, after)) => tracing::info!(
            before,
            after,
            "descriptor limit (soft) raised to the hard limit"
        ),
        Err(e) => tracing::warn!(error = %e, "cannot raise the descriptor limit"),
    }
    let env = homebot::config::EnvOverrides::from_env();
    // as a Home Assistant add-on, a wrong option stops the start before anything is
    // written (the workspace, the agent token)
    if let Some(addon) = &env.addon {
        addon.options()?;
    }
    let kernel = Kernel::start(
        root,
        KernelOptions {
            env: Some(env),
            ..Default::default()
        },
    )
    .with_context(|| format!("cannot start homebot in {}", root.display()))?;
    let running = match homebot::channels::start_enabled(&kernel).await {
        Ok(r) => r,
        Err(e) => {
            kernel.shutdown_gracefully(Duration::ZERO).await;
            anyhow::bail!("cannot start the channels: {e}");
        }
    };
    // one HTTP server: the dashboard, and the routes the channels provide
    let http_addr = match homebot::dashboard::start(&kernel, running.routes).await {
        Ok(a) => a,
        Err(e) => {
            kernel.shutdown_gracefully(Duration::ZERO).await;
            anyhow::bail!("cannot start the dashboard: {e}");
        }
    };
    homebot::addon::start(&kernel, http_addr);
    // a long-running process: what its threads freed goes back to the system
    let trim = homebot::heap::release_periodically(kernel.tasks(), homebot::heap::PERIOD);
    tracing::info!(workspace = %kernel.workspace().root().display(), "gateway running; Ctrl-C or SIGTERM to stop");
    wait_for_shutdown().await;
    let grace = Duration::from_secs(kernel.config().agent.shutdown_grace_secs);
    tracing::info!(
        turns = kernel.pending_turns(),
        grace_secs = grace.as_secs(),
        "shutting down: no new turns; finishing the admitted ones"
    );
    trim.abort();
    let clean = kernel.shutdown_gracefully(grace).await;
    tracing::info!(clean, "stopped");
    Ok(())
}

/// `homebot status`.
async fn status(root: &Path) -> anyhow::Result<()> {
    let door = open_door(root).await?;
    print!("{}", door.status().await);
    door.close().await;
    Ok(())
}

/// `homebot announce`: a proactive message through a running gateway's channel.
async fn announce(root: &Path, channel: &str, to: &str, text: &str) -> anyhow::Result<()> {
    let door = open_door(root).await?;
    let r = door.announce(channel, to, text).await;
    door.close().await;
    match r.problem() {
        None => println!("{}", r.text),
        Some(e) => anyhow::bail!("announce failed: {e}"),
    }
    Ok(())
}

/// `homebot reminders`: the slash command, run by whoever owns the workspace (never the LLM).
async fn reminders(root: &Path, all: bool, action: Option<ReminderCommand>) -> anyhow::Result<()> {
    let command = match action {
        Some(ReminderCommand::Cancel { id }) => Slash::CancelReminder(Some(id)),
        None => Slash::Reminders { all },
    };
    let door = open_door(root).await?;
    let r = door
        .turn(cli::turn("local", "owner", command.to_string()))
        .await;
    door.close().await;
    match r.problem() {
        None => print!("{}", r.text.trim_end().to_string() + "\n"),
        Some(e) => anyhow::bail!("{}: {e}", r.text),
    }
    Ok(())
}

/// `homebot memory`: list scenes and memories, or forget one (with or without a gateway).
fn memory(root: &Path, scene: Option<String>, action: Option<MemoryCommand>) -> anyhow::Result<()> {
    let ws = Workspace::open(root)?;
    let cfg = Config::load_or_init(ws.root())?;
    let mut store = homebot::memory::Store::open(&ws.memory_db(), cfg.memory.clone())?;
    if let Some(MemoryCommand::Forget { id }) = action {
        if !store.forget(id)? {
            anyhow::bail!("there is no memory {id} (see `homebot memory`)");
        }
        println!("memory {id} forgotten");
        return Ok(());
    }
    let filter = scene
        .map(|s| homebot::memory::SceneKey::parse(&s))
        .transpose()
        .context("--scene")?;
    let now = chrono::Utc::now().timestamp();
    let text = homebot::memory::cli::render(&store, filter.as_ref(), cfg.timezone(), now)?;
    print!("{text}");
    Ok(())
}

/// `homebot sessions`: mode sessions, newest first.
fn sessions(root: &Path) -> anyhow::Result<()> {
    let ws = Workspace::open(root)?;
    let tz = Config::load_or_init(ws.root())?.timezone();
    let list = homebot::modes::listing::list_sessions(&ws, tz, chrono::Utc::now());
    print!("{}", homebot::modes::listing::render(&list));
    Ok(())
}

/// `homebot audit`: one line (or JSON record) per provider call.
fn audit(
    root: &Path,
    session: Option<String>,
    last: Option<usize>,
    json: bool,
) -> anyhow::Result<()> {
    let ws = Workspace::open(root)?;
    let printed = homebot::audit::cli::audit(&ws, session.as_deref(), last, json)?;
    eprint!("{}", printed.notes);
    // the household's examples the session's frozen prompt got (a mode that learns them)
    // on stderr with the notes, so the records stay one per line on stdout
    if let Some(id) = session.as_deref() {
        let dir = homebot::audit::session_dir(&ws, id)?;
        eprint!("{}", homebot::modes::examples::cli::session_lines(&dir));
    }
    print!("{}", printed.out);
    Ok(())
}

/// `homebot stats`: the cache hit ratio, tokens and cost per day and per session.
fn stats(root: &Path) -> anyhow::Result<()> {
    let ws = Workspace::open(root)?;
    // prices from the file only (read, never written): a stats run changes nothing
    let prices = match Config::load(&ws.config_file()) {
        Ok(c) => c.prices(),
        Err(e) if ws.config_file().exists() => {
            eprintln!("note: no prices ({e})");
            Default::default()
        }
        Err(_) => Default::default(),
    };
    let printed = homebot::audit::cli::stats(&ws, &prices)?;
    eprint!("{}", printed.notes);
    print!("{}", printed.out);
    Ok(())
}

/// `homebot doctor`: the model endpoints, then Home Assistant when configured (one
/// connection, as the gateway would make it); exit 1 when either is unreachable.
async fn doctor(root: &Path) -> anyhow::Result<()> {
    let report = homebot::doctor::run(root).await?;
    for line in &report.lines {
        println!("{line}");
    }
    let ws = Workspace::open(root)?;
    let mut cfg = Config::load_or_init(ws.root())?;
    cfg.apply_env(&homebot::config::EnvOverrides::from_env())?;
    let mut ha_ok = true;
    if cfg.home_assistant.enabled() {
        let (lines, ok) = homebot::channels::home_assistant::doctor(&cfg.home_assistant).await;
        for line in lines {
            println!("{line}");
        }
        ha_ok = ok;
    }
    if !report.reachable || !ha_ok {
        std::process::exit(1);
    }
    Ok(())
}

/// `homebot config check`: config.toml (with the environment's overrides), the context
/// window and every skill folder; exit 1 on any problem.
fn config_check(root: &Path) -> anyhow::Result<()> {
    let ws = Workspace::open(root)?;
    let mut cfg = Config::load_or_init(ws.root())?;
    let env = homebot::config::EnvOverrides::from_env();
    cfg.apply_env(&env).unwrap_or_else(|e| fail(e));
    let reg = ModeRegistry::load(&skill_search_path(&ws, &cfg), skills::PLUGINS);
    // the context window as start-up would work it out (HOMEBOT_CONTEXT_WINDOW, the
    // model's entry, provider.max_tokens)
    let c =
        homebot::context::Context::from_config(&cfg, &env, &[], &reg).unwrap_or_else(|e| fail(e));
    println!(
        "context: window {} tokens, input budget {} tokens",
        c.window, c.input
    );
    // problems first, and `ok` only when there are none
    for i in reg.issues() {
        eprintln!("error: {i}");
    }
    for m in reg.modes() {
        let (name, id) = (&m.manifest.display_name, &m.manifest.id);
        println!("mode: {name} ({id}) from {}", m.skill_dir.display());
    }
    for s in reg.skills() {
        println!("skill: {} ({})", s.name, s.path.display());
    }
    if !reg.issues().is_empty() {
        eprintln!(
            "config check: {} problem(s) in skill folders ({} itself parsed)",
            reg.issues().len(),
            ws.config_file().display()
        );
        std::process::exit(1);
    }
    println!("config: ok ({})", ws.config_file().display());
    Ok(())
}

/// Say what is wrong and exit 1.
fn fail(e: impl std::fmt::Display) -> ! {
    eprintln!("error: {e}");
    std::process::exit(1)
}

async fn open_door(root: &Path) -> anyhow::Result<Door> {
    Door::open(root, Duration::from_secs(30))
        .await
        .with_context(|| format!("cannot start homebot in {}", root.display()))
}

async fn wait_for_shutdown() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{signal, SignalKind};
        let mut term = signal(SignalKind::terminate()).expect("SIGTERM handler can be installed");
        tokio::select! {
            _ = tokio::signal::ctrl_c() => {}
            _ = term.recv() => {}
        }
    }
    #[cfg(not(unix))]
    {
        let _ = tokio::signal::ctrl_c().await;
    }
}

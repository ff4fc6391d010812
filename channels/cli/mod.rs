//! The CLI channel: a terminal on the home server. One-shot (`chat -m`) prints the reply
//! and returns; interactive chat keeps a line history (`<workspace>/logs/cli_history`)
//! and ends on Ctrl-D, Ctrl-C or `/quit`. Turns carry `channel = "cli"`.
//!
//! The CLI reaches the kernel through a [`Door`]: its own kernel when it can take the
//! workspace lock, otherwise the control socket ([`control`]) of the process that holds it
//! (a running gateway) — never a second writer. The process that owns the workspace runs
//! the CLI channel's actor ([`actor::Terminals`]): it owns the control connections and the
//! terminals listening for proactive messages, and it is the channel's outbound door.

pub mod actor;
pub mod control;

use crate::channels::contract::{Channel, StartError, Started};
use crate::kernel::{Kernel, KernelError, KernelOptions};
use crate::turn::{Audience, Facts, Failure, Modality, Reply, Trust, Turn};
use actor::Terminals;
use control::Request;
use rustyline::error::ReadlineError;
use std::path::Path;
use std::time::{Duration, Instant};
use tokio::sync::Mutex;
use tokio_util::sync::CancellationToken;

pub const CHANNEL: &str = "cli";

/// The CLI as a channel: the control socket and the terminal actor, which is its
/// outbound door. A proactive message for a CLI chat prints in an interactive chat of this
/// process, or in every `homebot chat` of that chat listening through the control socket;
/// with none attached it is refused as undeliverable, so the sender can say so.
#[derive(Default)]
pub struct CliChannel;

/// Start the terminal actor and (on Unix) the control socket for the process that owns
/// the workspace; the actor's handle is the CLI's outbound door.
pub fn serve(kernel: &Kernel) -> std::io::Result<Terminals> {
    let terminals = Terminals::start(kernel.lifecycle(), kernel.cancel_token().child_token())?;
    #[cfg(unix)]
    control::spawn_server(kernel, terminals.clone());
    Ok(terminals)
}

#[async_trait::async_trait]
impl Channel for CliChannel {
    fn name(&self) -> &'static str {
        CHANNEL
    }

    async fn start(
        self: Box<Self>,
        kernel: Kernel,
        _cancel: CancellationToken,
    ) -> Result<Started, StartError> {
        let terminals = serve(&kernel).map_err(|e| {
            let socket = kernel.workspace().root().join(control::SOCKET_FILE);
            StartError::new(CHANNEL, socket.display().to_string(), e)
        })?;
        Ok(Started {
            bound: Vec::new(),
            outbound: Some(std::sync::Arc::new(terminals)),
        })
    }
}

#[derive(Debug, Clone)]
pub struct CliOptions {
    pub speaker: String,
    pub chat_id: String,
    /// Explicit scene keys for every turn of this chat (`--scene`); empty: derived.
    pub scenes: Vec<String>,
    /// `--scene-policy`: `none` keeps these turns out of scene memory.
    pub scene_policy: Option<crate::config::ScenePolicy>,
}

impl Default for CliOptions {
    fn default() -> Self {
        Self {
            speaker: "owner".into(),
            chat_id: "local".into(),
            scenes: Vec::new(),
            scene_policy: None,
        }
    }
}

impl CliOptions {
    /// A turn of this chat, with its scene keys and policy.
    pub fn turn(&self, text: &str) -> Turn {
        let mut t = Turn::new(CHANNEL, &self.chat_id, &self.speaker, text);
        t.facts = Some(Facts {
            audience: Audience::Terminal,
            modality: Modality::Text,
            trust: Trust::Owner,
            memory_peer: Some(self.chat_id.clone()).filter(|c| !c.is_empty()),
        });
        t.scenes = self.scenes.clone();
        t.scene_policy = self.scene_policy;
        t
    }
}

/// Where the CLI's turns go.
pub enum Door {
    /// This process owns the workspace (and runs the CLI channel's actor).
    Local(Kernel, Terminals),
    /// Another process (a gateway) owns it; turns go through its control socket (the
    /// connection is dropped to cancel a turn, and made again for the next one).
    #[cfg(unix)]
    Remote {
        root: std::path::PathBuf,
        conn: Mutex<Option<control::Client>>,
    },
}

/// Ctrl-C (SIGINT) as a stream, caught for the whole chat: during a turn it cancels the
/// turn; between turns it ends the chat. (At a terminal prompt the line editor reads
/// Ctrl-C itself; this covers the time a turn runs, and input that is not a terminal.)
pub struct Interrupts {
    #[cfg(unix)]
    sigint: Option<tokio::signal::unix::Signal>,
}

impl Interrupts {
    pub fn new() -> Self {
        Self {
            #[cfg(unix)]
            sigint: tokio::signal::unix::signal(tokio::signal::unix::SignalKind::interrupt()).ok(),
        }
    }

    /// The next Ctrl-C (never, if it cannot be caught).
    pub async fn next(&mut self) {
        #[cfg(unix)]
        match self.sigint.as_mut() {
            Some(s) => {
                s.recv().await;
            }
            None => std::future::pending::<()>().await,
        }
        #[cfg(not(unix))]
        if tokio::signal::ctrl_c().await.is_err() {
            std::future::pending::<()>().await
        }
    }
}

impl Default for Interrupts {
    fn default() -> Self {
        Self::new()
    }
}

/// How a turn typed in the terminal ended.
pub enum Typed {
    Replied(Reply),
    /// Ctrl-C twice: the first cancelled the turn, the second asks to leave.
    Quit,
}

impl Door {
    /// Own the workspace if free, else route to its owner. Waits up to `patience` for a
    /// lock that is held by a process without a control socket (another one-shot).
    pub async fn open(root: &Path, patience: Duration) -> Result<Self, KernelError> {
        let started = Instant::now();
        loop {
            let opts = KernelOptions {
                lock_wait: Some(Duration::ZERO),
                ..Default::default()
            };
            match Kernel::start(root, opts) {
                Ok(k) => {
                    let terminals = serve(&k).map_err(|e| KernelError::Actors(e.to_string()))?;
                    k.doors()
                        .register(CHANNEL, std::sync::Arc::new(terminals.clone()));
                    return Ok(Door::Local(k, terminals));
                }
                Err(KernelError::Locked(e)) => {
                    #[cfg(unix)]
                    {
                        let root = std::fs::canonicalize(root).unwrap_or(root.to_path_buf());
                        if let Ok(c) = control::Client::connect(&root).await {
                            return Ok(Door::Remote {
                                root,
                                conn: Mutex::new(Some(c)),
                            });
                        }
                    }
                    if started.elapsed() >= patience {
                        return Err(KernelError::Locked(e));
                    }
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
                Err(e) => return Err(e),
            }
        }
    }

    pub async fn turn(&self, turn: Turn) -> Reply {
        self.turn_cancellable(turn, CancellationToken::new()).await
    }

    /// A turn that `cancel` stops: the owner records it as cancelled.
    pub async fn turn_cancellable(&self, turn: Turn, cancel: CancellationToken) -> Reply {
        match self {
            Door::Local(k, _) => k.submit_cancellable(turn, cancel).reply().await,
            #[cfg(unix)]
            Door::Remote { root, conn } => {
                let mut conn = conn.lock().await;
                let client = match connected(root, &mut conn).await {
                    Ok(c) => c,
                    Err(e) => return unreachable_gateway(e),
                };
                let answered = tokio::select! {
                    r = client.turn(&turn) => Some(r),
                    _ = cancel.cancelled() => None,
                };
                match answered {
                    Some(r) => r.unwrap_or_else(unreachable_gateway),
                    None => {
                        // hanging up is how a control client cancels its turn
                        *conn = None;
                        Reply::cancelled("（已取消这一轮。）")
                    }
                }
            }
        }
    }

    /// A turn typed in the terminal: the first Ctrl-C cancels it (it is recorded as
    /// cancelled), a second one asks to leave.
    pub async fn typed_turn(&self, turn: Turn, ctrl_c: &mut Interrupts) -> Typed {
        let cancel = CancellationToken::new();
        let reply = self.turn_cancellable(turn, cancel.clone());
        tokio::pin!(reply);
        loop {
            tokio::select! {
                r = &mut reply => return Typed::Replied(r),
                _ = ctrl_c.next() => {
                    if cancel.is_cancelled() {
                        return Typed::Quit;
                    }
                    cancel.cancel();
                    eprintln!("（正在取消这一轮；再按一次 Ctrl-C 退出）");
                }
            }
        }
    }

    pub async fn status(&self) -> String {
        match self {
            Door::Local(k, _) => k.status_text().await,
            #[cfg(unix)]
            Door::Remote { root, conn } => {
                let mut conn = conn.lock().await;
                match connected(root, &mut conn).await {
                    Ok(c) => match c.request(&Request::Status).await {
                        Ok(r) => r.text,
                        Err(e) => format!("status unavailable: {e}"),
                    },
                    Err(e) => format!("status unavailable: {e}"),
                }
            }
        }
    }

    /// A proactive message through a running channel (only a gateway runs channels).
    pub async fn announce(&self, channel: &str, target: &str, text: &str) -> Reply {
        let result = match self {
            Door::Local(k, _) => k
                .deliver(channel, target, text)
                .await
                .map_err(|e| e.to_string()),
            #[cfg(unix)]
            Door::Remote { root, conn } => {
                let req = Request::Announce {
                    channel: channel.into(),
                    target: target.into(),
                    text: text.into(),
                };
                let mut conn = conn.lock().await;
                match connected(root, &mut conn).await {
                    Ok(c) => match c.request(&req).await {
                        Ok(r) => return r,
                        Err(e) => Err(e.to_string()),
                    },
                    Err(e) => Err(e.to_string()),
                }
            }
        };
        match result {
            Ok(()) => Reply::ok(format!("delivered to {channel}:{target}")),
            Err(e) => Reply::failed(e.clone(), Failure::Unavailable, e),
        }
    }

    pub fn household(&self) -> Option<String> {
        match self {
            Door::Local(k, _) => Some(k.config().household.name.clone()),
            #[cfg(unix)]
            Door::Remote { .. } => None,
        }
    }

    /// Let in-flight turns finish, then stop (a no-op for a remote door).
    pub async fn close(self) {
        if let Door::Local(k, _) = self {
            k.shutdown_gracefully(Duration::from_secs(k.config().agent.shutdown_grace_secs))
                .await;
        }
    }
}

/// The control connection, made again if an earlier turn was cancelled by hanging up.
#[cfg(unix)]
async fn connected<'a>(
    root: &Path,
    conn: &'a mut Option<control::Client>,
) -> std::io::Result<&'a mut control::Client> {
    if conn.is_none() {
        *conn = Some(control::Client::connect(root).await?);
    }
    Ok(conn.as_mut().expect("connected just above"))
}

fn unreachable_gateway(e: std::io::Error) -> Reply {
    Reply::failed(
        format!("无法把消息交给正在运行的 homebot：{e}"),
        Failure::Unavailable,
        e.to_string(),
    )
}

pub async fn one_shot(
    door: &Door,
    opts: &CliOptions,
    text: &str,
    ctrl_c: &mut Interrupts,
) -> Typed {
    door.typed_turn(opts.turn(text), ctrl_c).await
}

/// While it lives, proactive messages for `chat` print in this terminal: this process's
/// own terminal actor prints them, or a listening connection to the gateway's.
async fn attach(door: &Door, chat: &str) -> Option<Attached> {
    match door {
        Door::Local(_, terminals) => {
            terminals.attach_local(Some(chat.to_string()));
            Some(Attached::Local(terminals.clone()))
        }
        #[cfg(unix)]
        Door::Remote { root, .. } => match control::Listener::open(root, chat).await {
            Ok(mut l) => Some(Attached::Remote(tokio::spawn(async move {
                while let Ok(Some(text)) = l.next().await {
                    println!("\nhomebot（主动消息）> {text}\n");
                }
            }))),
            Err(e) => {
                eprintln!("（这个终端收不到主动消息：{e}）");
                None
            }
        },
    }
}

enum Attached {
    Local(Terminals),
    #[cfg(unix)]
    Remote(tokio::task::JoinHandle<()>),
}

impl Drop for Attached {
    fn drop(&mut self) {
        match self {
            Attached::Local(t) => t.attach_local(None),
            #[cfg(unix)]
            Attached::Remote(task) => task.abort(),
        }
    }
}

/// Interactive chat until Ctrl-D / `/quit`, or Ctrl-C at the prompt; during a turn the
/// first Ctrl-C cancels the turn and a second one leaves (`Typed::Quit`).
pub async fn interactive(
    door: &Door,
    history: std::path::PathBuf,
    opts: &CliOptions,
) -> anyhow::Result<Typed> {
    let (line_tx, mut line_rx) = tokio::sync::mpsc::channel::<String>(1);
    let (ack_tx, ack_rx) = std::sync::mpsc::channel::<()>();
    // rustyline blocks; it runs on its own thread and waits for each reply before
    // prompting again, so replies and the prompt never interleave.
    let reader = std::thread::spawn(move || -> anyhow::Result<()> {
        let mut rl = rustyline::DefaultEditor::new()?;
        let _ = rl.load_history(&history);
        loop {
            match rl.readline("你> ") {
                Ok(line) => {
                    let line = line.trim().to_string();
                    if line.is_empty() {
                        continue;
                    }
                    let _ = rl.add_history_entry(&line);
                    if line == "/quit" || line == "/exit" {
                        break;
                    }
                    if line_tx.blocking_send(line).is_err() || ack_rx.recv().is_err() {
                        break;
                    }
                }
                Err(ReadlineError::Interrupted | ReadlineError::Eof) => break,
                Err(e) => return Err(e.into()),
            }
        }
        let _ = rl.save_history(&history);
        Ok(())
    });
    // proactive messages for this chat (a reminder ringing) print here meanwhile
    let _listening = attach(door, &opts.chat_id).await;
    println!(
        "homebot · {} · 说话人 {} · 输入 /help 查看命令，/quit 或 Ctrl-D 退出",
        door.household()
            .unwrap_or_else(|| "(via the running gateway)".into()),
        opts.speaker
    );
    let mut ended = Typed::Replied(Reply::ok(""));
    let mut ctrl_c = Interrupts::new();
    loop {
        let line = tokio::select! {
            line = line_rx.recv() => line,
            _ = ctrl_c.next() => None, // between turns Ctrl-C ends the chat
        };
        let Some(line) = line else { break };
        match one_shot(door, opts, &line, &mut ctrl_c).await {
            Typed::Replied(reply) => println!("homebot> {}\n", reply.text),
            Typed::Quit => {
                ended = Typed::Quit;
                break;
            }
        }
        if ack_tx.send(()).is_err() {
            break;
        }
    }
    drop(ack_tx);
    if matches!(ended, Typed::Quit) || !reader.is_finished() {
        // the reader waits for input or an acknowledgement that will not come; leave it
        return Ok(ended);
    }
    reader
        .join()
        .map_err(|_| anyhow::anyhow!("the line reader panicked"))??;
    Ok(ended)
}

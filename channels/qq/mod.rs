//! The QQ channel: OneBot v11 (NapCat, Lagrange.OneBot, LLOneBot) over WebSocket.
//!
//! - Reverse WebSocket server (the implementation connects to homebot) at
//!   `/onebot/v11/ws`: `X-Self-ID` required, `X-Client-Role` Universal (or split API /
//!   Event), `Authorization: Bearer <token>` or `?access_token=` checked when a token is
//!   configured. A missing header or token is refused with 401, a wrong token or a
//!   duplicate self id with 403.
//! - Forward WebSocket client (homebot connects to `ws://host:6700`), with reconnect and
//!   backoff.
//! - Events: messages become [`crate::turn::Turn`]s (`channel = "qq"`, `chat_id`
//!   `group:<id>` or `private:<id>`, the sender bound to the turn); lifecycle and
//!   heartbeat meta events keep the connection's health; a silent connection is closed
//!   after the heartbeat timeout. Actions carry a unique `echo` and wait for their
//!   response.
//! - Replies: in groups they quote the message and @ the sender; markdown is flattened,
//!   long replies split on sentence ends, sends to one group spaced out (QQ's risk control
//!   punishes bursts). A reply whose connection is gone waits a bounded time for a
//!   reconnect, then is logged as undeliverable. "Please wait" refusals go out once
//!   per burst (until the chat's queue drains).
//! - Outbound door: `homebot announce --channel qq --to group:<id>|private:<id>` and
//!   the Cron deliver through the same ordered queues.
//!
//! Access: groups and private senders each `open` / `allowlist` / `disabled`; unknown
//! private senders are denied by default and never reach the LLM.
//!
//! Layout, one job per file; each imports only the files above it, never the other way
//! (the test at the bottom checks it):
//! - `id`: string-or-number OneBot ids; `message`: message segments and CQ codes (in,
//!   and out as typed segments); `action`: the actions homebot sends, typed, and what a
//!   send answers;
//!   `target`: where a message goes (a group, a person) and the door's target syntax;
//! - `events`: typed OneBot frames; `inbound`: a message event into a turn;
//! - the state, each part owned by the actor: `conns` — who is connected (accounts,
//!   connections, the bot's sent message ids); `rpc` — actions waiting for their
//!   response; `delivery` — the per-target delivery queues and the refusal limiter;
//! - `actor`: the [`QqActor`](actor::QqActor) that owns that state, on its own thread;
//! - `handle`: [`Qq`], the handle to it — actions with their waits, and the outbound
//!   door;
//! - `outbox`: a target's delivery worker (ordered, throttled sends);
//! - `conn`: a connection's slot and its read loop, which both transports run;
//!   `server`: the reverse WebSocket server (handshake, auth, reservation); `forward`:
//!   the forward WebSocket client (reconnect, backoff);
//! - this file: [`QqChannel`] (the config, implementing [`Channel`]) and the start.

mod action;
mod actor;
mod conn;
mod conns;
mod delivery;
mod events;
mod forward;
mod handle;
pub mod id;
mod inbound;
pub mod message;
mod outbox;
mod rpc;
mod server;
mod target;

pub use handle::Qq;
pub use inbound::CHANNEL;
pub use rpc::ActionError;

use crate::channels::contract::{Channel, StartError, Started};
use crate::config::QqConfig;
use crate::kernel::Kernel;
use actor::{QqActor, StartWorker};
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;
use tokio_util::sync::CancellationToken;
use tracing::info;

/// The QQ channel before it starts: its configuration.
pub struct QqChannel {
    cfg: QqConfig,
}

impl QqChannel {
    pub fn new(cfg: QqConfig) -> Self {
        Self { cfg }
    }
}

#[async_trait::async_trait]
impl Channel for QqChannel {
    fn name(&self) -> &'static str {
        CHANNEL
    }

    async fn start(
        self: Box<Self>,
        kernel: Kernel,
        cancel: CancellationToken,
    ) -> Result<Started, StartError> {
        let (qq, bound) = start(kernel, self.cfg, cancel).await?;
        Ok(Started {
            bound: bound.map(|a| vec![(CHANNEL, a)]).unwrap_or_default(),
            outbound: Some(Arc::new(qq)),
        })
    }
}

/// Start the actor and the configured transports. Returns the handle and the reverse
/// server's bound address.
async fn start(
    kernel: Kernel,
    cfg: QqConfig,
    cancel: CancellationToken,
) -> Result<(Qq, Option<SocketAddr>), StartError> {
    let cfg = Arc::new(cfg);
    let runtime = tokio::runtime::Handle::current();
    let handle = {
        let (cfg, kernel, cancel) = (cfg.clone(), kernel.clone(), cancel.clone());
        move |addr| Qq {
            addr,
            cfg: cfg.clone(),
            kernel: kernel.clone(),
            cancel: cancel.clone(),
        }
    };
    let start_worker: StartWorker = {
        let (handle, runtime) = (handle.clone(), runtime.clone());
        Box::new(move |addr, queue| {
            runtime.spawn(outbox::run_queue(handle(addr), queue));
        })
    };
    let actor = {
        let (cfg, kernel) = (cfg.clone(), kernel.clone());
        move || QqActor::new(cfg, kernel, runtime, start_worker)
    };
    let addr = crate::channels::arbiter::start_actor("homebot-qq", cancel.clone(), actor)
        .map_err(|e| StartError::new(CHANNEL, "-", e))?;
    let ch = handle(addr);
    let mut bound = None;
    if let Some(listen) = &cfg.listen {
        let (listener, addr) = crate::channels::net::bind(CHANNEL, listen).await?;
        let app = axum::Router::new()
            .route(&cfg.path, axum::routing::get(server::ws_handler))
            .with_state(ch.clone());
        info!(addr = %addr, path = %cfg.path, token = cfg.access_token.is_some(), "qq channel: reverse WebSocket listening");
        let limits = crate::channels::net::HttpLimits {
            conns: crate::channels::net::listener_limit(CHANNEL, cfg.max_connections),
            handshake: Duration::from_secs(cfg.handshake_timeout_secs),
        };
        crate::channels::net::serve_http(&kernel, CHANNEL, listener, app, cancel.clone(), limits);
        bound = Some(addr);
    }
    if let Some(url) = cfg.forward_url.clone() {
        let ch2 = ch.clone();
        kernel.spawn_service(async move { ch2.forward_loop(url).await });
    }
    Ok((ch, bound))
}

#[cfg(test)]
mod tests {
    /// The files of this channel import each other one way only: no circle among the
    /// `use super::…` lines (outside test modules).
    #[test]
    fn no_import_circle_inside_the_qq_channel() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("channels/qq");
        let mut uses: std::collections::BTreeMap<String, Vec<String>> = Default::default();
        for e in std::fs::read_dir(&dir).unwrap() {
            let p = e.unwrap().path();
            let name = p.file_stem().unwrap().to_string_lossy().to_string();
            let text = std::fs::read_to_string(&p).unwrap();
            let code = text.split("#[cfg(test)]").next().unwrap();
            let deps = uses.entry(name.clone()).or_default();
            for line in code.lines() {
                let Some(rest) = line.trim().strip_prefix("use super::") else {
                    continue;
                };
                let first: String = rest
                    .chars()
                    .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                    .collect();
                if first.is_empty() {
                    // `use super::{a, b}`: every name in the braces
                    let inner = rest.trim_start_matches('{').split('}').next().unwrap();
                    deps.extend(
                        inner
                            .split(',')
                            .map(|n| n.trim().split("::").next().unwrap().to_string()),
                    );
                } else {
                    deps.push(first);
                }
            }
        }
        // super:: of mod.rs is `channels`, not a sibling
        uses.remove("mod");
        // a file's imports, followed: it must never reach itself
        for start in uses.keys() {
            let mut seen = std::collections::BTreeSet::new();
            let mut todo = uses[start].clone();
            while let Some(m) = todo.pop() {
                assert_ne!(&m, start, "import circle through {start}: {uses:?}");
                if seen.insert(m.clone()) {
                    todo.extend(uses.get(&m).cloned().unwrap_or_default());
                }
            }
        }
        // the files that import mod.rs's names (`use super::{Qq, …}`) would name them
        for (file, deps) in &uses {
            for d in deps {
                assert!(
                    uses.contains_key(d),
                    "{file} imports {d} from mod.rs: import it from its own file"
                );
            }
        }
    }
}

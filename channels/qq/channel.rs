//! [`QqChannel`]: the QQ channel's configuration before it starts, and the start — the
//! QQ actor on its own thread, then the configured transports (the reverse WebSocket
//! server, the forward client).

use super::actor::{QqActor, StartWorker};
use super::handle::Qq;
use super::inbound::CHANNEL;
use super::{forward, outbox, server};
use crate::channels::contract::{Channel, StartError, Started};
use crate::channels::ctx::ChannelCtx;
use crate::config::QqConfig;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;
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

    async fn start(self: Box<Self>, ctx: ChannelCtx) -> Result<Started, StartError> {
        let (qq, bound) = start(ctx, self.cfg).await?;
        let mut started = Started::door(Arc::new(qq));
        started.bound = bound.map(|a| vec![(CHANNEL, a)]).unwrap_or_default();
        Ok(started)
    }
}

/// Start the actor and the configured transports. Returns the handle and the reverse
/// server's bound address.
async fn start(ctx: ChannelCtx, cfg: QqConfig) -> Result<(Qq, Option<SocketAddr>), StartError> {
    let cfg = Arc::new(cfg);
    let cancel = ctx.cancel().clone();
    let runtime = tokio::runtime::Handle::current();
    let handle = {
        let (cfg, ctx, cancel) = (cfg.clone(), ctx.clone(), cancel.clone());
        move |addr| Qq {
            addr,
            cfg: cfg.clone(),
            ctx: ctx.clone(),
            cancel: cancel.clone(),
        }
    };
    let start_worker: StartWorker = {
        let (handle, runtime) = (handle.clone(), runtime.clone());
        let tasks = ctx.tasks().clone();
        // (tracked: the shutdown cancels an idle worker; a delivery in progress holds
        // its own guard, which the shutdown waits for first)
        Box::new(move |addr, queue| {
            tasks.spawn_on(&runtime, outbox::run_queue(handle(addr), queue));
        })
    };
    let actor = {
        let (cfg, ctx) = (cfg.clone(), ctx.clone());
        move || QqActor::new(cfg, ctx, runtime, start_worker)
    };
    let addr = ctx
        .lifecycle()
        .start_actor_until("homebot-qq", cancel.clone(), actor)
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
        crate::channels::net::serve_http(
            ctx.tasks(),
            CHANNEL,
            listener,
            app,
            cancel.clone(),
            limits,
        );
        bound = Some(addr);
    }
    if let Some(url) = cfg.forward_url.clone() {
        let ch2 = ch.clone();
        ctx.tasks()
            .spawn_in(crate::actor::Group::Service, async move {
                forward::forward_loop(ch2, url).await
            });
    }
    Ok((ch, bound))
}

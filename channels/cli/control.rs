//! The door for everyone but the owner: the process that runs the kernel (and holds the
//! workspace lock, see `lock`) serves a Unix socket, `<workspace>/control.sock` (mode
//! 0600), speaking one JSON object per line:
//!
//! ```text
//! → {"op":"turn","channel":"cli","chat_id":"local","speaker_id":"mom","text":"…"}
//! ← {"text":"…","outcome":{"kind":"answered"}}
//! → {"op":"status"}
//! ← {"text":"…","outcome":{"kind":"answered"}}
//! → {"op":"announce","channel":"voice","target":"kitchen","text":"水开了"}
//! ← {"text":"delivered to voice:kitchen","outcome":{"kind":"answered"}}
//! ```
//!
//! A reply that is not an answer says how the turn ended (see `turn::Outcome`):
//!
//! ```text
//! ← {"text":"消息太多了…","outcome":{"kind":"refused","reason":"busy","detail":"chat queue full (3 waiting)"}}
//! ```
//!
//! Bounded like every listener (`netutil`): at most 16 connections at once, each closed
//! after 60 s without a request; the [`Client`] reconnects by itself when it finds its
//! connection closed before a request.
//!
//! A `turn` request carries a [`Turn`] itself. A `homebot chat -m` started beside a
//! running gateway finds the lock taken and sends its turn through the socket instead;
//! the gateway runs it like any other turn. A `turn_streamed` request is the same turn
//! with its partials as lines before the reply ([`super::served`]).
//!
//! A `listen` request turns its connection into a stream of the proactive messages for a
//! CLI chat (a reminder set from `homebot chat` rings in that terminal even when a gateway
//! runs the workspace): `→ {"op":"listen","chat_id":"local"}`, then one reply line
//! (`listening`, or why not), then one line per message until either side hangs up. At
//! most [`MAX_LISTENERS`] connections listen; a listener that does not read fills its
//! queue and further messages to it are refused as busy.
//!
//! The connections are registered with the CLI channel's actor ([`Terminals`]), which
//! owns them and their queues; the I/O stays in one task per connection.

pub use super::actor::MAX_LISTENERS;
use super::actor::{Terminals, LISTENER_QUEUE};
use super::served::{self, hung_up};
use crate::actor::TaskGuard;
use crate::channels::ctx::{ChannelCtx, WeakChannelCtx};
use crate::netutil::{self, ConnLimit, CONTROL_IDLE, CONTROL_MAX_CONNECTIONS};
use crate::turn::{Failure, Refusal, Reply, Turn};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio_util::sync::CancellationToken;
use tracing::{debug, info, warn};

pub use crate::workspace::SOCKET_FILE;
const MAX_LINE: usize = 256 * 1024;

#[derive(Debug, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "lowercase")]
pub enum Request {
    Turn(Box<Turn>),
    /// A turn whose partials come as lines before its reply (`super::served`).
    #[serde(rename = "turn_streamed")]
    TurnStreamed(Box<Turn>),
    Status,
    Announce {
        channel: String,
        target: String,
        text: String,
    },
    Listen {
        chat_id: String,
    },
}

impl Request {
    /// A turn read here gets the terminal's facts: the socket is the owner's (its file
    /// mode admits only them), and no facts are taken from the wire.
    fn stamped(self) -> Self {
        match self {
            Request::Turn(mut t) => {
                t.facts = super::options::terminal_facts(&t.chat_id);
                Request::Turn(t)
            }
            Request::TurnStreamed(mut t) => {
                t.facts = super::options::terminal_facts(&t.chat_id);
                Request::TurnStreamed(t)
            }
            other => other,
        }
    }
}

pub fn socket_path(root: &Path) -> PathBuf {
    root.join(SOCKET_FILE)
}

/// Serve the control socket as a kernel service until the kernel cancels its services;
/// the socket file is removed on the way out. Its connections register with `terminals`.
#[cfg(unix)]
pub fn spawn_server(ctx: &ChannelCtx, terminals: Terminals) {
    let root = ctx.workspace_root().to_path_buf();
    let weak = ctx.downgrade();
    let cancel = ctx.cancel().clone();
    let conns = ctx.tasks().clone();
    ctx.tasks().spawn_in(crate::actor::Group::Service, async move {
        if let Err(e) = serve(&root, weak, terminals, conns, cancel).await {
            warn!(error = %e, "control socket unavailable; a CLI beside this process will be refused");
        }
        let _ = std::fs::remove_file(socket_path(&root));
    });
}

#[cfg(unix)]
async fn serve(
    root: &Path,
    weak: WeakChannelCtx,
    terminals: Terminals,
    conns: crate::actor::Tasks,
    cancel: CancellationToken,
) -> std::io::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    let path = socket_path(root);
    // We hold the workspace lock, so a socket file here is a stale one.
    let _ = std::fs::remove_file(&path);
    let listener = tokio::net::UnixListener::bind(&path)?;
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600))?;
    info!(socket = %path.display(), "control socket listening");
    // its own small cap, drawing on the descriptors kept in reserve (never on the
    // network budget), so a flood on a channel's port cannot lock the owner out
    let limit = ConnLimit::new("control", CONTROL_MAX_CONNECTIONS);
    netutil::accept_loop(
        "control",
        listener,
        limit,
        cancel.clone(),
        |stream, permit| {
            let weak = weak.clone();
            let terminals = terminals.clone();
            let cancel = cancel.clone();
            conns.spawn(async move {
                let _permit = permit;
                let id = match terminals.opened().await {
                    Ok(id) => id,
                    Err(e) => {
                        debug!(error = %e, "control connection refused");
                        return;
                    }
                };
                let conn = Conn {
                    id,
                    terminals: &terminals,
                    cancel: &cancel,
                };
                if let Err(e) = handle_conn(stream, weak, &conn).await {
                    debug!(error = %e, "control connection ended");
                }
                terminals.closed(id);
            });
        },
        drop,
    )
    .await;
    Ok(())
}

/// One control connection as the terminal actor knows it.
struct Conn<'a> {
    id: u64,
    terminals: &'a Terminals,
    cancel: &'a CancellationToken,
}

#[cfg(unix)]
async fn handle_conn(
    stream: tokio::net::UnixStream,
    ctx: WeakChannelCtx,
    conn: &Conn<'_>,
) -> std::io::Result<()> {
    let (r, mut w) = stream.into_split();
    let mut lines = BufReader::new(r);
    let mut buf = Vec::new();
    loop {
        buf.clear();
        let mut limited = (&mut lines).take(MAX_LINE as u64 + 1);
        let read = limited.read_until(b'\n', &mut buf);
        let n = match netutil::within(CONTROL_IDLE, read).await {
            Ok(n) => n?,
            Err(idle) => {
                debug!(error = %idle, "control connection idle; closed");
                return Ok(());
            }
        };
        if n == 0 {
            return Ok(());
        }
        // the reply, and the guard that keeps a graceful shutdown waiting until it is written
        let reply: (Reply, Option<TaskGuard>) = if buf.len() > MAX_LINE {
            let r = Reply::refused(
                "request too large",
                Refusal::BadRequest,
                format!("control request over {MAX_LINE} bytes"),
            );
            (r, None)
        } else {
            match serde_json::from_slice::<Request>(&buf).map(Request::stamped) {
                Err(e) => (
                    Reply::refused(
                        format!("bad control request: {e}"),
                        Refusal::BadRequest,
                        e.to_string(),
                    ),
                    None,
                ),
                Ok(req) => match ctx.upgrade() {
                    None => (
                        Reply::refused(
                            "homebot is shutting down",
                            Refusal::ShuttingDown,
                            "kernel stopped",
                        ),
                        None,
                    ),
                    Some(k) => {
                        let guard = k.tasks().guard(crate::actor::Group::Turn);
                        let streamed = matches!(req, Request::TurnStreamed(_));
                        let reply = match req {
                            Request::Turn(turn) | Request::TurnStreamed(turn) => {
                                match served::serve(&k, *turn, streamed, &mut lines, &mut w).await {
                                    Some(r) => r,
                                    // the client went away: its turn was cancelled and recorded
                                    None => return Ok(()),
                                }
                            }
                            Request::Listen { chat_id } => {
                                drop((guard, k));
                                return listen(conn, &chat_id, &mut lines, &mut w).await;
                            }
                            other => answer(&k, other).await,
                        };
                        (reply, Some(guard))
                    }
                },
            }
        };
        write_reply(&mut w, &reply.0).await?;
        drop(reply.1);
        if buf.len() > MAX_LINE {
            return Ok(()); // the rest of that line is unread; end the connection
        }
    }
}

/// Stream the proactive messages for `chat` to a listening connection until it hangs up
/// or the process stops.
#[cfg(unix)]
async fn listen<R, W>(conn: &Conn<'_>, chat: &str, r: &mut R, w: &mut W) -> std::io::Result<()>
where
    R: tokio::io::AsyncBufRead + Unpin,
    W: tokio::io::AsyncWrite + Unpin,
{
    let (tx, mut rx) = tokio::sync::mpsc::channel(LISTENER_QUEUE);
    let first = match conn.terminals.listen(conn.id, chat, tx).await {
        Ok(()) => Reply::ok(format!("listening for {chat}")),
        Err(e) => Reply::refused(e.to_string(), Refusal::BadRequest, e.to_string()),
    };
    let listening = first.is_answered();
    write_reply(w, &first).await?;
    if !listening {
        return Ok(());
    }
    loop {
        tokio::select! {
            msg = rx.recv() => match msg {
                // a listener that does not read is dropped, not waited for
                Some(text) => match netutil::within(CONTROL_IDLE, write_reply(w, &Reply::ok(text))).await {
                    Ok(written) => written?,
                    Err(_) => return Ok(()),
                },
                None => return Ok(()),
            },
            // a listening connection takes no more requests: anything it sends, or its
            // hanging up, ends it
            _ = hung_up(r) => return Ok(()),
            _ = conn.cancel.cancelled() => return Ok(()),
        }
    }
}

async fn write_reply<W: tokio::io::AsyncWrite + Unpin>(
    w: &mut W,
    r: &Reply,
) -> std::io::Result<()> {
    let mut out = serde_json::to_vec(r).expect("Reply always serializes");
    out.push(b'\n');
    w.write_all(&out).await
}

async fn answer(k: &ChannelCtx, req: Request) -> Reply {
    match req {
        Request::Listen { .. } => Reply::refused(
            "listen is served by the connection, not answered",
            Refusal::BadRequest,
            "listen",
        ),
        Request::Turn(turn) | Request::TurnStreamed(turn) => k.submit(*turn).reply().await,
        Request::Status => Reply::ok(k.status_text().await),
        Request::Announce {
            channel,
            target,
            text,
        } => match k.deliver(&channel, &target, &text).await {
            Ok(()) => Reply::ok(format!("delivered to {channel}:{target}")),
            Err(e) => Reply::failed(e.to_string(), Failure::Unavailable, e.to_string()),
        },
    }
}

/// A connection to the process that owns a workspace.
#[cfg(unix)]
pub struct Client {
    root: PathBuf,
    reader: BufReader<tokio::net::unix::OwnedReadHalf>,
    writer: tokio::net::unix::OwnedWriteHalf,
}

#[cfg(unix)]
impl Client {
    pub async fn connect(root: &Path) -> std::io::Result<Self> {
        let s = tokio::net::UnixStream::connect(socket_path(root)).await?;
        let (r, w) = s.into_split();
        Ok(Self {
            root: root.to_path_buf(),
            reader: BufReader::new(r),
            writer: w,
        })
    }

    /// Whether the gateway closed this connection (it closes idle ones): between
    /// requests nothing is owed, so anything readable now is the end of the stream.
    fn closed_by_peer(&mut self) -> bool {
        if !self.reader.buffer().is_empty() {
            return true;
        }
        let mut probe = [0u8; 1];
        !matches!(
            self.reader.get_ref().as_ref().try_read(&mut probe),
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock
        )
    }

    pub async fn request(&mut self, req: &Request) -> std::io::Result<Reply> {
        self.request_with(req, |_| {}).await
    }

    /// [`Client::request`], the partials before the reply (a streamed turn's) handed to `on`.
    async fn request_with(
        &mut self,
        req: &Request,
        on: impl FnMut(crate::turn::Partial),
    ) -> std::io::Result<Reply> {
        if self.closed_by_peer() {
            *self = Self::connect(&self.root).await?;
        }
        let mut line = serde_json::to_vec(req).expect("Request always serializes");
        line.push(b'\n');
        self.writer.write_all(&line).await?;
        served::read_reply(&mut self.reader, on).await
    }

    pub async fn turn(&mut self, turn: &Turn) -> std::io::Result<Reply> {
        self.request(&Request::Turn(Box::new(turn.clone()))).await
    }

    /// A turn whose partials (when the gateway's provider streams) go to `on` as they come.
    pub async fn turn_streamed(
        &mut self,
        turn: &Turn,
        on: impl FnMut(crate::turn::Partial),
    ) -> std::io::Result<Reply> {
        let req = Request::TurnStreamed(Box::new(turn.clone()));
        self.request_with(&req, on).await
    }
}

/// A connection that receives the proactive messages for one CLI chat.
#[cfg(unix)]
pub struct Listener {
    reader: BufReader<tokio::net::unix::OwnedReadHalf>,
    // held open: the gateway ends the stream when this side hangs up
    _writer: tokio::net::unix::OwnedWriteHalf,
}

#[cfg(unix)]
impl Listener {
    pub async fn open(root: &Path, chat_id: &str) -> std::io::Result<Self> {
        let mut c = Client::connect(root).await?;
        let first = c
            .request(&Request::Listen {
                chat_id: chat_id.into(),
            })
            .await?;
        if let Some(why) = first.problem() {
            return Err(std::io::Error::other(why));
        }
        Ok(Self {
            reader: c.reader,
            _writer: c.writer,
        })
    }

    /// The next message, or `None` when the gateway ended the stream.
    pub async fn next(&mut self) -> std::io::Result<Option<String>> {
        let mut line = String::new();
        if self.reader.read_line(&mut line).await? == 0 {
            return Ok(None);
        }
        let r: Reply = serde_json::from_str(&line)
            .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidData, e))?;
        Ok(Some(r.text))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::turn::{Audience, Trust};

    #[test]
    fn a_turn_request_is_the_turn_itself() {
        let mut t = crate::channels::cli::turn("local", "mom", "你好");
        t.may_switch_modes = false;
        let line = serde_json::to_string(&Request::Turn(Box::new(t))).unwrap();
        assert!(
            line.starts_with(r#"{"op":"turn","channel":"cli""#),
            "{line}"
        );
        let back: Request = serde_json::from_str(&line).unwrap();
        match &back {
            Request::Turn(t) => {
                assert!(!t.may_switch_modes && t.text == "你好");
                assert_eq!(t.facts().trust, Trust::Guest, "no facts from the wire");
            }
            other => panic!("{other:?}"),
        }
        match back.stamped() {
            Request::Turn(t) => assert_eq!(
                (t.facts().audience, t.facts().trust),
                (Audience::Terminal, Trust::Owner),
                "the socket stamps the terminal's own"
            ),
            other => panic!("{other:?}"),
        }
        // the wire form older clients send still parses
        let old =
            r#"{"op":"turn","channel":"cli","chat_id":"local","speaker_id":"mom","text":"x"}"#;
        assert!(
            matches!(serde_json::from_str::<Request>(old).unwrap(), Request::Turn(t) if t.may_switch_modes)
        );
    }
}

//! One owner per workspace, and a door for everyone else.
//!
//! The process that runs the kernel holds an exclusive lock on `<workspace>/homebot.lock`
//! (so there is never a second writer of `action.json` or the session files) and serves
//! a Unix socket, `<workspace>/control.sock` (mode 0600), speaking one JSON object per
//! line:
//!
//! ```text
//! → {"op":"turn","channel":"cli","chat_id":"local","speaker_id":"mom","text":"…"}
//! ← {"text":"…","error":null}
//! → {"op":"status"}
//! ← {"text":"…","error":null}
//! → {"op":"announce","channel":"voice","target":"kitchen","text":"水开了"}
//! ← {"text":"delivered to voice:kitchen","error":null}
//! ```
//!
//! A `homebot chat -m` started beside a running gateway finds the lock taken and sends
//! its turn through the socket instead; the gateway runs it like any other turn.

use crate::kernel::Kernel;
use crate::turn::{Reply, Turn};
use serde::{Deserialize, Serialize};
use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Weak;
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tracing::{debug, info, warn};

pub const LOCK_FILE: &str = "homebot.lock";
pub const SOCKET_FILE: &str = "control.sock";
const MAX_LINE: usize = 256 * 1024;

/// The exclusive lock on a workspace; released when dropped (or when the process dies).
#[derive(Debug)]
pub struct WorkspaceLock {
    _file: File,
}

#[derive(Debug, thiserror::Error)]
pub enum LockError {
    #[error("workspace {path} is in use by another homebot process{}", pid.map(|p| format!(" (pid {p})")).unwrap_or_default())]
    Held { path: PathBuf, pid: Option<u32> },
    #[error("cannot lock {path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
}

impl WorkspaceLock {
    /// Take the lock, waiting up to `wait` for a previous owner that is shutting down.
    pub fn acquire(root: &Path, wait: Duration) -> Result<Self, LockError> {
        let path = root.join(LOCK_FILE);
        let io = |source| LockError::Io {
            path: path.clone(),
            source,
        };
        let file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&path)
            .map_err(io)?;
        let deadline = std::time::Instant::now() + wait;
        loop {
            match file.try_lock() {
                Ok(()) => break,
                Err(std::fs::TryLockError::WouldBlock) => {
                    if std::time::Instant::now() >= deadline {
                        let pid = std::fs::read_to_string(&path)
                            .ok()
                            .and_then(|s| s.trim().parse().ok());
                        return Err(LockError::Held { path, pid });
                    }
                    std::thread::sleep(Duration::from_millis(25));
                }
                Err(std::fs::TryLockError::Error(e)) => return Err(io(e)),
            }
        }
        let mut f = &file;
        file.set_len(0).map_err(io)?;
        write!(f, "{}", std::process::id()).map_err(io)?;
        Ok(Self { _file: file })
    }
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "lowercase")]
pub enum Request {
    Turn {
        channel: String,
        chat_id: String,
        speaker_id: String,
        text: String,
    },
    Status,
    Announce {
        channel: String,
        target: String,
        text: String,
    },
}

pub fn socket_path(root: &Path) -> PathBuf {
    root.join(SOCKET_FILE)
}

/// Serve the control socket in the background until the kernel stops.
#[cfg(unix)]
pub fn spawn_server(kernel: &Kernel) -> tokio::task::JoinHandle<()> {
    let root = kernel.workspace().root().to_path_buf();
    let weak = kernel.downgrade();
    let stop = kernel.stopping();
    tokio::spawn(async move {
        if let Err(e) = serve(root, weak, stop).await {
            warn!(error = %e, "control socket unavailable; a CLI beside this process will be refused");
        }
    })
}

#[cfg(unix)]
async fn serve(
    root: PathBuf,
    weak: Weak<crate::kernel::KernelInner>,
    mut stop: tokio::sync::watch::Receiver<bool>,
) -> std::io::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    let path = socket_path(&root);
    // We hold the workspace lock, so a socket file here is a stale one.
    let _ = std::fs::remove_file(&path);
    let listener = tokio::net::UnixListener::bind(&path)?;
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600))?;
    info!(socket = %path.display(), "control socket listening");
    loop {
        tokio::select! {
            _ = stop.changed() => break,
            accepted = listener.accept() => {
                let (stream, _) = match accepted {
                    Ok(s) => s,
                    Err(e) => { warn!(error = %e, "control socket accept failed"); continue; }
                };
                let weak = weak.clone();
                tokio::spawn(async move {
                    if let Err(e) = handle_conn(stream, weak).await {
                        debug!(error = %e, "control connection ended");
                    }
                });
            }
        }
    }
    let _ = std::fs::remove_file(&path);
    Ok(())
}

#[cfg(unix)]
async fn handle_conn(
    stream: tokio::net::UnixStream,
    kernel: Weak<crate::kernel::KernelInner>,
) -> std::io::Result<()> {
    let (r, mut w) = stream.into_split();
    let mut lines = BufReader::new(r);
    let mut buf = Vec::new();
    loop {
        buf.clear();
        let n = (&mut lines)
            .take(MAX_LINE as u64 + 1)
            .read_until(b'\n', &mut buf)
            .await?;
        if n == 0 {
            return Ok(());
        }
        let reply = if buf.len() > MAX_LINE {
            Reply::failed(
                "request too large",
                format!("control request over {MAX_LINE} bytes"),
            )
        } else {
            match serde_json::from_slice::<Request>(&buf) {
                Err(e) => Reply::failed(format!("bad control request: {e}"), e.to_string()),
                Ok(req) => match Kernel::upgrade(&kernel) {
                    None => Reply::failed("homebot is shutting down", "kernel stopped"),
                    Some(k) => match req {
                        Request::Turn {
                            channel,
                            chat_id,
                            speaker_id,
                            text,
                        } => {
                            k.submit(Turn::new(channel, chat_id, speaker_id, text))
                                .reply()
                                .await
                        }
                        Request::Status => Reply::ok(k.status_text().await),
                        Request::Announce {
                            channel,
                            target,
                            text,
                        } => match k.announce(&channel, &target, &text).await {
                            Ok(()) => Reply::ok(format!("delivered to {channel}:{target}")),
                            Err(e) => Reply::failed(e.clone(), e),
                        },
                    },
                },
            }
        };
        let mut out = serde_json::to_vec(&reply).expect("Reply always serializes");
        out.push(b'\n');
        w.write_all(&out).await?;
        if buf.len() > MAX_LINE {
            return Ok(()); // the rest of that line is unread; end the connection
        }
    }
}

use tokio::io::AsyncReadExt as _;

/// A connection to the process that owns a workspace.
#[cfg(unix)]
pub struct Client {
    reader: BufReader<tokio::net::unix::OwnedReadHalf>,
    writer: tokio::net::unix::OwnedWriteHalf,
}

#[cfg(unix)]
impl Client {
    pub async fn connect(root: &Path) -> std::io::Result<Self> {
        let s = tokio::net::UnixStream::connect(socket_path(root)).await?;
        let (r, w) = s.into_split();
        Ok(Self {
            reader: BufReader::new(r),
            writer: w,
        })
    }

    pub async fn request(&mut self, req: &Request) -> std::io::Result<Reply> {
        let mut line = serde_json::to_vec(req).expect("Request always serializes");
        line.push(b'\n');
        self.writer.write_all(&line).await?;
        let mut resp = String::new();
        if self.reader.read_line(&mut resp).await? == 0 {
            return Err(std::io::Error::new(
                std::io::ErrorKind::UnexpectedEof,
                "the gateway closed the control connection",
            ));
        }
        serde_json::from_str(&resp)
            .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidData, e))
    }

    pub async fn turn(&mut self, turn: &Turn) -> std::io::Result<Reply> {
        self.request(&Request::Turn {
            channel: turn.channel.clone(),
            chat_id: turn.chat_id.clone(),
            speaker_id: turn.speaker_id.clone(),
            text: turn.text.clone(),
        })
        .await
    }
}

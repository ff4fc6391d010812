//! One connection, as both transports (`server`, `forward`) run it: its place in the
//! account ([`Slot`], reserved with the actor), and the read loop — message events and
//! action responses go to the actor in the order read, each taken before the next frame
//! is read (a flood waits instead of piling up in the mailbox); lifecycle and heartbeat events
//! keep the connection's health; a connection silent past the heartbeat timeout is
//! closed.

use super::actor::{Activate, Inbound, NotReserved, Release, Reserve, Resolve};
use super::conns::Role;
use super::events::{self, Event, Frame, MetaEvent};
use super::handle::Qq;
use futures_util::StreamExt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;
use tokio::sync::mpsc;
use tracing::{debug, info, warn};

/// Frames waiting for one connection's writer.
pub(super) const WRITER_QUEUE: usize = 64;

/// A connection's place in its account (see [`Qq::reserve`]); released when dropped.
pub(super) struct Slot {
    qq: Qq,
    pub(super) self_id: String,
    conn: u64,
}

impl Slot {
    /// The connection is up: actions may use its writer.
    pub(super) async fn activate(&self, tx: mpsc::Sender<String>) {
        let _ = self
            .qq
            .addr
            .send(Activate {
                self_id: self.self_id.clone(),
                conn: self.conn,
                tx,
            })
            .await;
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        // ahead of anything sent to the actor after this (a reconnect's reservation)
        self.qq.addr.do_send(Release {
            self_id: std::mem::take(&mut self.self_id),
            conn: self.conn,
        });
    }
}

impl Qq {
    /// Reserve the account's place for a connection in `role`, atomically with the
    /// duplicate check: two handshakes of one account cannot both pass. The slot is
    /// released when dropped — by a handshake that never completes as much as by a
    /// connection that ends.
    ///
    /// The slot exists before the actor is asked: a handshake dropped while it waits for
    /// the answer (the peer reset it) still releases what the actor reserved.
    pub(super) async fn reserve(&self, self_id: &str, role: Role) -> Result<Slot, NotReserved> {
        static NEXT_CONN: AtomicU64 = AtomicU64::new(1);
        let slot = Slot {
            qq: self.clone(),
            self_id: self_id.to_string(),
            conn: NEXT_CONN.fetch_add(1, Ordering::Relaxed),
        };
        self.addr
            .send(Reserve {
                self_id: self_id.to_string(),
                role,
                conn: slot.conn,
            })
            .await
            .map_err(|_| NotReserved::Stopped)??;
        Ok(slot)
    }

    /// Read frames until the peer goes away or stays silent past the heartbeat timeout;
    /// then release the slot.
    pub(super) async fn run_conn<S>(&self, slot: Slot, role: Role, mut incoming: S)
    where
        S: futures_util::Stream<Item = Result<String, Ended>> + Unpin,
    {
        let self_id = slot.self_id.clone();
        let mut timeout = Duration::from_secs(self.cfg.heartbeat_timeout_secs);
        loop {
            let frame = match tokio::time::timeout(timeout, incoming.next()).await {
                Err(_) => {
                    warn!(self_id = %self_id, secs = timeout.as_secs(), "qq connection silent past the heartbeat timeout; closing it");
                    break;
                }
                Ok(None) => break,
                Ok(Some(Err(e))) => {
                    debug!(self_id = %self_id, error = %e, "qq connection error");
                    break;
                }
                Ok(Some(Ok(text))) => text,
            };
            match events::parse_frame(&frame) {
                Err(e) => warn!(self_id = %self_id, error = %e, "qq: malformed frame ignored"),
                Ok(Frame::Event(ev)) => {
                    if let Some(iv) = self.on_event(&self_id, ev).await {
                        // heartbeat interval known: allow three missed beats
                        timeout = (iv * 3)
                            .max(Duration::from_secs(self.cfg.heartbeat_timeout_secs.min(15)));
                    }
                }
                // awaited: a peer's flood waits for the actor instead of piling up
                Ok(Frame::Response(r)) => {
                    let _ = self.addr.send(Resolve(r)).await;
                }
                Ok(Frame::Unknown) => {
                    debug!(self_id = %self_id, role = ?role, "qq: frame of unknown kind ignored")
                }
            }
        }
        drop(slot);
        info!(self_id = %self_id, role = ?role, "qq connection closed");
    }

    /// Handle one event; returns the heartbeat interval when the event announces one.
    async fn on_event(&self, self_id: &str, ev: Event) -> Option<Duration> {
        match ev {
            Event::MetaEvent(MetaEvent::Lifecycle { sub_type }) => {
                info!(self_id, sub_type = ?sub_type, "qq lifecycle");
            }
            Event::MetaEvent(MetaEvent::Heartbeat { interval }) => {
                return interval.filter(|&ms| ms > 0).map(Duration::from_millis);
            }
            Event::Message(event) => {
                let inbound = Inbound {
                    self_id: self_id.to_string(),
                    event,
                };
                let _ = self.addr.send(inbound).await;
            }
            // our own messages, notices and requests are not turns
            Event::MessageSent
            | Event::MetaEvent(MetaEvent::Other)
            | Event::Notice
            | Event::Request
            | Event::Other => {}
        }
        None
    }
}

/// Why a connection's stream of frames ended.
#[derive(Debug, thiserror::Error)]
pub(super) enum Ended {
    #[error("closed")]
    Closed,
    #[error(transparent)]
    Transport(Box<dyn std::error::Error + Send + Sync>),
}

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
//! (the shared layering test, `tests/it/imports/layering.rs`, checks it, and that no file
//! imports from this façade):
//! - `id`: string-or-number OneBot ids; `message`: message segments and CQ codes (in,
//!   and out as typed segments); `action`: the actions homebot sends, typed, and what a
//!   send answers;
//!   `target`: where a message goes (a group, a person) and the door's target syntax;
//! - `events`: typed OneBot frames; `marker`: a message's own scene policy (`#不记`,
//!   `#记`) and a group's; `inbound`: a message event into a turn;
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
//! - `channel`: [`QqChannel`] (the config, implementing the channel contract) and the
//!   start.

mod action;
mod actor;
mod channel;
mod conn;
mod conns;
mod delivery;
mod events;
mod forward;
mod handle;
pub mod id;
mod inbound;
pub mod marker;
pub mod message;
mod outbox;
mod rpc;
mod server;
mod target;

pub use channel::QqChannel;
pub use handle::Qq;
pub use inbound::{facts, turn, CHANNEL};
pub use rpc::ActionError;

//! A terminal's turn as the control socket serves it: cancelled when the client hangs up
//! (Ctrl-C in `homebot chat`), and streamed when asked (`provider.stream = true`): the
//! answer's partials — whole sentences, or a spec's lines as the model writes it — reach
//! the terminal before the reply, whichever door the turn took. Its own kernel hands them
//! over directly ([`sink`]); through the control socket a `turn_streamed` request gets
//! them as lines before its reply line:
//!
//! ```text
//! → {"op":"turn_streamed","channel":"cli","chat_id":"local","speaker_id":"mom","text":"…"}
//! ← {"partial":"需求规格：一桌年夜饭\n"}
//! ← {"aside":true}
//! ← {"text":"…","outcome":{"kind":"answered"}}
//! ```
//!
//! Bounded as every turn's partials are (the reply cap, one text per 20 characters of
//! it); a gateway whose provider does not stream sends the reply line only. A client that
//! hangs up, or stops reading for `CONTROL_IDLE`, has its turn cancelled.

use crate::channels::ctx::ChannelCtx;
use crate::netutil::{self, CONTROL_IDLE};
use crate::turn::{Partial, Partials, Reply, Turn};
use tokio::io::{AsyncBufRead, AsyncBufReadExt, AsyncWrite, AsyncWriteExt};
use tokio::sync::mpsc::UnboundedReceiver;
use tokio_util::sync::CancellationToken;

/// A partial-text sink for a turn whose reply is at most `max_reply_chars` long, with
/// room for the mark a cut reply ends with (what was shown stays its beginning).
pub(super) fn sink(max_reply_chars: usize) -> (Partials, UnboundedReceiver<Partial>) {
    Partials::new(max_reply_chars.saturating_sub(crate::agent::TRUNCATION_MARK.chars().count()))
}

/// A partial's line on the control socket: `{"partial": "…"}` or `{"aside": true}`.
#[derive(serde::Serialize, serde::Deserialize)]
#[serde(untagged)]
enum PartialLine {
    Text { partial: String },
    Aside { aside: bool },
}

/// One partial as its line.
fn line(p: &Partial) -> Vec<u8> {
    let v = match p {
        Partial::Text(t) => PartialLine::Text { partial: t.clone() },
        Partial::Aside => PartialLine::Aside { aside: true },
    };
    let mut out = serde_json::to_vec(&v).expect("a partial's line always encodes");
    out.push(b'\n');
    out
}

/// Run a turn for a control client, its partials written as they come when `streamed`
/// (a `turn_streamed` request) and the provider streams. If the client hangs up
/// meanwhile, cancel the turn — it is recorded as cancelled — and return `None`.
pub(super) async fn serve<R, W>(
    k: &ChannelCtx,
    mut turn: Turn,
    streamed: bool,
    r: &mut R,
    w: &mut W,
) -> Option<Reply>
where
    R: AsyncBufRead + Unpin,
    W: AsyncWrite + Unpin,
{
    let mut rx = (streamed && k.streams()).then(|| {
        let (p, rx) = sink(k.config().agent.max_reply_chars);
        turn.partials = Some(p);
        rx
    });
    let cancel = CancellationToken::new();
    let reply = k.submit_cancellable(turn, cancel.clone()).reply();
    tokio::pin!(reply);
    let mut watching = true;
    let gone = loop {
        tokio::select! {
            biased;
            done = &mut reply => {
                // everything the turn sent came before its reply
                while let Some(p) = rx.as_mut().and_then(|rx| rx.try_recv().ok()) {
                    if !write(w, &p).await {
                        return None; // the turn is over; nobody reads its reply
                    }
                }
                return Some(done);
            }
            Some(p) = async { rx.as_mut()?.recv().await } => {
                if !write(w, &p).await {
                    break true;
                }
            }
            gone = hung_up(r), if watching => {
                if gone {
                    break true;
                }
                watching = false; // a pipelined request: it waits in the buffer
            }
        }
    };
    if gone {
        cancel.cancel();
        reply.await;
    }
    None
}

/// Resolves when the peer sent something (`false`) or closed the connection (`true`).
pub(super) async fn hung_up<R: AsyncBufRead + Unpin>(r: &mut R) -> bool {
    match r.fill_buf().await {
        Ok(b) => b.is_empty(),
        Err(_) => true,
    }
}

/// Write one partial's line; false when the client cannot take it.
async fn write<W: AsyncWrite + Unpin>(w: &mut W, p: &Partial) -> bool {
    matches!(
        netutil::within(CONTROL_IDLE, w.write_all(&line(p))).await,
        Ok(Ok(()))
    )
}

/// Read a reply, handing the partial lines before it to `on`.
pub(super) async fn read_reply<R: AsyncBufRead + Unpin>(
    r: &mut R,
    mut on: impl FnMut(Partial),
) -> std::io::Result<Reply> {
    let bad = |e: serde_json::Error| std::io::Error::new(std::io::ErrorKind::InvalidData, e);
    loop {
        let mut resp = String::new();
        if r.read_line(&mut resp).await? == 0 {
            return Err(std::io::Error::new(
                std::io::ErrorKind::UnexpectedEof,
                "the gateway closed the control connection",
            ));
        }
        match serde_json::from_str::<PartialLine>(&resp) {
            Ok(PartialLine::Text { partial }) => on(Partial::Text(partial)),
            Ok(PartialLine::Aside { .. }) => on(Partial::Aside),
            Err(_) => return serde_json::from_str(&resp).map_err(bad),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn partial_lines_come_before_the_reply_line() {
        let mut wire = Vec::new();
        for p in [Partial::Text("先打蛋。\n".into()), Partial::Aside] {
            wire.extend(line(&p));
        }
        wire.extend(serde_json::to_vec(&Reply::ok("好了")).unwrap());
        wire.push(b'\n');
        let mut got = Vec::new();
        let reply = read_reply(&mut wire.as_slice(), |p| got.push(p))
            .await
            .unwrap();
        assert_eq!(got, [Partial::Text("先打蛋。\n".into()), Partial::Aside]);
        assert_eq!(reply.text, "好了");
        // a reply alone (a gateway whose provider does not stream) reads as before
        let mut alone = serde_json::to_vec(&Reply::ok("好")).unwrap();
        alone.push(b'\n');
        let reply = read_reply(&mut alone.as_slice(), |_| panic!("no partial"))
            .await
            .unwrap();
        assert_eq!(reply.text, "好");
    }
}

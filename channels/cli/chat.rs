//! A chat at the terminal: one-shot (`chat -m`) or interactive, with a line history, and
//! proactive messages for the chat printed meanwhile.

use super::actor::Terminals;
use super::control;
use super::door::{Door, Typed};
use super::interrupts::Interrupts;
use super::options::CliOptions;
use super::shown::Shown;
use crate::turn::Reply;
use rustyline::error::ReadlineError;

/// One turn typed at the terminal (`chat -m`), its answer printed: as the model writes
/// it when the provider streams, then what of the reply is left (see [`Shown`]).
pub async fn one_shot(
    door: &Door,
    opts: &CliOptions,
    text: &str,
    ctrl_c: &mut Interrupts,
) -> Typed {
    typed(door, opts, text, ctrl_c, "", "\n").await
}

/// One typed turn, its answer printed after `prefix` and ended with `end`.
async fn typed(
    door: &Door,
    opts: &CliOptions,
    text: &str,
    ctrl_c: &mut Interrupts,
    prefix: &'static str,
    end: &str,
) -> Typed {
    let mut shown = Shown::new(std::io::stdout(), prefix);
    let typed = door.typed_turn(opts.turn(text), ctrl_c, &mut shown).await;
    if let Typed::Replied(reply) = &typed {
        shown.reply(&reply.text, end);
    }
    typed
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
        match typed(door, opts, &line, &mut ctrl_c, "homebot> ", "\n\n").await {
            Typed::Replied(_) => {}
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

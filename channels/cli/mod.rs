//! The CLI channel: a terminal on the home server. One-shot (`chat -m`) prints the reply
//! and returns; interactive chat keeps a line history (`<workspace>/logs/cli_history`)
//! and ends on Ctrl-D, Ctrl-C or `/quit`. Turns carry `channel = "cli"`.

use crate::kernel::Kernel;
use crate::turn::{Reply, Turn};
use rustyline::error::ReadlineError;

pub const CHANNEL: &str = "cli";

#[derive(Debug, Clone)]
pub struct CliOptions {
    pub speaker: String,
    pub chat_id: String,
}

impl Default for CliOptions {
    fn default() -> Self {
        Self {
            speaker: "owner".into(),
            chat_id: "local".into(),
        }
    }
}

pub async fn one_shot(kernel: &Kernel, opts: &CliOptions, text: &str) -> Reply {
    kernel
        .handle_turn(Turn::new(CHANNEL, &opts.chat_id, &opts.speaker, text))
        .await
}

/// Interactive chat until Ctrl-D / Ctrl-C / `/quit`.
pub async fn interactive(kernel: &Kernel, opts: &CliOptions) -> anyhow::Result<()> {
    let history = kernel.workspace().root().join("logs").join("cli_history");
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
    println!(
        "homebot · {} · 说话人 {} · 输入 /help 查看命令，Ctrl-D 退出",
        kernel.config().household.name,
        opts.speaker
    );
    while let Some(line) = line_rx.recv().await {
        let reply = one_shot(kernel, opts, &line).await;
        println!("homebot> {}\n", reply.text);
        if ack_tx.send(()).is_err() {
            break;
        }
    }
    drop(ack_tx);
    reader
        .join()
        .map_err(|_| anyhow::anyhow!("the line reader panicked"))?
}

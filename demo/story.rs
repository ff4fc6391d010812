//! The demo's cooking session, across QQ, the kitchen speaker and the terminal:
//!
//! 1. QQ group — 妈妈: 开始做饭模式，今天做红烧肉 → the model enters cooking mode
//! 2. kitchen speaker (Wyoming, as Home Assistant relays it) — 妈妈: 盐放多少 → answered
//!    inside the same mode session
//! 3. terminal — /status shows the mode; 爸爸 asks how long it takes
//! 4. kitchen satellite (its WebSocket) — 妈妈: 十秒后提醒我关火 → a reminder, which
//!    rings on the satellite when it is due
//! 5. QQ group — 妈妈: 红烧肉做好了，退出做饭模式 → the mode exits, its summary written
//!
//! Each step prints who said what where, what homebot answered and what it delivered.
//! With the scripted model every outcome is known, so a step that does not happen is an
//! error; with a real model it is reported and the story goes on.

use super::peers::{wyoming_transcript, OneBot, Satellite};
use super::{failure, read, GROUP, HA_SPEAKER, MOM_QQ, SATELLITE_SPEAKER};
use crate::channels::cli::CliOptions;
use crate::kernel::Kernel;
use crate::reminders::{ReminderBook, State};
use serde_json::Value;
use std::path::PathBuf;
use std::time::Duration;

pub struct Stage {
    pub kernel: Kernel,
    pub qq: OneBot,
    pub satellite: Satellite,
    /// The Wyoming handle service's address.
    pub wyoming: String,
    /// The scripted model: a step that does not happen is an error.
    pub strict: bool,
    pub timer_secs: u64,
    /// How long one answer may take.
    pub wait: Duration,
}

const STEPS: usize = 5;

fn heading(n: usize, where_: &str) {
    println!("\n[{n}/{STEPS}] {where_}");
}

fn said(who: &str, words: &str) {
    println!("    {who}: {words}");
}

fn answered(text: &str) {
    let mut lines = text.trim_end().lines();
    println!("    homebot: {}", lines.next().unwrap_or(""));
    for l in lines {
        println!("             {l}");
    }
}

fn note(text: &str) {
    println!("    · {text}");
}

/// "十", "三": the timer's length as the speaker says it (digits above ten).
fn spoken(n: u64) -> String {
    const DIGITS: [&str; 11] = [
        "零", "一", "两", "三", "四", "五", "六", "七", "八", "九", "十",
    ];
    DIGITS
        .get(n as usize)
        .map_or_else(|| n.to_string(), |d| d.to_string())
}

/// Poll `cond` every 20 ms until it gives a value or `within` passes.
async fn poll<T>(within: Duration, mut cond: impl FnMut() -> Option<T>) -> Option<T> {
    let deadline = tokio::time::Instant::now() + within;
    loop {
        if let Some(v) = cond() {
            return Some(v);
        }
        if tokio::time::Instant::now() >= deadline {
            return None;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

impl Stage {
    pub async fn play(&mut self) -> anyhow::Result<()> {
        let session_dir = self.enter_on_qq().await?;
        self.ask_the_kitchen_speaker().await?;
        self.terminal().await?;
        self.kitchen_timer().await?;
        self.exit_on_qq(session_dir).await?;
        Ok(())
    }

    /// A step that did not happen: an error with the scripted model, a note with a real one.
    fn expect(&self, ok: bool, what: &str) -> anyhow::Result<()> {
        match (ok, self.strict) {
            (true, _) => Ok(()),
            (false, true) => anyhow::bail!("demo step failed: {what}"),
            (false, false) => {
                note(&format!("(the model did not do this: {what})"));
                Ok(())
            }
        }
    }

    fn action(&self) -> Value {
        read(&self.kernel.workspace().action_file())
            .and_then(|t| serde_json::from_str(&t).ok())
            .unwrap_or(Value::Null)
    }

    async fn qq_turn(&mut self, words: &str) -> anyhow::Result<String> {
        said("妈妈 (QQ)", &format!("@homebot {words}"));
        self.qq
            .group_message(GROUP, MOM_QQ, "妈妈", words)
            .await
            .map_err(|e| anyhow::anyhow!("QQ: {e}"))?;
        let reply =
            self.qq.next_sent(self.wait).await.ok_or_else(|| {
                anyhow::anyhow!("QQ: no message from homebot within {:?}", self.wait)
            })?;
        // the text after the reply's @-mention segment
        let reply = reply.trim().to_string();
        answered(&reply);
        Ok(reply)
    }

    async fn enter_on_qq(&mut self) -> anyhow::Result<Option<PathBuf>> {
        heading(1, &format!("QQ group {GROUP} (OneBot v11 simulator)"));
        self.qq_turn("开始做饭模式，今天做红烧肉").await?;
        let a = self.action();
        let active = a["active"] == true;
        self.expect(active, "enter cooking mode")?;
        if active {
            note(&format!(
                "mode: {} ({}) · session {}",
                a["display_name"].as_str().unwrap_or("?"),
                a["mode_id"].as_str().unwrap_or("?"),
                a["session_id"].as_str().unwrap_or("?")
            ));
        }
        Ok(a["session_dir"].as_str().map(PathBuf::from))
    }

    async fn ask_the_kitchen_speaker(&mut self) -> anyhow::Result<()> {
        heading(
            2,
            "kitchen speaker (Wyoming handle service, as Home Assistant calls it)",
        );
        let words = "盐放多少";
        said("妈妈 (voice)", words);
        let (kind, text) = wyoming_transcript(
            &self.wyoming,
            words,
            "ha-conversation-1",
            HA_SPEAKER,
            self.wait,
        )
        .await
        .map_err(|e| anyhow::anyhow!("Wyoming: {e}"))?;
        answered(&text);
        self.expect(kind == "handled", "answer the Wyoming transcript")?;
        let a = self.action();
        note(&format!(
            "still in {} · session {}",
            a["display_name"].as_str().unwrap_or("no mode"),
            a["session_id"].as_str().unwrap_or("—")
        ));
        Ok(())
    }

    async fn cli_turn(&self, speaker: &str, who: &str, words: &str) -> anyhow::Result<String> {
        said(who, words);
        let opts = CliOptions {
            speaker: speaker.into(),
            chat_id: "local".into(),
            scenes: Vec::new(),
            scene_policy: None,
        };
        let reply = self.kernel.submit(opts.turn(words)).reply().await;
        answered(&reply.text);
        if let Some(e) = failure(&reply) {
            self.expect(false, &format!("answer in the terminal ({e})"))?;
        }
        Ok(reply.text)
    }

    async fn terminal(&mut self) -> anyhow::Result<()> {
        heading(3, "terminal (a CLI turn through the kernel)");
        let status = self.cli_turn("dad", "爸爸 (terminal)", "/status").await?;
        self.expect(
            status.contains("(cooking) 活动中"),
            "/status shows cooking mode",
        )?;
        self.cli_turn("dad", "爸爸 (terminal)", "红烧肉还要炖多久？")
            .await?;
        Ok(())
    }

    fn reminders(&self) -> ReminderBook {
        read(&self.kernel.workspace().reminders_file())
            .and_then(|t| serde_json::from_str(&t).ok())
            .unwrap_or_default()
    }

    async fn kitchen_timer(&mut self) -> anyhow::Result<()> {
        heading(4, "kitchen satellite (voice WebSocket)");
        let words = format!("{}秒后提醒我关火", spoken(self.timer_secs));
        said("妈妈 (voice)", &words);
        self.satellite
            .say(&words, SATELLITE_SPEAKER, "kitchen-wake-2")
            .await
            .map_err(|e| anyhow::anyhow!("satellite: {e}"))?;
        let reply = self
            .satellite
            .next_of(&["reply", "error"], self.wait)
            .await
            .ok_or_else(|| anyhow::anyhow!("satellite: no reply within {:?}", self.wait))?;
        answered(reply["text"].as_str().unwrap_or(""));
        let set: Vec<(u32, String)> = self
            .reminders()
            .all()
            .filter(|r| r.is_pending())
            .map(|r| (r.id, r.due_at.format("%H:%M:%S").to_string()))
            .collect();
        self.expect(!set.is_empty(), "set a reminder")?;
        let Some((id, due)) = set.into_iter().next() else {
            return Ok(());
        };
        note(&format!(
            "reminder #{id} rings at {due}; waiting for it on the satellite…"
        ));
        let ring_wait = Duration::from_secs(self.timer_secs) + self.wait;
        let rang = self.satellite.next_of(&["announce"], ring_wait).await;
        match &rang {
            Some(a) => println!(
                "    ⏰ kitchen satellite rang: {}",
                a["text"].as_str().unwrap_or("")
            ),
            None => note("the satellite heard nothing"),
        }
        self.expect(rang.is_some(), "ring the timer on the satellite")?;
        // the Cron actor marks it fired once the door said it was delivered
        let fired = poll(self.wait, || {
            self.reminders().get(id).and_then(|r| match &r.state {
                State::Fired { at, .. } => Some(at.clone()),
                _ => None,
            })
        })
        .await;
        if let Some(at) = &fired {
            note(&format!("reminders.json: #{id} fired at {at}"));
        }
        self.expect(fired.is_some(), "record the reminder as delivered")
    }

    async fn exit_on_qq(&mut self, session_dir: Option<PathBuf>) -> anyhow::Result<()> {
        heading(5, &format!("QQ group {GROUP}"));
        self.qq_turn("红烧肉做好了，退出做饭模式").await?;
        let summary = match &session_dir {
            Some(dir) => {
                let file = dir.join(crate::modes::session::SUMMARY_FILE);
                poll(self.wait, || read(&file).map(|t| (file.clone(), t))).await
            }
            None => None,
        };
        let closed = poll(self.wait, || {
            (self.action()["active"] == false).then_some(())
        })
        .await;
        self.expect(closed.is_some(), "exit cooking mode")?;
        self.expect(summary.is_some(), "write the session's summary")?;
        if let Some((file, text)) = summary {
            note(&format!("summary written: {}", file.display()));
            for l in text.lines().filter(|l| !l.trim().is_empty()).take(12) {
                println!("      | {l}");
            }
        }
        if let Some(dir) = &session_dir {
            let conv = dir.join(crate::modes::session::CONVERSATION_FILE);
            let turns: Vec<Value> = read(&conv)
                .unwrap_or_default()
                .lines()
                .filter_map(|l| serde_json::from_str(l).ok())
                .collect();
            let mut channels: Vec<&str> =
                turns.iter().filter_map(|t| t["channel"].as_str()).collect();
            channels.sort_unstable();
            channels.dedup();
            note(&format!(
                "{}: {} turns, from {}",
                conv.display(),
                turns.len(),
                channels.join(", ")
            ));
        }
        Ok(())
    }
}

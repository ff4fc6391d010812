//! One turn through the kernel, in its chat's worker: [`TurnRun`], as short stages —
//! admit (the size check) → a slash command (see `commands`) | begin (begin-turn) →
//! answer (the fast path or the strategy, under the watchdog) → record (end-turn, then
//! compaction). A [`TurnGuard`] ends a begun turn even if its task is cancelled or panics.
//!
//! Nothing is acknowledged as kept when it was not: a turn that could not be recorded
//! (disk full, too many open files …) still gets its answer, followed by a sentence that
//! says it was not saved, and the reply's outcome is a storage failure. While the disk is
//! known to be full, begin-turn refuses new turns before the LLM is asked.

use super::{Kernel, KernelInner};
use crate::actor::Group;
use crate::agent::{AgentOutcome, TurnCtx};
use crate::metrics::TurnOutcome;
use crate::modes::mode_core::{ModeError, TurnMeta};
use crate::modes::{ModesHandle, Record, TurnTicket};
use crate::prompt::TailInfo;
use crate::strategy::TurnResult;
use crate::turn::{Command, Failure, Outcome, Refusal, Reply, Trust, Turn, TurnError};
use std::time::Duration;
use tokio_util::sync::CancellationToken;
use tracing::{error, info, warn};

/// The `error` of a turn its sender cancelled (recorded like any failed turn).
pub const CANCELLED: &str = "cancelled by the user";

/// How a turn ended, as the metrics label it.
pub fn turn_outcome(reply: &Reply) -> TurnOutcome {
    match reply.outcome {
        Outcome::Answered => TurnOutcome::Answered,
        Outcome::Refused { .. } => TurnOutcome::Refused,
        Outcome::Failed { .. } => TurnOutcome::Failed,
        Outcome::Cancelled => TurnOutcome::Cancelled,
    }
}

/// Ends a begun turn even if its task is cancelled or panics, so the ModeManager never
/// waits forever for it (a pending exit would otherwise never archive).
struct TurnGuard {
    modes: ModesHandle,
    turn_id: u64,
    began_in: Option<String>,
    record: Option<Record>,
}

impl Drop for TurnGuard {
    fn drop(&mut self) {
        if let Some(mut r) = self.record.take() {
            r.assistant = "（这一轮处理中断了。）".into();
            r.error = Some("turn aborted before it finished".into());
            self.modes
                .end_turn_detached(self.turn_id, r, self.began_in.take());
        }
    }
}

/// One turn through the kernel, the turn's spine: each stage takes and returns a typed
/// value — [`Self::admit`] the turn's words (or its refusal), [`Self::begin`] a [`Begun`]
/// turn, [`Self::answer`] its [`TurnResult`], [`Self::record`] the [`Reply`].
pub(super) struct TurnRun<'k> {
    kernel: &'k Kernel,
    turn: &'k Turn,
    /// Fires when the sender gives up on the turn.
    cancel: CancellationToken,
}

/// A turn past the size checks: its trimmed words.
struct Admitted<'k> {
    text: &'k str,
}

/// A turn begin-turn admitted: its words, its ticket, and the guard that ends it whatever
/// happens.
struct Begun<'k> {
    text: &'k str,
    ticket: TurnTicket,
    guard: TurnGuard,
}

impl<'k> TurnRun<'k> {
    pub(super) fn new(kernel: &'k Kernel, turn: &'k Turn, cancel: CancellationToken) -> Self {
        Self {
            kernel,
            turn,
            cancel,
        }
    }

    /// admit → a slash command | begin → answer → record (and compaction after).
    pub(super) async fn run(self) -> Reply {
        let admitted = match self.admit() {
            Ok(admitted) => admitted,
            Err(refused) => return refused,
        };
        let said = || crate::commands::spoken::command_in(admitted.text);
        if let Some(command) = Command::of(admitted.text).or_else(said) {
            return self.slash(command).await;
        }
        let begun = match self.begin(admitted).await {
            Ok(begun) => begun,
            Err(refused) => return refused,
        };
        let result = self.answer(&begun).await;
        self.record(begun, result).await
    }

    fn inner(&self) -> &'k KernelInner {
        &self.kernel.inner
    }

    /// The size checks: the turn's trimmed words, or why it is refused.
    fn admit(&self) -> Result<Admitted<'k>, Reply> {
        let text = self.turn.text.trim();
        if text.is_empty() {
            return Err(Reply::refused("（收到一条空消息。）", Refusal::Empty, ""));
        }
        let max = self.inner().cfg.agent.max_message_chars;
        let len = text.chars().count();
        if len > max {
            return Err(Reply::refused(
                format!("消息太长了（{len} 字），上限是 {max} 字，请分几次说。"),
                Refusal::TooLong,
                format!("message of {len} characters exceeds the limit of {max}"),
            ));
        }
        Ok(Admitted { text })
    }

    /// A slash command, as its sender may run it: the owner (the terminal) sees the
    /// household's reminders, every other chat its own.
    async fn slash(&self, command: Command) -> Reply {
        let turn = self.turn;
        let trust = turn.facts().trust;
        let scope = if trust == Trust::Owner {
            crate::cron::Scope::Household
        } else {
            crate::cron::Scope::Chat {
                channel: turn.channel.clone(),
                chat_id: turn.chat_id.clone(),
            }
        };
        let mut ctx = self
            .kernel
            .command_context_for(scope, trust != Trust::Guest);
        ctx.who = Some(crate::modes::entered::Entrant {
            speaker_id: turn.speaker_id.clone(),
            speaker_name: self.speaker_name(),
            channel: turn.channel.clone(),
        });
        ctx.turn = Some(turn);
        crate::commands::run(&ctx, command, turn.may_switch_modes).await
    }

    /// The member's own name, else the one the channel's peer knows them by.
    fn speaker_name(&self) -> Option<String> {
        (self.inner().cfg)
            .member_for(&self.turn.speaker_id)
            .and_then(|m| m.name.clone())
            .or_else(|| self.turn.peer_name.clone())
    }

    /// Begin-turn: the ticket (the mode, the history to replay), and a guard that records
    /// the turn as interrupted if it never reaches [`Self::record`].
    async fn begin(&self, admitted: Admitted<'k>) -> Result<Begun<'k>, Reply> {
        let (inner, turn, text) = (self.inner(), self.turn, admitted.text);
        let meta = TurnMeta {
            channel: turn.channel.clone(),
            chat_id: turn.chat_id.clone(),
            speaker_id: turn.speaker_id.clone(),
            speaker_name: self.speaker_name(),
            place: turn.facts().place.clone(),
            text: text.to_string(),
            shared: matches!(
                turn.facts().audience,
                crate::turn::Audience::Group | crate::turn::Audience::Room
            ),
            room: turn.room.clone(),
        };
        let ticket = inner.modes.begin_turn(meta).await.map_err(not_begun)?;
        let guard = TurnGuard {
            modes: inner.modes.clone(),
            turn_id: ticket.turn_id,
            began_in: ticket.mode.as_ref().map(|m| m.session_id.clone()),
            record: Some(Record {
                timestamp: ticket
                    .began_at
                    .to_rfc3339_opts(chrono::SecondsFormat::Secs, false),
                channel: turn.channel.clone(),
                chat_id: turn.chat_id.clone(),
                speaker_id: turn.speaker_id.clone(),
                user: text.to_string(),
                assistant: String::new(),
                error: None,
                speaker_name: self.speaker_name(),
                sent: None,
                place: turn.facts().place.clone(),
                tool_results: Vec::new(),
            }),
        };
        Ok(Begun {
            text,
            ticket,
            guard,
        })
    }

    /// The turn's context: its tail, and the speaker's profile outside a mode (read off
    /// the async workers, as the turn's other files are: see [`read_profile`]).
    async fn turn_ctx<'b>(&self, begun: &'b Begun<'k>) -> TurnCtx<'b>
    where
        'k: 'b,
    {
        let (inner, turn, ticket) = (self.inner(), self.turn, &begun.ticket);
        let member = inner.cfg.member_for(&turn.speaker_id);
        let profile = match (&ticket.mode, member) {
            (None, Some(m)) => read_profile(inner.ws.user_profile(&m.id)).await,
            _ => None,
        };
        let tail = TailInfo {
            now: ticket.began_at,
            channel: &turn.channel,
            chat_id: &turn.chat_id,
            speaker_id: &turn.speaker_id,
            speaker_name: member
                .and_then(|m| m.name.as_deref())
                .or(turn.peer_name.as_deref()),
            spoken: turn.facts().modality == crate::turn::Modality::Speech,
            channel_hint: turn.reply_hint.as_deref(),
            room: turn.room.as_deref(),
            workspace: inner.ws.root(),
        };
        TurnCtx {
            turn,
            text: begun.text,
            ticket,
            tail,
            profile,
            modes: &inner.modes,
            scene: Default::default(),
        }
    }

    /// The answer, under the turn's watchdog, unless the sender cancels or the shutdown's
    /// grace period ends first.
    async fn answer(&self, begun: &Begun<'k>) -> TurnResult {
        let (inner, turn) = (self.inner(), self.turn);
        let t = self.turn_ctx(begun).await;
        let limit = Duration::from_secs(inner.cfg.agent.turn_timeout_secs);
        // fires when the shutdown's grace period is over
        let stragglers = inner.lifecycle.tasks().token(Group::Turn);
        tokio::select! {
            biased;
            _ = stragglers.cancelled() => {
                warn!(channel = %turn.channel, chat = %turn.chat_id, "turn stopped: the shutdown grace period is over");
                let e = TurnError::new(Failure::Unavailable, "stopped by the shutdown before it finished");
                TurnResult::stopped("抱歉，homebot 正在关闭，这一轮没能完成，请稍后再说一次。", e, false)
            }
            _ = self.cancel.cancelled() => {
                info!(channel = %turn.channel, chat = %turn.chat_id, "turn cancelled by the sender");
                TurnResult::stopped("（已取消这一轮。）", TurnError::new(Failure::Internal, CANCELLED), true)
            }
            done = tokio::time::timeout(limit, self.respond(&t)) => match done {
                Ok(result) => result,
                Err(_) => {
                    warn!(channel = %turn.channel, chat = %turn.chat_id, secs = limit.as_secs(), "turn watchdog fired");
                    let e = TurnError::new(Failure::Timeout, format!("turn exceeded {} s", limit.as_secs()));
                    TurnResult::stopped("抱歉，这次处理时间太长，已经停止了，请再说一次。", e, false)
                }
            },
        }
    }

    /// Home Assistant's own agent first (`home_assistant.fast_path`): its answer, or the
    /// strategy in force around the LLM's.
    async fn respond(&self, t: &TurnCtx<'_>) -> TurnResult {
        let inner = self.inner();
        let (turn, in_mode) = (t.turn, t.ticket.mode.is_some());
        let waiting = async {
            let st = inner.strategies.snapshot().await;
            st.choices.contains_key(&turn.chat_key())
                || (st.pending_work.as_ref())
                    .is_some_and(|w| w.channel == turn.channel && w.chat_id == turn.chat_id)
        };
        if let Some(reply) = inner.agent.home.fast_path(turn, in_mode, waiting).await {
            return TurnResult::done(AgentOutcome { reply, error: None });
        }
        // the first turn opens scene memory, so its recall sees what was kept
        inner.agent.memory.ready().await;
        crate::strategy::run(&inner.agent, &inner.strategies, t).await
    }

    /// End-turn: the record written (or the reply saying it was not), then compaction.
    async fn record(&self, mut begun: Begun<'k>, r: TurnResult) -> Reply {
        let (inner, turn) = (self.inner(), self.turn);
        let mut record = begun
            .guard
            .record
            .take()
            .expect("the guard holds the record until here");
        record.assistant = r.outcome.reply.clone();
        if let Some(user) = r.recorded_user {
            record.user = user;
        }
        if let Some(said) = turn.partials.as_ref().map(|p| p.said()) {
            if r.cancelled && !said.trim().is_empty() {
                // what the user heard before they cut it short
                record.assistant = format!("{}{}", said.trim_end(), r.outcome.reply);
            }
        }
        record.error = r.outcome.error.as_ref().map(|e| e.detail.clone());
        record.sent = r.sent;
        record.tool_results = r.kept;
        let outcome = match r.outcome.error {
            _ if r.cancelled => Outcome::Cancelled,
            None => Outcome::Answered,
            Some(e) => e.into(),
        };
        let mut reply = Reply::new(r.outcome.reply, outcome);
        reply.awaits_answer = r.awaits_answer;
        let began_in = begun.guard.began_in.take();
        let ticket = &begun.ticket;
        match inner.modes.end_turn(ticket.turn_id, record, began_in).await {
            Ok(o) => {
                // compaction, in a task of its own: nobody waits for it (a session this
                // turn ended is not compacted any more)
                let compact = match &o.recorded_in {
                    Some(sid) => o.archived.as_deref() != Some(sid.as_str()),
                    // a normal chat's turn (the ticket says which history it replayed)
                    None => ticket.chat.is_some(),
                };
                if compact {
                    (inner.agent).after_turn(ticket, &turn.channel, &turn.chat_id);
                }
            }
            Err(e) => {
                error!(channel = %turn.channel, chat = %turn.chat_id, error = %e, "turn could not be recorded");
                not_recorded(&mut reply, &e);
            }
        }
        reply
    }
}

/// A member's `USER.md`, or `None` if it cannot be read. The read blocks on the disk, so
/// it runs on tokio's blocking pool (as the strategy state, its journal and the tools'
/// files do), never on an async worker.
async fn read_profile(path: std::path::PathBuf) -> Option<String> {
    tokio::task::spawn_blocking(move || std::fs::read_to_string(path).ok())
        .await
        .ok()
        .flatten()
}

/// Why begin-turn refused a turn, as its reply.
fn not_begun(e: ModeError) -> Reply {
    match e {
        ModeError::Restarted => {
            error!(error = %e, "begin-turn failed");
            Reply::failed(
                "抱歉，处理这条消息时内部出错了，已经自动恢复，请再说一次。",
                Failure::Internal,
                e.to_string(),
            )
        }
        ModeError::Recovering { secs } => {
            warn!(error = %e, "turn refused: the mode manager is recovering");
            Reply::refused(
                format!("抱歉，系统内部出错后正在恢复，请 {secs} 秒后再说一次。"),
                Refusal::Recovering,
                e.to_string(),
            )
        }
        ModeError::DiskFull { .. } => {
            warn!(error = %e, "turn refused: recording is failing for lack of space");
            Reply::refused(
                "抱歉，磁盘满了，这一轮没法保存到记录里，所以先不处理。请腾出空间后再说。",
                Refusal::DiskFull,
                e.to_string(),
            )
        }
        e => Reply::refused(
            "抱歉，系统正在关闭，请稍后再试。",
            Refusal::ShuttingDown,
            e.to_string(),
        ),
    }
}

/// Tell the user (and the channel, through the reply's outcome) that the answer they got
/// was not kept in the history. A turn that had failed keeps its own kind of failure.
fn not_recorded(reply: &mut Reply, e: &ModeError) {
    let note = match e {
        ModeError::Io { source, .. } => format!("（注意：这一轮没能保存到记录里：{source}）"),
        // the manager failed while recording: whether the record landed is not known
        ModeError::Restarted => format!("（注意：这一轮可能没有保存到记录里：{e}）"),
        other => format!("（注意：这一轮没能保存到记录里：{other}）"),
    };
    if !reply.text.is_empty() {
        reply.text.push('\n');
    }
    reply.text.push_str(&note);
    let why = format!("turn not recorded: {e}");
    reply.outcome = match std::mem::take(&mut reply.outcome) {
        Outcome::Failed { error, detail } => Outcome::failed(error, format!("{detail}; {why}")),
        _ => Outcome::failed(Failure::Storage, why),
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_outcome_of_a_reply() {
        let o = |r: Reply| turn_outcome(&r);
        assert_eq!(o(Reply::ok("好的")), TurnOutcome::Answered);
        assert_eq!(
            o(Reply::cancelled("（已取消这一轮。）")),
            TurnOutcome::Cancelled
        );
        assert_eq!(
            o(Reply::refused("…", Refusal::Busy, "16 waiting")),
            TurnOutcome::Refused
        );
        assert_eq!(
            o(Reply::failed("…", Failure::Timeout, "turn exceeded 300 s")),
            TurnOutcome::Failed
        );
    }

    #[tokio::test]
    async fn a_profile_is_read_off_the_workers_and_a_missing_one_is_none() {
        let d = tempfile::tempdir().expect("a temporary directory");
        let path = d.path().join("USER.md");
        assert_eq!(read_profile(path.clone()).await, None);
        std::fs::write(&path, "妈妈对芒果过敏。").expect("the profile is written");
        assert_eq!(
            read_profile(path).await.as_deref(),
            Some("妈妈对芒果过敏。")
        );
    }

    #[test]
    fn a_turn_not_recorded_says_so_and_keeps_its_own_error() {
        let mut r = Reply::failed("抱歉，超时了。", Failure::Timeout, "turn exceeded 300 s");
        let e = ModeError::Io {
            what: "append to",
            path: "/ws/chats/cli/local.jsonl".into(),
            source: std::io::Error::from_raw_os_error(24),
        };
        not_recorded(&mut r, &e);
        assert!(
            r.text
                .starts_with("抱歉，超时了。\n（注意：这一轮没能保存到记录里：Too many open files"),
            "{r:?}"
        );
        let Outcome::Failed { error, detail } = &r.outcome else {
            panic!("{r:?}")
        };
        assert_eq!(*error, Failure::Timeout);
        assert!(
            detail.starts_with(
                "turn exceeded 300 s; turn not recorded: append to /ws/chats/cli/local.jsonl"
            ),
            "{detail}"
        );
    }
}

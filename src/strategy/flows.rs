//! One turn through the strategy in force. The kernel calls [`run`] instead of
//! `Agent::run`; every flow builds its requests with `Agent::prepare` and runs tools with
//! `Agent::tool_loop_capped`, so Build is exactly today's loop.
//!
//! Order of checks: an open `ask_user_choice` question in this chat (its answer is
//! replayed as the call's result, `User selected: …`); then a plan or spec waiting for
//! confirmation (household-wide: any chat may confirm it); then the strategy's own flow.

use super::choice::{self, Parsed};
use super::doc::{self, Verdict};
use super::journal::{self, clip, Entry};
use super::state::{PendingChoice, PendingWork, WorkKind, MAX_PENDING_CHOICES};
use super::{Effective, Strategies};
use crate::agent::{cap_reply, Agent, AgentOutcome, Prepared};
use crate::config::StrategyKind;
use crate::modes::{ModesHandle, TurnTicket};
use crate::prompt::{TailInfo, TailSection};
use crate::provider::{ChatRequest, ChatResponse, Message, ProviderError, ToolCall};
use crate::turn::Turn;
use chrono::{DateTime, FixedOffset};
use tracing::warn;

/// A turn's outcome, and whether the reply waits for an answer (voice keeps listening).
#[derive(Debug, Clone, PartialEq)]
pub struct StrategyOutcome {
    pub outcome: AgentOutcome,
    pub awaits_answer: bool,
}

impl StrategyOutcome {
    fn done(outcome: AgentOutcome) -> Self {
        Self {
            outcome,
            awaits_answer: false,
        }
    }
    fn say(reply: impl Into<String>, awaits_answer: bool) -> Self {
        Self {
            outcome: AgentOutcome {
                reply: reply.into(),
                error: None,
            },
            awaits_answer,
        }
    }
}

struct Ctx<'a> {
    agent: &'a Agent,
    st: &'a Strategies,
    ticket: &'a TurnTicket,
    tail: &'a TailInfo<'a>,
    profile: Option<&'a str>,
    text: &'a str,
    turn: &'a Turn,
    modes: &'a ModesHandle,
    eff: Effective,
    rounds: u32,
}

impl Ctx<'_> {
    fn session(&self) -> Option<&str> {
        self.ticket.mode.as_ref().map(|m| m.session_id.as_str())
    }
    fn now(&self) -> DateTime<FixedOffset> {
        self.ticket.began_at
    }
    fn stamp(&self) -> String {
        self.now()
            .to_rfc3339_opts(chrono::SecondsFormat::Secs, false)
    }
    async fn log(&self, flow: &str, stage: &str, text: &str, detail: Option<serde_json::Value>) {
        let e = Entry {
            timestamp: self.stamp(),
            flow,
            stage,
            channel: &self.turn.channel,
            chat_id: &self.turn.chat_id,
            speaker_id: &self.turn.speaker_id,
            session_id: self.session(),
            text: clip(text),
            detail,
        };
        journal::append(self.st.workspace(), &e).await;
    }
    /// The turn's first request, with `sections` put in the dynamic tail.
    fn prepare(&self, sections: &[TailSection]) -> Prepared {
        let mut p = self.agent.prepare(
            self.ticket,
            self.tail,
            self.profile,
            self.text,
            self.turn,
            self.modes,
        );
        insert_sections(&mut p.messages, self.text, sections);
        p
    }
    /// The strategy's own block plus `extra`.
    fn sections(&self, extra: Vec<TailSection>) -> Vec<TailSection> {
        let mut v = extra;
        v.extend(self.eff.section());
        v
    }
    fn group_asker_only(&self, anyone: bool) -> bool {
        self.turn.channel == "qq" && self.turn.chat_id.starts_with("group:") && !anyone
    }
}

/// Render `sections` like the dynamic tail does and put them just before the user's words.
fn insert_sections(messages: &mut [Message], user_text: &str, sections: &[TailSection]) {
    if sections.is_empty() {
        return;
    }
    let Some(Message::User { content }) = messages.last_mut() else {
        return;
    };
    let mut rendered = String::new();
    for s in sections {
        rendered.push_str(&format!(
            "[{}]\n{}\n[/{}]\n\n",
            s.label,
            s.body.trim(),
            s.label
        ));
    }
    *content = match content.strip_suffix(user_text) {
        Some(head) => format!("{head}{rendered}{user_text}"),
        None => format!("{content}\n\n{rendered}"),
    };
}

/// Add a user message, or extend the last one if it is already the user's.
fn push_user(messages: &mut Vec<Message>, text: String) {
    if let Some(Message::User { content }) = messages.last_mut() {
        content.push_str("\n\n");
        content.push_str(&text);
        return;
    }
    messages.push(Message::User { content: text });
}

fn push_assistant(messages: &mut Vec<Message>, text: &str) {
    messages.push(Message::Assistant {
        content: Some(text.to_string()),
        tool_calls: vec![],
        reasoning_content: None,
    });
}

/// One provider call without running tools (planning, review, revision).
async fn ask(
    agent: &Agent,
    p: &Prepared,
    purpose: &'static str,
) -> Result<ChatResponse, ProviderError> {
    let mut meta = p.meta.clone();
    meta.purpose = purpose;
    let req = ChatRequest {
        messages: &p.messages,
        tools: &agent.tools,
    };
    agent.provider.complete(&req, &meta).await
}

fn failed(e: ProviderError) -> StrategyOutcome {
    StrategyOutcome::done(AgentOutcome {
        reply: e.user_message(),
        error: Some(e.to_string()),
    })
}

fn older_than(stamp: &str, now: DateTime<FixedOffset>, limit: chrono::Duration) -> bool {
    DateTime::parse_from_rfc3339(stamp)
        .map(|t| now - t > limit)
        .unwrap_or(true)
}

/// One turn, to its reply (at most `agent.max_reply_chars` characters).
#[allow(clippy::too_many_arguments)]
pub async fn run(
    agent: &Agent,
    strategies: &Strategies,
    ticket: &TurnTicket,
    tail: &TailInfo<'_>,
    profile: Option<&str>,
    user_text: &str,
    turn: &Turn,
    modes: &ModesHandle,
) -> StrategyOutcome {
    let mode = ticket
        .mode
        .as_ref()
        .map(|m| (m.mode_id.as_str(), m.session_id.as_str()));
    let eff = strategies.effective(mode).await;
    let rounds = eff
        .preset
        .and_then(|p| p.max_tool_rounds())
        .unwrap_or(agent.max_tool_rounds);
    let c = Ctx {
        agent,
        st: strategies,
        ticket,
        tail,
        profile,
        text: user_text,
        turn,
        modes,
        eff,
        rounds,
    };
    let mut out = dispatch(&c).await;
    if out.outcome.reply.chars().count() > agent.max_reply_chars {
        warn!(
            limit = agent.max_reply_chars,
            "reply cut at agent.max_reply_chars"
        );
        out.outcome.reply = cap_reply(out.outcome.reply, agent.max_reply_chars);
    }
    out
}

/// What an open question makes of this message.
enum Answer {
    None,
    Answered(PendingChoice, Parsed),
    Retry(String),
    NotTheAsker(PendingChoice),
    Dropped(PendingChoice),
}

async fn check_answer(c: &Ctx<'_>) -> Answer {
    let key = c.turn.chat_key();
    let ttl = chrono::Duration::minutes(c.st.config().choice_minutes as i64);
    let now = c.now();
    let speaker = c.turn.speaker_id.clone();
    let text = c.text.to_string();
    let group = c.turn.channel == "qq" && c.turn.chat_id.starts_with("group:");
    let r =
        c.st.update(|st| {
            let Some(p) = st.choices.get(&key).cloned() else {
                return Answer::None;
            };
            if older_than(&p.asked_at, now, ttl) {
                st.choices.remove(&key);
                return Answer::None;
            }
            if group && !p.asked.anyone && p.asker != speaker {
                return Answer::NotTheAsker(p);
            }
            match choice::parse(&text, &p.asked) {
                parsed @ (Parsed::Selected(_) | Parsed::Custom(_)) => {
                    st.choices.remove(&key);
                    Answer::Answered(p, parsed)
                }
                Parsed::OutOfRange(n) => Answer::Retry(format!(
                    "没有第 {n} 个选项，请回复 1 到 {} 之间的序号。",
                    p.asked.options.len()
                )),
                Parsed::TooMany => {
                    Answer::Retry("这个问题只能选一个，请回复一个序号或选项名。".into())
                }
                Parsed::Unrelated => {
                    st.choices.remove(&key);
                    Answer::Dropped(p)
                }
            }
        })
        .await;
    r.unwrap_or_else(|e| {
        warn!(error = %e, "strategy state not saved; the open question is left as it was");
        Answer::None
    })
}

async fn dispatch(c: &Ctx<'_>) -> StrategyOutcome {
    let mut extra = Vec::new();
    match check_answer(c).await {
        Answer::None => {}
        Answer::Answered(p, parsed) => return answered(c, p, parsed).await,
        Answer::Retry(msg) => return StrategyOutcome::say(msg, true),
        Answer::NotTheAsker(p) => extra.push(TailSection {
            label: "待回答的问题".into(),
            body: format!(
                "你刚问过 {}：“{}”，在等 {} 本人回答；{} 的这条消息不算回答，照常回应即可。",
                p.asker, p.asked.question, p.asker, c.turn.speaker_id
            ),
        }),
        Answer::Dropped(p) => {
            c.log("choice", "cancelled", &p.asked.question, None).await;
            extra.push(TailSection {
                label: "已取消的问题".into(),
                body: format!(
                    "你之前问的“{}”没有得到回答：用户的这条消息说的是别的，那个问题已作废。",
                    p.asked.question
                ),
            })
        }
    }
    if let Some(out) = pending_work(c).await {
        return out;
    }
    match c.eff.kind {
        StrategyKind::Plan => propose(c, WorkKind::Plan, extra).await,
        StrategyKind::Spec => propose(c, WorkKind::Spec, extra).await,
        StrategyKind::Reflect => reflect(c, extra).await,
        StrategyKind::Build | StrategyKind::Assist | StrategyKind::Custom => {
            let mut p = c.prepare(&c.sections(extra));
            let o = c.agent.tool_loop_capped(&mut p, c.rounds).await;
            finish(c, &mut p, o).await
        }
    }
}

/// After a tool loop: a question asked with `ask_user_choice` becomes the reply and
/// waits in this chat.
async fn finish(c: &Ctx<'_>, p: &mut Prepared, o: AgentOutcome) -> StrategyOutcome {
    let Some(asked) = p.env.choice.take() else {
        return StrategyOutcome::done(o);
    };
    let reply = choice::render(&asked, &c.turn.channel, c.group_asker_only(asked.anyone));
    let pending = PendingChoice {
        asked: asked.clone(),
        asker: c.turn.speaker_id.clone(),
        asked_at: c.stamp(),
    };
    let key = c.turn.chat_key();
    let saved =
        c.st.update(|st| {
            st.choices.insert(key, pending);
            while st.choices.len() > MAX_PENDING_CHOICES {
                let oldest = st
                    .choices
                    .iter()
                    .min_by(|a, b| a.1.asked_at.cmp(&b.1.asked_at))
                    .map(|(k, _)| k.clone())
                    .expect("the map is not empty");
                st.choices.remove(&oldest);
            }
        })
        .await;
    c.log(
        "choice",
        "asked",
        &asked.question,
        serde_json::to_value(&asked.options).ok(),
    )
    .await;
    match saved {
        Ok(()) => StrategyOutcome::say(reply, true),
        Err(e) => StrategyOutcome {
            outcome: AgentOutcome {
                reply: format!("{reply}\n（注意：这个问题没能保存，回答时请把选项说完整。）"),
                error: Some(format!("pending choice not saved: {e}")),
            },
            awaits_answer: true,
        },
    }
}

/// The answer to an open question: the call is replayed with `User selected: …` as its
/// result, and the turn goes on as a tool loop.
async fn answered(c: &Ctx<'_>, p: PendingChoice, parsed: Parsed) -> StrategyOutcome {
    let result = choice::tool_result(&p.asked, &parsed);
    c.log("choice", "answered", &result, None).await;
    let mut prep = c.prepare(&c.sections(vec![]));
    prep.messages.push(Message::Assistant {
        content: None,
        tool_calls: vec![ToolCall {
            id: p.asked.call_id.clone(),
            name: crate::tools::choice::NAME.into(),
            arguments: p.asked.arguments.clone(),
        }],
        reasoning_content: None,
    });
    prep.messages.push(Message::Tool {
        tool_call_id: p.asked.call_id.clone(),
        content: result,
    });
    let o = c.agent.tool_loop_capped(&mut prep, c.rounds).await;
    finish(c, &mut prep, o).await
}

fn kind_name(k: WorkKind) -> (&'static str, &'static str) {
    match k {
        WorkKind::Plan => ("plan", "计划"),
        WorkKind::Spec => ("spec", "规格"),
    }
}

/// A plan or spec waiting: "确认" runs it, "取消" drops it; anything else is not about it
/// (in Plan / Spec it becomes feedback for a revised one).
async fn pending_work(c: &Ctx<'_>) -> Option<StrategyOutcome> {
    let ttl = chrono::Duration::hours(c.st.config().pending_hours as i64);
    let now = c.now();
    let verdict = doc::verdict(c.text);
    let (channel, chat) = (c.turn.channel.clone(), c.turn.chat_id.clone());
    let taken =
        c.st.update(|st| {
            let w = st.pending_work.as_ref()?;
            if older_than(&w.made_at, now, ttl) {
                st.pending_work = None;
                return None;
            }
            let here = w.channel == channel && w.chat_id == chat;
            let counts = match verdict {
                Verdict::Other => false,
                Verdict::Confirm { strong } | Verdict::Cancel { strong } => strong || here,
            };
            if !counts {
                return None;
            }
            st.pending_work.take().map(|w| (w, verdict))
        })
        .await;
    let (work, verdict) = match taken {
        Ok(Some(x)) => x,
        Ok(None) => return None,
        Err(e) => {
            return Some(StrategyOutcome::done(AgentOutcome {
                reply: "抱歉，计划的状态没能保存，这次先不执行，请再说一次。".into(),
                error: Some(format!("strategy state not saved: {e}")),
            }))
        }
    };
    let (flow, cn) = kind_name(work.kind);
    if let Verdict::Cancel { .. } = verdict {
        c.log(flow, "cancelled", &work.goal, None).await;
        return Some(StrategyOutcome::say(format!("好，已取消这个{cn}。"), false));
    }
    Some(execute(c, work).await)
}

/// Ask for a plan or spec; re-ask once when it is not valid; keep it pending.
async fn propose(c: &Ctx<'_>, kind: WorkKind, mut extra: Vec<TailSection>) -> StrategyOutcome {
    let (flow, cn) = kind_name(kind);
    let max = c.st.config().max_plan_steps;
    let previous =
        c.st.snapshot()
            .await
            .pending_work
            .filter(|w| w.kind == kind);
    extra.extend(c.eff.section());
    extra.push(TailSection {
        label: format!("{}（{}）", super::SECTION_LABEL, flow),
        body: doc::instruction(kind, max),
    });
    if let Some(prev) = &previous {
        extra.push(TailSection {
            label: format!("待确认的{cn}"),
            body: format!(
                "这个{cn}还没有确认；下面的话可能是对它的修改意见，请据此输出修改后的完整{cn}。\n{}",
                serde_json::to_string(&prev.doc).unwrap_or_default()
            ),
        });
    }
    let mut p = c.prepare(&extra);
    let mut work = None;
    let mut why = String::new();
    for attempt in 0..2 {
        let purpose = match (kind, attempt) {
            (WorkKind::Plan, 0) => "plan",
            (WorkKind::Plan, _) => "plan-retry",
            (WorkKind::Spec, 0) => "spec",
            (WorkKind::Spec, _) => "spec-retry",
        };
        let resp = match ask(c.agent, &p, purpose).await {
            Ok(r) => r,
            Err(e) => return failed(e),
        };
        let text = resp.content.clone().unwrap_or_default();
        let parsed = if resp.tool_calls.is_empty() {
            doc::parse(kind, &text, max)
        } else {
            Err(format!("tools must not be called while writing the {flow}"))
        };
        match parsed {
            Ok(w) => {
                work = Some(w);
                break;
            }
            Err(e) => {
                c.log(
                    flow,
                    "invalid",
                    &text,
                    Some(serde_json::json!({ "error": e })),
                )
                .await;
                push_assistant(&mut p.messages, &text);
                push_user(
                    &mut p.messages,
                    format!("That {flow} was not valid: {e}. Output only the {flow} as one JSON object, nothing else."),
                );
                why = e;
            }
        }
    }
    let Some(work) = work else {
        return StrategyOutcome::done(AgentOutcome {
            reply: format!(
                "抱歉，没能做出一个有效的{cn}（{why}）。可以换个说法再试一次，或者用 /strategy build 让我直接做。"
            ),
            error: Some(format!("the model gave no valid {flow} after one retry: {why}")),
        });
    };
    let pending = PendingWork {
        kind,
        request: c.text.to_string(),
        goal: work.goal.clone(),
        steps: work.steps.clone(),
        doc: work.doc.clone(),
        made_at: c.stamp(),
        channel: c.turn.channel.clone(),
        chat_id: c.turn.chat_id.clone(),
        speaker_id: c.turn.speaker_id.clone(),
        session_id: c.session().map(str::to_string),
    };
    if let Err(e) = c.st.update(|st| st.pending_work = Some(pending)).await {
        return StrategyOutcome::done(AgentOutcome {
            reply: format!(
                "{}\n（注意：这个{cn}没能保存，确认不了；请稍后再让我做一次。）",
                doc::render(kind, &work)
            ),
            error: Some(format!("pending {flow} not saved: {e}")),
        });
    }
    c.log(flow, "proposed", &work.goal, Some(work.doc.clone()))
        .await;
    StrategyOutcome::say(doc::render(kind, &work), true)
}

/// Run a confirmed plan or spec step by step, then summarize. If a step fails, the
/// work is kept pending again so "确认" can retry it.
async fn execute(c: &Ctx<'_>, work: PendingWork) -> StrategyOutcome {
    let (flow, cn) = kind_name(work.kind);
    c.log(flow, "confirmed", &work.goal, None).await;
    let n = work.steps.len();
    let listing: Vec<String> = work
        .steps
        .iter()
        .enumerate()
        .map(|(i, s)| format!("{}. {s}", i + 1))
        .collect();
    let section = TailSection {
        label: format!("执行{cn}"),
        body: format!(
            "家里人（{}，在 {}）确认了这个{cn}，现在开始执行。每次只做指定的那一步，需要时用工具，做完用一两句话说明结果。\n目标：{}\n{}",
            work.speaker_id,
            work.channel,
            work.goal,
            listing.join("\n")
        ),
    };
    let mut p = c.prepare(&c.sections(vec![section]));
    let mut results = Vec::with_capacity(n);
    for (i, step) in work.steps.iter().enumerate() {
        push_user(
            &mut p.messages,
            format!("[第 {}/{n} 步] {step}\n只做这一步。", i + 1),
        );
        p.meta.purpose = "plan-step";
        let o = c.agent.tool_loop_capped(&mut p, c.rounds).await;
        if p.env.choice.is_set() {
            c.log(flow, "step-asked", step, None).await;
            return finish(c, &mut p, o).await;
        }
        if let Some(err) = &o.error {
            c.log(
                flow,
                "step-failed",
                step,
                Some(serde_json::json!({ "error": err })),
            )
            .await;
            let kept =
                c.st.update(|st| st.pending_work = Some(work.clone()))
                    .await
                    .is_ok();
            let mut reply = format!("执行到第 {} 步（{step}）时出错了：{}", i + 1, o.reply);
            if kept {
                reply.push_str(&format!("\n这个{cn}还保留着，回复“确认”可以重新执行。"));
            }
            return StrategyOutcome::done(AgentOutcome {
                reply,
                error: o.error,
            });
        }
        c.log(
            flow,
            "step",
            &o.reply,
            Some(serde_json::json!({ "step": i + 1, "of": n, "title": step })),
        )
        .await;
        push_assistant(&mut p.messages, &o.reply);
        results.push(o.reply);
    }
    push_user(
        &mut p.messages,
        format!("全部 {n} 步都做完了。请用几句话向家里人总结做了什么、结果如何。"),
    );
    p.meta.purpose = "plan-summary";
    let o = c.agent.tool_loop_capped(&mut p, c.rounds).await;
    if o.error.is_some() || p.env.choice.is_set() {
        p.env.choice.take();
        warn!(error = ?o.error, "plan summary failed; the step results are the reply");
        let lines: Vec<String> = results
            .iter()
            .enumerate()
            .map(|(i, r)| format!("{}. {r}", i + 1))
            .collect();
        return StrategyOutcome::say(format!("{cn}已执行完：\n{}", lines.join("\n")), false);
    }
    c.log(flow, "summary", &o.reply, None).await;
    StrategyOutcome::done(o)
}

const REVIEW: &str = "Review the answer above critically: factual errors, logic gaps, ambiguity, edge cases, anything unsafe or unclear for this household. Output only the review, as a short list.";
const REVISE: &str = "Now rewrite the answer, fixing what the review found. Output only the final answer for the user, in the user's language, with no mention of the review.";

/// Draft → review → revision (`strategy.reflect_rounds` times); only the last revision
/// is the reply. Draft and reviews go to the journal, not to the conversation record.
async fn reflect(c: &Ctx<'_>, extra: Vec<TailSection>) -> StrategyOutcome {
    let mut p = c.prepare(&c.sections(extra));
    let o = c.agent.tool_loop_capped(&mut p, c.rounds).await;
    if p.env.choice.is_set() || o.error.is_some() {
        return finish(c, &mut p, o).await;
    }
    let mut answer = o.reply;
    c.log("reflect", "draft", &answer, None).await;
    for round in 1..=c.st.config().reflect_rounds {
        push_assistant(&mut p.messages, &answer);
        push_user(&mut p.messages, REVIEW.into());
        let review = match ask(c.agent, &p, "reflect-review").await {
            Ok(r) => r.content.unwrap_or_default().trim().to_string(),
            Err(e) => {
                warn!(error = %e, round, "reflect review failed; the draft stands");
                String::new()
            }
        };
        if review.is_empty() {
            break;
        }
        c.log(
            "reflect",
            "review",
            &review,
            Some(serde_json::json!({ "round": round })),
        )
        .await;
        push_assistant(&mut p.messages, &review);
        push_user(&mut p.messages, REVISE.into());
        let revision = match ask(c.agent, &p, "reflect-revision").await {
            Ok(r) => r.content.unwrap_or_default().trim().to_string(),
            Err(e) => {
                warn!(error = %e, round, "reflect revision failed; the draft stands");
                String::new()
            }
        };
        if revision.is_empty() {
            break;
        }
        c.log(
            "reflect",
            "revision",
            &revision,
            Some(serde_json::json!({ "round": round })),
        )
        .await;
        answer = revision;
    }
    StrategyOutcome::say(answer, false)
}

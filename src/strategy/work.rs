//! Plan and Spec: ask for the document (re-asked once when invalid), keep it pending for
//! the household, and run it step by step once someone confirms it. A spec is said as it
//! is written where the turn's channel streams (`spec_stream`); its card is the reply.

use super::ctx::{ask_with, failed, finish, older_than, push_assistant, push_user, Ctx};
use super::doc::{self, Verdict};
use super::spec_stream::SpecSpeech;
use super::state::{PendingWork, WorkKind};
use super::TurnResult;
use crate::agent::AgentOutcome;
use crate::prompt::TailSection;
use crate::provider::DeltaSink;
use crate::turn::{Failure, Partials, TurnError};
use tracing::warn;

fn kind_name(k: WorkKind) -> (&'static str, &'static str) {
    match k {
        WorkKind::Plan => ("plan", "计划"),
        WorkKind::Spec => ("spec", "规格"),
    }
}

/// A plan or spec waiting: "确认" runs it, "取消" drops it; anything else is not about it
/// (in Plan / Spec it becomes feedback for a revised one).
pub(super) async fn pending_work(c: &Ctx<'_>) -> Option<TurnResult> {
    let ttl = chrono::Duration::hours(c.st.config().pending_hours as i64);
    let now = c.now();
    let verdict = doc::verdict(c.t.text);
    let (channel, chat) = (c.t.turn.channel.clone(), c.t.turn.chat_id.clone());
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
            return Some(TurnResult::done(AgentOutcome {
                reply: "抱歉，计划的状态没能保存，这次先不执行，请再说一次。".into(),
                error: Some(TurnError::new(
                    Failure::Storage,
                    format!("strategy state not saved: {e}"),
                )),
            }))
        }
    };
    let (flow, cn) = kind_name(work.kind);
    if let Verdict::Cancel { .. } = verdict {
        c.log(flow, "cancelled", &work.goal, None).await;
        return Some(TurnResult::say(format!("好，已取消这个{cn}。"), false));
    }
    Some(execute(c, work).await)
}

/// Ask for a plan or spec; re-ask once when it is not valid; keep it pending.
pub(super) async fn propose(
    c: &Ctx<'_>,
    kind: WorkKind,
    mut extra: Vec<TailSection>,
) -> TurnResult {
    let (flow, cn) = kind_name(kind);
    let max = c.st.config().max_plan_steps;
    let previous =
        c.st.snapshot()
            .await
            .pending_work
            .filter(|w| w.kind == kind);
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
    let out = match ask_for_work(c, kind, &mut p, max).await {
        Ok(work) => keep_pending(c, kind, work).await,
        Err(out) => out,
    };
    out.requested(&p)
}

/// The model's plan or spec, asked for once more when the first is not valid; else the
/// turn's outcome (a failure, or a spoken switch of strategy that answered instead).
async fn ask_for_work(
    c: &Ctx<'_>,
    kind: WorkKind,
    p: &mut crate::agent::Prepared,
    max: usize,
) -> Result<doc::Work, TurnResult> {
    let (flow, cn) = kind_name(kind);
    // a spec is said as it is written where the channel streams (the card's words)
    let sink = p.partials.clone().filter(|_| kind == WorkKind::Spec);
    let said_before = sink.as_ref().map_or(0, Partials::count);
    let speech = sink.as_ref().map(SpecSpeech::new);
    let end = |parsed: bool| {
        if let Some(s) = &speech {
            s.ended(parsed);
        }
    };
    let mut why = String::new();
    for attempt in 0..2 {
        let purpose = match (kind, attempt) {
            (WorkKind::Plan, 0) => "plan",
            (WorkKind::Plan, _) => "plan-retry",
            (WorkKind::Spec, 0) => "spec",
            (WorkKind::Spec, _) => "spec-retry",
        };
        if let (Some(s), 1) = (&speech, attempt) {
            // asked again: the lines it writes as before are not said twice
            s.retry();
        }
        let deltas = speech.as_ref().map(|s| s as &dyn DeltaSink);
        let resp = match ask_with(c.agent, p, purpose, deltas).await {
            Ok(r) => r,
            Err(e) => {
                end(false);
                return Err(failed(e));
            }
        };
        let text = resp.content.clone().unwrap_or_default();
        let parsed = if resp.tool_calls.is_empty() {
            doc::parse(kind, &text, max)
        } else {
            match spoken_switch(c, p, &resp.tool_calls, flow).await {
                Ok(Some(out)) => {
                    end(false);
                    return Err(out);
                }
                Ok(None) => Err(doc::InvalidWork::ToolCalled { flow }),
                Err(refused) => Err(refused),
            }
        };
        match parsed {
            Ok(w) => {
                end(true);
                return Ok(w);
            }
            Err(e) => {
                c.log(
                    flow,
                    "invalid",
                    &text,
                    Some(serde_json::json!({ "error": e.to_string() })),
                )
                .await;
                push_assistant(&mut p.messages, &text);
                push_user(
                    &mut p.messages,
                    format!("That {flow} was not valid: {e}. Output only the {flow} as one JSON object, nothing else."),
                );
                why = e.to_string();
            }
        }
    }
    end(false);
    // what was said of it stays said: the end says plainly that it is not kept
    let streamed = sink.as_ref().is_some_and(|s| s.count() > said_before);
    let what = if streamed {
        format!("刚才说的这份{cn}没能解析（{why}），没有保存，不能确认")
    } else {
        format!("没能做出一个有效的{cn}（{why}）")
    };
    Err(TurnResult::done(AgentOutcome {
        reply: format!("抱歉，{what}。可以换个说法再试一次，或者用 /strategy build 让我直接做。"),
        error: Some(TurnError::new(
            Failure::Provider,
            format!("the model gave no valid {flow} after one retry: {why}"),
        )),
    }))
}

/// Keep the plan or spec pending until it is confirmed, and show it.
async fn keep_pending(c: &Ctx<'_>, kind: WorkKind, work: doc::Work) -> TurnResult {
    let (flow, cn) = kind_name(kind);
    let pending = PendingWork {
        kind,
        request: c.t.text.to_string(),
        goal: work.goal.clone(),
        steps: work.steps.clone(),
        doc: work.doc.clone(),
        made_at: c.stamp(),
        channel: c.t.turn.channel.clone(),
        chat_id: c.t.turn.chat_id.clone(),
        speaker_id: c.t.turn.speaker_id.clone(),
        session_id: c.session().map(str::to_string),
    };
    if let Err(e) = c.st.update(|st| st.pending_work = Some(pending)).await {
        return TurnResult::done(AgentOutcome {
            reply: format!(
                "{}\n（注意：这个{cn}没能保存，确认不了；请稍后再让我做一次。）",
                doc::render(kind, &work)
            ),
            error: Some(TurnError::new(
                Failure::Storage,
                format!("pending {flow} not saved: {e}"),
            )),
        });
    }
    c.log(flow, "proposed", &work.goal, Some(work.doc.clone()))
        .await;
    TurnResult::say(doc::render(kind, &work), true)
}

/// The one tool a planning request may call: `set_strategy`, when the user's words ask
/// to work another way ("直接做吧"). Accepted: the tool's result is the reply and no plan
/// is made. `Ok(None)`: no such call; `Err`: the refusal, while writing the `flow`.
async fn spoken_switch(
    c: &Ctx<'_>,
    p: &crate::agent::Prepared,
    calls: &[crate::provider::ToolCall],
    flow: &'static str,
) -> Result<Option<TurnResult>, doc::InvalidWork> {
    use crate::tools::set_strategy::NAME;
    let Some(call) = calls.iter().find(|t| t.name == NAME) else {
        return Ok(None);
    };
    let r = c.agent.tools.execute(&p.env, call).await;
    if r.is_error {
        c.log("strategy", "refused", &r.content, None).await;
        return Err(doc::InvalidWork::SwitchRefused {
            flow,
            why: r.content,
        });
    }
    Ok(Some(TurnResult::say(r.content, false)))
}

/// Run a confirmed plan or spec step by step, then summarize. If a step fails, the
/// work is kept pending again so "确认" can retry it.
async fn execute(c: &Ctx<'_>, work: PendingWork) -> TurnResult {
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
    let mut p = c.prepare(&[section]);
    let mut out = TurnResult::default();
    let mut results = Vec::with_capacity(n);
    for (i, step) in work.steps.iter().enumerate() {
        push_user(
            &mut p.messages,
            format!("[第 {}/{n} 步] {step}\n只做这一步。", i + 1),
        );
        p.meta.purpose = "plan-step";
        out.fold(c.round(&mut p).await);
        if p.env.choice.is_set() {
            c.log(flow, "step-asked", step, None).await;
            return finish(c, &mut p, out).await;
        }
        if let Some(err) = &out.outcome.error {
            c.log(
                flow,
                "step-failed",
                step,
                Some(serde_json::json!({ "error": err.to_string() })),
            )
            .await;
            let kept =
                c.st.update(|st| st.pending_work = Some(work.clone()))
                    .await
                    .is_ok();
            let o = &mut out.outcome;
            o.reply = format!("执行到第 {} 步（{step}）时出错了：{}", i + 1, o.reply);
            if kept {
                o.reply
                    .push_str(&format!("\n这个{cn}还保留着，回复“确认”可以重新执行。"));
            }
            return out;
        }
        let reply = std::mem::take(&mut out.outcome.reply);
        c.log(
            flow,
            "step",
            &reply,
            Some(serde_json::json!({ "step": i + 1, "of": n, "title": step })),
        )
        .await;
        push_assistant(&mut p.messages, &reply);
        results.push(reply);
    }
    push_user(
        &mut p.messages,
        format!("全部 {n} 步都做完了。请用几句话向家里人总结做了什么、结果如何。"),
    );
    p.meta.purpose = "plan-summary";
    out.fold(c.round(&mut p).await);
    if out.outcome.error.is_some() || p.env.choice.is_set() {
        p.env.choice.take();
        warn!(error = ?out.outcome.error, "plan summary failed; the step results are the reply");
        let lines: Vec<String> = results
            .iter()
            .enumerate()
            .map(|(i, r)| format!("{}. {r}", i + 1))
            .collect();
        return out.saying(format!("{cn}已执行完：\n{}", lines.join("\n")), false);
    }
    c.log(flow, "summary", &out.outcome.reply, None).await;
    out
}

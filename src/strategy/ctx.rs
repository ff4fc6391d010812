//! What every strategy flow works with: the turn's [`Ctx`] (its agent, ticket, tail and
//! strategy in force) and the small helpers the flows share (one provider call without
//! tools, message building, finishing a tool loop with a pending question). A flow ends
//! in a [`TurnResult`], its rounds folded in. The flows themselves ([`super::flows`],
//! [`super::work`], [`super::reflect`]) use this file; it uses none of them.

use super::journal::{self, clip, Entry};
use super::state::{PendingChoice, MAX_PENDING_CHOICES};
use super::{Effective, Strategies, TurnResult};
use crate::agent::{Agent, AgentOutcome, Prepared, Round, TurnCtx};
use crate::prompt::TailSection;
use crate::provider::{ChatRequest, ChatResponse, DeltaSink, Message, ProviderError};
use crate::tools::choice::{self, Asked};
use crate::tools::set_strategy::Setter;
use crate::turn::{Failure, TurnError};
use chrono::{DateTime, FixedOffset};
use std::sync::Arc;

pub(super) struct Ctx<'a> {
    pub(super) agent: &'a Agent,
    pub(super) st: &'a Strategies,
    /// The turn: its ticket, tail, words and the turn itself.
    pub(super) t: &'a TurnCtx<'a>,
    pub(super) eff: Effective,
    /// The standing strategy's `[策略]` block: the end of every request's system message
    /// (the same bytes turn after turn, a cached prefix).
    pub(super) standing: Option<TailSection>,
    /// A switched strategy's block: sent with the turn's message while it is in force
    /// (once under exact replay, while the replayed window holds it; see
    /// `Agent::prepare`), so a switch breaks no prefix.
    pub(super) block: Option<TailSection>,
    pub(super) rounds: u32,
    /// Where an accepted `set_strategy` of this turn goes.
    pub(super) setter: Arc<dyn Setter>,
}

impl Ctx<'_> {
    pub(super) fn session(&self) -> Option<&str> {
        self.t.ticket.mode.as_ref().map(|m| m.session_id.as_str())
    }
    pub(super) fn now(&self) -> DateTime<FixedOffset> {
        self.t.ticket.began_at
    }
    pub(super) fn stamp(&self) -> String {
        self.now()
            .to_rfc3339_opts(chrono::SecondsFormat::Secs, false)
    }
    pub(super) async fn log(
        &self,
        flow: &str,
        stage: &str,
        text: &str,
        detail: Option<serde_json::Value>,
    ) {
        let e = Entry {
            timestamp: self.stamp(),
            flow,
            stage,
            channel: &self.t.turn.channel,
            chat_id: &self.t.turn.chat_id,
            speaker_id: &self.t.turn.speaker_id,
            session_id: self.session(),
            text: clip(text),
            detail,
        };
        journal::append(self.st.workspace(), &e).await;
    }
    /// The turn's first request, with `sections` put in the dynamic tail; its tools may
    /// change the strategy (`set_strategy`).
    pub(super) fn prepare(&self, sections: &[TailSection]) -> Prepared {
        let mut p = self.agent.prepare(
            self.t,
            crate::prompt::StrategyBlocks {
                standing: self.standing.as_ref(),
                switched: self.block.as_ref(),
            },
            sections,
        );
        p.env.strategy = Some(self.setter.clone());
        p.depth = self.eff.depth();
        if let Some(tag) = &mut p.meta.turn {
            tag.strategy = Some(self.eff.label());
        }
        p
    }
    /// One round of the agent's tool loop at this turn's round cap: what it did, to fold
    /// into the turn's [`TurnResult`].
    pub(super) async fn round(&self, p: &mut Prepared) -> Round {
        self.agent.round(p, self.rounds).await
    }
    pub(super) fn group_asker_only(&self, anyone: bool) -> bool {
        self.t.turn.facts().audience == crate::turn::Audience::Group && !anyone
    }
}

/// Add a user message, or extend the last one if it is already the user's.
pub(super) fn push_user(messages: &mut Vec<Message>, text: String) {
    if let Some(Message::User { content }) = messages.last_mut() {
        content.push_str("\n\n");
        content.push_str(&text);
        return;
    }
    messages.push(Message::User { content: text });
}

pub(super) fn push_assistant(messages: &mut Vec<Message>, text: &str) {
    messages.push(Message::Assistant {
        content: Some(text.to_string()),
        tool_calls: vec![],
        reasoning_content: None,
        thinking: vec![],
    });
}

/// One provider call without running tools (planning, review, revision).
pub(super) async fn ask(
    agent: &Agent,
    p: &Prepared,
    purpose: &'static str,
) -> Result<ChatResponse, ProviderError> {
    ask_with(agent, p, purpose, None).await
}

/// [`ask`], its text handed to `deltas` as it streams in (a spec said as it is written).
pub(super) async fn ask_with(
    agent: &Agent,
    p: &Prepared,
    purpose: &'static str,
    deltas: Option<&dyn DeltaSink>,
) -> Result<ChatResponse, ProviderError> {
    let mut meta = p.meta.clone();
    meta.purpose = purpose;
    let req = ChatRequest {
        messages: &p.messages,
        tools: agent.tools.definitions(),
        depth: p.depth,
    };
    agent.provider.complete_with(&req, &meta, deltas).await
}

pub(super) fn failed(e: ProviderError) -> TurnResult {
    TurnResult::done(AgentOutcome {
        reply: e.user_message(),
        error: Some(TurnError::new(Failure::Provider, e.to_string())),
    })
}

pub(super) fn older_than(stamp: &str, now: DateTime<FixedOffset>, limit: chrono::Duration) -> bool {
    DateTime::parse_from_rfc3339(stamp)
        .map(|t| now - t > limit)
        .unwrap_or(true)
}

/// After a tool loop: a question asked with `ask_user_choice` becomes the reply and
/// waits in this chat (what the turn's rounds did stays in `out`).
pub(super) async fn finish(c: &Ctx<'_>, p: &mut Prepared, out: TurnResult) -> TurnResult {
    let Some(asked) = p.env.choice.take() else {
        return out;
    };
    match keep_question(c, asked).await {
        Ok(reply) => out.saying(reply, true),
        Err((reply, e)) => TurnResult {
            outcome: AgentOutcome {
                reply: format!("{reply}\n（注意：这个问题没能保存，回答时请把选项说完整。）"),
                error: Some(TurnError::new(
                    Failure::Storage,
                    format!("pending choice not saved: {e}"),
                )),
            },
            awaits_answer: true,
            ..out
        },
    }
}

/// Keep `asked` as this chat's open question (replacing any other) and word it for the
/// channel; `Err` carries the wording and why the question could not be kept.
pub(super) async fn keep_question(
    c: &Ctx<'_>,
    mut asked: Asked,
) -> Result<String, (String, String)> {
    // a question about switching remembers the modes as they stand: any switch before
    // the yes voids it
    if let Some(tag) = asked.offer.as_mut() {
        tag.asked_in = c.t.modes.status().await.ok().map(|s| s.stamp());
    }
    let reply = choice::render(
        &asked,
        c.t.turn.facts().modality,
        c.group_asker_only(asked.anyone),
    );
    let pending = PendingChoice {
        asked: asked.clone(),
        asker: c.t.turn.speaker_id.clone(),
        asked_at: c.stamp(),
    };
    let key = c.t.turn.chat_key();
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
    saved
        .map(|()| reply.clone())
        .map_err(|e| (reply, e.to_string()))
}

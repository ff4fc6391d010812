//! The tool loop of a turn: request, run the tool calls asked for (within the per-response
//! and per-turn caps), request again — until the model answers in words, asks the user a
//! question, or the round cap is reached.
//!
//! A turn with a partial-text sink has its answer said as it streams: each provider call
//! whose purpose is the turn's answer (`turn`; a strategy's drafts, reviews, plan steps
//! and summaries are named otherwise) goes through a [`speech::Answer`], which passes on
//! whole sentences while no tool call has begun in the response.

use super::{tools_called, Agent, AgentOutcome, Prepared, Round};
use crate::provider::{ChatRequest, ChatResponse, DeltaSink, Message};
use crate::speech;
use crate::tools::ToolEnv;
use crate::turn::{Failure, TurnError};
use tracing::{debug, warn};

/// The purpose of a call whose answer is the turn's reply.
const ANSWER: &str = "turn";

impl Agent {
    /// The tool loop: request, run the tool calls asked for, request again — until the
    /// model answers in words or `max_rounds` (`agent.max_tool_rounds`, or a strategy
    /// preset's) is reached. `prepared.messages` grows with every assistant message and
    /// tool result of the turn. It also stops after a response whose calls asked the
    /// user a question (`ask_user_choice`): the reply is then empty and
    /// `prepared.env.choice` holds the question.
    pub(super) async fn tool_loop(&self, prepared: &mut Prepared, max_rounds: u32) -> AgentOutcome {
        if let Some(refused) = prepared.refused.take() {
            return refused;
        }
        let Prepared {
            messages,
            env,
            meta,
            counted,
            tokens,
            partials,
            depth,
            kept,
            ..
        } = prepared;
        let partials = partials.as_ref().filter(|_| meta.purpose == ANSWER);
        let mut sent_upto = messages.len();
        let mut calls_run = 0usize;
        let mut round = 0;
        loop {
            // what this turn's rounds added counts against the window too
            *tokens = tokens.saturating_add(self.tokens_of(&messages[sent_upto..]));
            sent_upto = messages.len();
            if *tokens > self.context.input {
                return self.over_window(*tokens);
            }
            let req = ChatRequest {
                messages,
                tools: self.tools.definitions(),
                depth: *depth,
            };
            let answer = partials.map(speech::Answer::new);
            let deltas = answer.as_ref().map(|a| a as &dyn DeltaSink);
            // the first request's estimate against the usage the primary reports
            let calibrate = |reported| self.context.calibration.observe(*counted, reported);
            let calibrate = (round == 0).then_some(&calibrate as _);
            let answered = self
                .provider
                .complete_and_calibrate(&req, meta, deltas, calibrate)
                .await;
            if let Some(a) = &answer {
                a.ended(answered.as_ref().is_ok_and(|r| r.tool_calls.is_empty()));
            }
            let resp = match answered {
                Ok(r) => r,
                Err(e) => {
                    return AgentOutcome {
                        reply: e.user_message(),
                        error: Some(TurnError::new(Failure::Provider, e.to_string())),
                    }
                }
            };
            if resp.tool_calls.is_empty() {
                return in_words(resp);
            }
            if round >= max_rounds {
                return round_cap(resp, max_rounds);
            }
            round += 1;
            self.run_calls(env, messages, resp, &mut calls_run, kept)
                .await;
            if env.choice.is_set() {
                return AgentOutcome {
                    reply: String::new(),
                    error: None,
                };
            }
        }
    }

    /// What `added` (this turn's assistant messages and tool results) adds to a request.
    fn tokens_of(&self, added: &[Message]) -> u32 {
        let mut total = 0u32;
        for m in added {
            let text = match m {
                Message::Assistant {
                    content,
                    tool_calls,
                    ..
                } => {
                    let mut t = content.clone().unwrap_or_default();
                    for c in tool_calls {
                        t.push_str(&c.name);
                        t.push_str(&c.arguments);
                    }
                    t
                }
                Message::Tool { content, .. }
                | Message::User { content }
                | Message::System { content } => content.clone(),
            };
            total = total.saturating_add(
                self.context.calibration.count(&text) + crate::context::tokens::PER_MESSAGE,
            );
        }
        total
    }

    /// The turn stopped: its tool results would pass the input budget.
    fn over_window(&self, tokens: u32) -> AgentOutcome {
        let input = self.context.input;
        warn!(
            tokens,
            input, "tool results would pass the context window; turn stopped"
        );
        AgentOutcome {
            reply: "抱歉，这一轮工具返回的内容太多，超出了模型的上下文窗口，先停下来了。可以问得更具体一些再试。".into(),
            error: Some(TurnError::new(
                Failure::Context,
                format!("the tool rounds grew the request to {tokens} tokens, over the input budget of {input}"),
            )),
        }
    }

    /// Run the calls of one response (within the per-response and per-turn caps) and add
    /// the assistant message and one result per call to `messages`.
    async fn run_calls(
        &self,
        env: &ToolEnv,
        messages: &mut Vec<Message>,
        resp: ChatResponse,
        calls_run: &mut usize,
        kept: &mut Vec<crate::history::KeptResult>,
    ) {
        let per_response = self.tool_limits.max_calls_per_response;
        let per_turn = self.tool_limits.max_calls_per_turn;
        messages.push(Message::Assistant {
            content: resp.content.clone(),
            tool_calls: resp.tool_calls.clone(),
            reasoning_content: resp.reasoning_content.clone(),
            thinking: resp.thinking.clone(),
        });
        let cut_off = resp.finish_reason.as_deref() == Some("length");
        let asked = resp.tool_calls.len();
        if asked > per_response {
            warn!(
                asked,
                limit = per_response,
                "too many tool calls in one response; the rest are not run"
            );
        }
        for (i, call) in resp.tool_calls.iter().enumerate() {
            // the first refused call explains; the rest stay short, there may be thousands
            let refusal = if cut_off {
                // the arguments were cut at the output limit: running them would act on
                // half a file; tell the model instead
                Some("error: this call was cut off by the output limit (finish_reason=length) and was not run; use shorter arguments, e.g. split a long file into parts".to_string())
            } else if i == per_response {
                Some(format!("error: not run: at most {per_response} tool calls of one response are run and this response asked for {asked}; ask again for what is still needed, fewer at a time"))
            } else if i > per_response {
                Some(format!(
                    "error: not run (over {per_response} calls per response)"
                ))
            } else if *calls_run >= per_turn {
                Some(format!("error: not run: this turn has already run {per_turn} tool calls, the limit per message; answer the user with what you have"))
            } else {
                None
            };
            let content = match refusal {
                Some(content) => content,
                None => {
                    *calls_run += 1;
                    let result = self.tools.execute(env, call).await;
                    debug!(tool = %call.name, error = result.is_error, "tool call");
                    // what matters later goes in the turn's record (bounded), never
                    // replayed as a tool message
                    if !result.is_error
                        && kept.len() < crate::history::MAX_KEPT_RESULTS
                        && self.tools.keeps_result(&call.name)
                    {
                        kept.push(crate::history::KeptResult::new(&call.name, &result.content));
                    }
                    result.content
                }
            };
            messages.push(Message::Tool {
                tool_call_id: call.id.clone(),
                content,
            });
        }
    }
}

/// A response without tool calls: the turn's answer (an empty one is a failure).
fn in_words(resp: ChatResponse) -> AgentOutcome {
    let text = resp.content.unwrap_or_default().trim().to_string();
    if text.is_empty() {
        return AgentOutcome {
            reply: "抱歉，模型这次没有给出回答，请再说一次。".into(),
            error: Some(TurnError::new(
                Failure::Provider,
                "the model returned an empty answer",
            )),
        };
    }
    AgentOutcome {
        reply: text,
        error: None,
    }
}

/// The model still calls tools after `max_rounds` rounds: what it said so far, and why
/// the turn stopped.
fn round_cap(resp: ChatResponse, max_rounds: u32) -> AgentOutcome {
    warn!(rounds = max_rounds, "tool round limit reached");
    let partial = resp.content.unwrap_or_default();
    let mut reply = String::new();
    if !partial.trim().is_empty() {
        reply.push_str(partial.trim());
        reply.push_str("\n\n");
    }
    reply.push_str(&format!(
        "（抱歉，这件事我调用工具超过了 {max_rounds} 次还没办完，先停下来了。可以换个说法再试。）"
    ));
    AgentOutcome {
        reply,
        error: Some(TurnError::new(
            Failure::Provider,
            format!("tool round limit ({max_rounds}) reached"),
        )),
    }
}

impl Agent {
    /// The tool loop over `p` at `max_rounds` (see `Agent::tool_loop`), and what it did.
    pub async fn round(&self, p: &mut Prepared, max_rounds: u32) -> Round {
        let outcome = self.tool_loop(p, max_rounds).await;
        let from = p.turn_from.min(p.messages.len());
        Round {
            outcome,
            called: tools_called(&p.messages[from..]),
            sent: p.sent.clone(),
            kept: std::mem::take(&mut p.kept),
        }
    }
}

//! What the audit records of a turn's requests: the first request's shape (its blocks,
//! the history replayed, a digest of the stable prefix) and the tools called.

use crate::context::{Context, Plan};
use crate::provider::{BlockTokens, Message, PromptShape};

/// The names of the tools this turn's assistant messages called, in order.
pub fn tools_called(messages: &[Message]) -> Vec<String> {
    messages
        .iter()
        .flat_map(|m| match m {
            Message::Assistant { tool_calls, .. } => {
                tool_calls.iter().map(|c| c.name.clone()).collect()
            }
            _ => Vec::new(),
        })
        .collect()
}

/// The audit shape of a first request: its blocks with their token counts, the history
/// range replayed, and a digest of the stable prefix (tools, then every message before
/// the current user message).
pub fn prompt_shape(ctx: &Context, plan: &Plan, messages: &[Message]) -> PromptShape {
    let mut blocks = vec![("system", plan.system_tokens), ("tools", plan.tools_tokens)];
    if plan.carried.is_some() {
        blocks.push(("carried", plan.carried_tokens));
    }
    if plan.checkpoint.is_some() {
        blocks.push(("checkpoint", plan.checkpoint_tokens));
    }
    blocks.push(("history", plan.history_tokens));
    blocks.push(("tail", plan.tail_tokens));
    let mut h = ctx.tools_hash();
    for m in &messages[..messages.len().saturating_sub(1)] {
        let (role, text) = match m {
            Message::System { content } => ("system", content.as_str()),
            Message::User { content } => ("user", content.as_str()),
            Message::Assistant { content, .. } => {
                ("assistant", content.as_deref().unwrap_or_default())
            }
            Message::Tool { content, .. } => ("tool", content.as_str()),
        };
        h = crate::context::fnv1a(h, role.as_bytes());
        h = crate::context::fnv1a(h, text.as_bytes());
    }
    PromptShape {
        blocks: blocks
            .into_iter()
            .map(|(name, tokens)| BlockTokens {
                name: name.into(),
                tokens: u64::from(tokens),
            })
            .collect(),
        history_from: plan.from,
        history_to: plan.to,
        compacted_through: plan.checkpoint.as_ref().map(|c| c.through),
        snippets: Vec::new(),
        aside: false,
        prefix_hash: format!("{h:016x}"),
        memories_scene: Vec::new(),
        memories_wording: Vec::new(),
        knowledge: Vec::new(),
    }
}

/// The memories a first request recalled, into its audit shape: their ids by recall, and
/// each recall block's tokens as a block of its own (`memory_scene`, `memory_wording`),
/// counted out of the `tail` that holds them, so the blocks still add up to the request.
pub fn with_recall(shape: &mut PromptShape, recalled: super::recall::RecallAudit) {
    shape.memories_scene = recalled.scene;
    shape.memories_wording = recalled.wording;
    for (name, tokens) in [
        ("memory_scene", recalled.scene_tokens),
        ("memory_wording", recalled.wording_tokens),
    ] {
        out_of_tail(shape, name, tokens);
    }
}

/// A block the current message sent, `tokens` of it, as a block of its own named `name`
/// (`tool_results` for the `[工具结果]` block), counted out of the `tail` that holds it,
/// so the blocks still add up to the request. Nothing when it sent none.
pub fn out_of_tail(shape: &mut PromptShape, name: &str, tokens: u32) {
    let tokens = u64::from(tokens);
    if tokens == 0 {
        return;
    }
    let Some(tail) = shape.blocks.iter_mut().find(|b| b.name == "tail") else {
        return;
    };
    let tokens = tokens.min(tail.tokens);
    tail.tokens -= tokens;
    shape.blocks.push(BlockTokens {
        name: name.into(),
        tokens,
    });
}

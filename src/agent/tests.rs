//! The prompt shape the audit trail records.
use super::*;
use crate::context::{Context, Plan};
use crate::provider::Message;

#[test]
fn the_shape_names_blocks_in_order_and_hashes_only_the_stable_prefix() {
    let ctx = Context::new(8192, 7168, &[]);
    let plan = Plan {
        from: 3,
        to: 9,
        system_tokens: 100,
        tools_tokens: 50,
        history_tokens: 300,
        tail_tokens: 20,
        ..Plan::default()
    };
    let user = |c: &str| Message::User { content: c.into() };
    let sys = Message::System {
        content: "系统".into(),
    };
    let a = prompt_shape(&ctx, &plan, &[sys.clone(), user("早"), user("现在 1")]);
    let b = prompt_shape(&ctx, &plan, &[sys.clone(), user("早"), user("现在 2")]);
    let names: Vec<&str> = a.blocks.iter().map(|b| b.name.as_str()).collect();
    assert_eq!(names, ["system", "tools", "history", "tail"]);
    assert_eq!(a.blocks[2].tokens, 300);
    assert_eq!(
        (a.history_from, a.history_to, a.compacted_through),
        (3, 9, None)
    );
    assert_eq!(
        a.prefix_hash, b.prefix_hash,
        "the current message is not in the prefix"
    );
    assert_eq!(a.prefix_hash.len(), 16);
    let c = prompt_shape(&ctx, &plan, &[sys, user("晚"), user("现在 1")]);
    assert_ne!(a.prefix_hash, c.prefix_hash);
}

//! The examples a mode learned ([`crate::modes::examples`]), from a chat: `/examples
//! [MODE]` lists the kept cases (the command line's listing, in the household's
//! language), `/examples forget ID` forgets one, `/good` keeps the chat's last answer in
//! the mode session, and `/good CHANNEL CHAT_ID` another chat's (what the dashboard's
//! keep button runs, as the owner).
//!
//! Who may ([`may_list`], [`may_forget`]): the kept cases are the household's, shown to
//! every later session of the mode, like the mode itself — so forgetting one is allowed
//! as changing the mode is (`/mode`: the channel's rule for the sender,
//! `Turn::may_switch_modes`), and only to someone the channel places: a household member,
//! or the owner (the terminal, the dashboard); a guest or an unknown sender never, even
//! where the channel lets anyone switch modes. Listing them is for members and the owner
//! too (a case names the chat it was said in). Keeping another chat's answer is the
//! owner's alone: the chat's own people keep theirs with `/good` or a thanks.

use super::{usage, Context};
use crate::config::Language;
use crate::modes::examples::{cli, ExampleStore, Judged};
use crate::modes::mode_core::examples::Good;
use crate::turn::{ChatRef, Failure, Refusal, Reply, Trust};

/// Who sent the command: the channel's word for the sender, the owner from no chat (the
/// kernel's own `command`).
fn trust(ctx: &Context<'_>) -> Trust {
    ctx.turn.map_or(Trust::Owner, |t| t.facts().trust)
}

/// Whether a sender the channel vouches for as `trust` may see the kept cases.
pub fn may_list(trust: Trust) -> bool {
    trust != Trust::Guest
}

/// Whether a sender the channel vouches for as `trust`, and lets switch modes here or
/// not (`may_switch`), may forget a kept case.
pub fn may_forget(trust: Trust, may_switch: bool) -> bool {
    match trust {
        Trust::Owner => true,
        Trust::Member => may_switch,
        Trust::Guest => false,
    }
}

/// The words in the household's language.
fn say(ctx: &Context<'_>, zh: &str, en: &str) -> String {
    match ctx.language {
        Language::Zh => zh.to_string(),
        Language::En => en.to_string(),
    }
}

fn refused(ctx: &Context<'_>, zh: &str, en: &str, why: &str) -> Reply {
    Reply::refused(say(ctx, zh, en), Refusal::Command, why.to_string())
}

/// `/examples [MODE]`.
pub(super) async fn list(ctx: &Context<'_>, mode: Option<String>) -> Reply {
    if !may_list(trust(ctx)) {
        return refused(
            ctx,
            "记下的例子只给家里人看。",
            "The kept examples are for the household only.",
            "examples listed by a guest",
        );
    }
    if let Some(m) = mode.as_deref().filter(|m| !crate::config::is_safe_id(m)) {
        let m: String = m.chars().take(40).collect();
        return refused(
            ctx,
            &format!("“{m}”不是模式编号（/help 里有可用的 mode_id）。"),
            &format!("\"{m}\" is not a mode id (/help lists them)."),
            "not a mode id",
        );
    }
    let store = ExampleStore::new(ctx.workspace);
    let language = ctx.language;
    match tokio::task::spawn_blocking(move || cli::render_in(&store, mode.as_deref(), language))
        .await
    {
        Ok(text) => Reply::ok(text),
        Err(e) => Reply::failed(
            say(ctx, "例子暂时看不了。", "The examples cannot be read now."),
            Failure::Internal,
            e.to_string(),
        ),
    }
}

/// `/examples forget ID`.
pub(super) async fn forget(ctx: &Context<'_>, id: Option<String>, may_switch: bool) -> Reply {
    if !may_forget(trust(ctx), may_switch) {
        return refused(
            ctx,
            "你在这里没有忘掉例子的权限（家里人、能切换模式的人才行）。",
            "You may not forget examples here (household members who may switch modes can).",
            "example forget not permitted for this sender",
        );
    }
    let Some(id) = id else {
        return usage(&say(
            ctx,
            "用法: /examples forget <编号>（如 cooking-3，/examples 列出编号）",
            "usage: /examples forget <id> (like cooking-3; /examples lists them)",
        ));
    };
    let store = ExampleStore::new(ctx.workspace);
    let target = id.clone();
    match tokio::task::spawn_blocking(move || store.forget(&target)).await {
        Ok(Ok(true)) => Reply::ok(say(
            ctx,
            &format!("已忘掉例子 {id}。"),
            &format!("Example {id} forgotten."),
        )),
        Ok(Ok(false)) => refused(
            ctx,
            &format!("没有例子 {id}（/examples 列出现有的）。"),
            &format!("There is no example {id} (/examples lists them)."),
            "no such example",
        ),
        Ok(Err(e)) => Reply::failed(
            say(
                ctx,
                &format!("没能忘掉 {id}：{e}"),
                &format!("Could not forget {id}: {e}"),
            ),
            Failure::Storage,
            e.to_string(),
        ),
        Err(e) => Reply::failed(
            say(ctx, "没能忘掉这个例子。", "Could not forget the example."),
            Failure::Internal,
            e.to_string(),
        ),
    }
}

/// `/good`: keep the chat's last answer in the mode session as an example.
pub(super) async fn good(ctx: &Context<'_>) -> Reply {
    let Some(turn) = ctx.turn else {
        return usage("/good 只能在对话里用：紧接在要保留的回答之后。");
    };
    match ctx.modes.mark_good(&turn.channel, &turn.chat_id).await {
        Ok(Good::Kept(id)) => Reply::ok(format!("记下了，这个回答会作为本模式的例子（{id}）。")),
        Ok(Good::Private) => Reply::ok("私聊里的对话不会被记作例子：模式里的例子大家都看得到。"),
        Ok(Good::Nothing) => Reply::ok(
            "没有可以记下的回答：/good 要紧接在模式里的一个回答之后，而且这个模式要开启了例子。",
        ),
        Ok(Good::Failed) => not_kept(),
        Err(e) => Reply::failed(format!("没能记下：{e}"), Failure::Internal, e.to_string()),
    }
}

fn not_kept() -> Reply {
    Reply::failed(
        "没能记下这个例子（见 /status 的警告）。",
        Failure::Storage,
        "example not kept",
    )
}

/// `/good CHANNEL CHAT_ID`: the owner keeps another chat's last answer in the mode
/// session ([`Judged::Dashboard`]).
pub(super) async fn good_in(ctx: &Context<'_>, chat: Option<ChatRef>) -> Reply {
    if trust(ctx) != Trust::Owner {
        return refused(
            ctx,
            "只有主人能记下别的对话里的回答（在网页上或终端里）；在这里说 /good 记下这里的。",
            "Only the owner keeps another chat's answer (from the dashboard or the terminal); say /good to keep this chat's.",
            "keeping another chat's answer needs the owner",
        );
    }
    let Some(c) = chat else {
        return usage(&say(
            ctx,
            "用法: /good <频道> <对话编号>（网页上“记作例子”用的就是它）",
            "usage: /good <channel> <chat id> (what the dashboard's keep button sends)",
        ));
    };
    let (ch, chat) = (&c.channel, &c.chat_id);
    let judged = Judged::Dashboard;
    match ctx.modes.keep_candidate(ch, chat, judged).await {
        Ok(Good::Kept(id)) => Reply::ok(say(
            ctx,
            &format!("记下了：{ch}/{chat} 的回答作为本模式的例子（{id}）。"),
            &format!("Kept: the answer in {ch}/{chat} is now an example of the mode ({id})."),
        )),
        Ok(Good::Private) => refused(
            ctx,
            &format!("{ch}/{chat} 是私聊：只有提问的人听到了回答，不能记作例子（模式里的例子大家都看得到）。"),
            &format!("{ch}/{chat} is a private chat: only its asker heard the answer, so it is not kept (a mode's examples are shown to everyone)."),
            "a private chat's answer is never kept",
        ),
        Ok(Good::Nothing) => refused(
            ctx,
            &format!("{ch}/{chat} 没有可以记下的回答：它在当前模式会话里的上一个回答已经记下或已过去，或者这个模式不记例子。"),
            &format!("{ch}/{chat} has no answer to keep: its last answer in the current mode session was kept or is past, or the mode keeps no examples."),
            "no candidate",
        ),
        Ok(Good::Failed) => not_kept(),
        Err(e) => Reply::failed(format!("没能记下：{e}"), Failure::Internal, e.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_guest_may_neither_list_nor_forget_and_a_member_forgets_where_they_may_switch() {
        assert!(!may_list(Trust::Guest));
        assert!(may_list(Trust::Member) && may_list(Trust::Owner));
        for may_switch in [true, false] {
            assert!(!may_forget(Trust::Guest, may_switch));
            assert!(may_forget(Trust::Owner, may_switch));
        }
        assert!(may_forget(Trust::Member, true));
        assert!(!may_forget(Trust::Member, false));
    }
}

//! A message event, read: whether it may reach the bot (access policy, addressing), who
//! speaks, where the answer goes, and the turn it becomes — or the short greeting an
//! empty mention gets. Pure: the QQ actor (`actor`) submits the turn and queues the reply.

use super::events::MessageEvent;
use super::id::Id;
use super::marker;
use super::message::{self, Addressed};
use super::target::Target;
use crate::config::{Access, Config, QqConfig, QqPolicy, QqSwitchPolicy};
use crate::turn::{Audience, Facts, Modality, Trust, Turn};
use tracing::{debug, info, warn};

/// The channel name turns carry.
pub const CHANNEL: &str = "qq";

/// What QQ vouches for: a group's every member reads the reply, a private chat is one
/// person's; a member only when the household mapped the sender; the chat's own scene.
pub fn facts(target: &Target, member: bool) -> Facts {
    let (audience, memory_peer) = match target {
        Target::Group { group_id, .. } => (Audience::Group, format!("group_{group_id}")),
        Target::Private { user_id } => (Audience::Private, format!("private_{user_id}")),
    };
    Facts {
        audience,
        modality: Modality::Text,
        trust: if member { Trust::Member } else { Trust::Guest },
        memory_peer: Some(memory_peer),
        place: None,
        scenes: Vec::new(),
    }
}

/// A QQ turn of the chat `chat_key` (`group:<id>` or `private:<id>`) by `speaker`, as
/// the channel builds it (a household member unless the speaker is a guest) — for
/// callers outside a OneBot event (tests, benches, the demo). A key that is no QQ chat
/// is nobody's audience and has no scene.
pub fn turn(
    chat_key: impl Into<String>,
    speaker: impl Into<String>,
    text: impl Into<String>,
) -> Turn {
    let (chat_key, speaker) = (chat_key.into(), speaker.into());
    let member = !speaker.is_empty() && speaker != crate::turn::facts::GUEST;
    let facts = match Target::parse(&chat_key) {
        Ok(target) => facts(&target, member),
        Err(_) => Facts {
            trust: if member { Trust::Member } else { Trust::Guest },
            ..Facts::default()
        },
    };
    Turn::new(CHANNEL, chat_key, speaker, text, facts)
}

/// A message the bot answers.
pub struct Incoming {
    /// Where the answer goes.
    pub target: Target,
    /// The turn for the kernel; `None` for only a mention, no words (a short "I'm here").
    pub turn: Option<Turn>,
}

/// Read a message event for `self_id`; `None` when the bot does not answer it (not
/// allowed, not addressed, its own, unreadable). `bot_message` says whether a message id
/// is one the bot sent (a reply to it addresses the bot).
pub fn read(
    cfg: &QqConfig,
    household: &Config,
    self_id: &str,
    ev: MessageEvent,
    bot_message: impl Fn(&Id) -> bool,
) -> Option<Incoming> {
    let (user_id, body, group) = match ev {
        MessageEvent::Group(g) => (g.user_id, g.body, Some((g.group_id, g.message_id))),
        MessageEvent::Private(p) => (p.user_id, p.body, None),
        MessageEvent::Other => {
            debug!(self_id, "qq: message type not handled");
            return None;
        }
    };
    if user_id == *self_id {
        return None; // our own messages
    }
    let segs = match body.segments() {
        Ok(s) => s,
        Err(e) => {
            warn!(self_id, error = %e, "qq: unreadable message ignored");
            return None;
        }
    };
    let member = household.member_for(user_id.as_str()).map(|m| m.id.clone());
    let sender = Sender {
        self_id,
        user_id: &user_id,
        member: member.as_deref(),
    };
    let target = match group {
        Some((group_id, message_id)) => {
            sender.in_group(cfg, group_id, message_id, &segs, bot_message)?
        }
        None => sender.in_private(cfg)?,
    };
    let text = message::plain_text(&segs, self_id);
    // a leading `#不记` / `#记` is the message's own scene policy, never its words
    let (marked, words) = marker::scene_marker(&text);
    if words.is_empty() {
        return Some(Incoming { target, turn: None });
    }
    let mut turn = sender.turn(cfg, &target, words.to_string());
    turn.scene_policy = marker::policy(&household.memory, &target, marked);
    Some(Incoming {
        target,
        turn: Some(turn),
    })
}

/// Who sent a message, as the bot `self_id` sees them.
struct Sender<'a> {
    self_id: &'a str,
    user_id: &'a Id,
    /// The household member the sender is, through the `qq_ids` mapping.
    member: Option<&'a str>,
}

impl Sender<'_> {
    /// Where the answer to a group message goes, if the group may reach the bot and the
    /// message is for it.
    fn in_group(
        &self,
        cfg: &QqConfig,
        group_id: Id,
        message_id: Option<Id>,
        segs: &[message::Segment],
        bot_message: impl Fn(&Id) -> bool,
    ) -> Option<Target> {
        let self_id = self.self_id;
        if !allowed(&cfg.groups, group_id.as_str(), false) {
            debug!(self_id, group = %group_id, "qq: group not allowed; ignored");
            return None;
        }
        if message::addressed(segs, self_id, bot_message) == Addressed::No {
            return None;
        }
        Some(Target::Group {
            group_id,
            reply_to: message_id,
            mention: Some(self.user_id.clone()),
        })
    }

    /// Where the answer to a private message goes, if the sender may reach the bot.
    fn in_private(&self, cfg: &QqConfig) -> Option<Target> {
        let user_id = self.user_id;
        if !allowed(&cfg.private, user_id.as_str(), self.member.is_some()) {
            info!(self_id = self.self_id, user = %user_id, "qq: private sender not allowed; denied");
            return None;
        }
        Some(Target::Private {
            user_id: user_id.clone(),
        })
    }

    /// The turn of the sender's words, answered at `target`.
    fn turn(&self, cfg: &QqConfig, target: &Target, text: String) -> Turn {
        let member = self.member;
        let speaker = member.map_or_else(|| format!("qq:{}", self.user_id), str::to_string);
        let may_switch = match (target, cfg.mode_switch) {
            (Target::Private { .. }, _) => true,
            (_, QqSwitchPolicy::Any) => true,
            (_, QqSwitchPolicy::Members) => member.is_some(),
            (_, QqSwitchPolicy::Nobody) => false,
        };
        // a member only through the household's qq_ids mapping
        let mut turn = Turn::new(
            CHANNEL,
            target.key(),
            speaker,
            text,
            facts(target, member.is_some()),
        );
        turn.may_switch_modes = may_switch;
        turn.reply_to = Some(target.outbound());
        turn
    }
}

/// Whether a group (or a private sender) may reach the bot.
pub fn allowed(p: &QqPolicy, id: &str, is_member: bool) -> bool {
    match p.policy {
        Access::Open => true,
        Access::Allowlist => is_member || p.allow.iter().any(|a| a == id),
        Access::Disabled => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn policies() {
        let allow = QqPolicy {
            policy: Access::Allowlist,
            allow: vec!["1".into()],
        };
        assert!(allowed(&allow, "1", false));
        assert!(!allowed(&allow, "2", false));
        assert!(
            allowed(&allow, "2", true),
            "household members are known senders"
        );
        let off = QqPolicy {
            policy: Access::Disabled,
            allow: vec!["1".into()],
        };
        assert!(!allowed(&off, "1", true));
        let open = QqPolicy {
            policy: Access::Open,
            allow: vec![],
        };
        assert!(allowed(&open, "9", false));
    }
}

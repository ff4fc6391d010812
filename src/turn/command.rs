//! [`Command`]: the slash commands, parsed once where a turn is admitted. Channels send
//! them as text (`/mode exit`); the dashboard and the command line build them typed and
//! send their canonical text ([`Command`]'s `Display`), which parses back to the same
//! command.

use std::fmt;

/// A parsed slash command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Command {
    Enter(Option<String>),
    Exit(Option<String>),
    Status,
    /// `/reminders` (pending), `/reminders all`, `/reminders cancel <id>`.
    Reminders {
        all: bool,
    },
    CancelReminder(Option<u32>),
    /// `/strategy` (show) or `/strategy NAME | PRESET | custom TEXT`; the rest of the line.
    Strategy(String),
    /// `/why`, or the spoken "你为什么这么说": what the chat's last answer was made of.
    Why,
    /// `/good`: the chat's last answer in the mode session is an example worth keeping.
    Good,
    /// `/good CHANNEL CHAT_ID` (the owner, as the dashboard's keep button does): that
    /// chat's last answer in the mode session. `None`: words that name no chat (usage).
    GoodIn(Option<ChatRef>),
    /// `/examples [MODE]`: the examples the modes kept (one mode's).
    Examples(Option<String>),
    /// `/examples forget ID`. `None`: no case id (`<mode_id>-<n>`) given (usage).
    ForgetExample(Option<String>),
    Help,
}

/// The longest chat id a command names.
pub const MAX_CHAT_ID: usize = 256;

/// A chat another chat's command names (`/good CHANNEL CHAT_ID`): a channel's name and a
/// chat id, each one word, bounded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChatRef {
    pub channel: String,
    pub chat_id: String,
}

impl ChatRef {
    /// The chat `channel`/`chat_id`, if both can be named in a command: the channel a
    /// safe id of at most 64 characters, the chat id at most [`MAX_CHAT_ID`] characters
    /// without spaces or control characters.
    pub fn new(channel: &str, chat_id: &str) -> Option<Self> {
        let channel_ok = channel.len() <= 64 && crate::config::is_safe_id(channel);
        let chat_ok = !chat_id.is_empty()
            && chat_id.chars().count() <= MAX_CHAT_ID
            && !chat_id.chars().any(|c| c.is_whitespace() || c.is_control());
        (channel_ok && chat_ok).then(|| Self {
            channel: channel.to_string(),
            chat_id: chat_id.to_string(),
        })
    }
}

impl Command {
    /// Parse `text` (which starts with `/`). Anything unknown is `Help`.
    pub fn parse(text: &str) -> Self {
        let words: Vec<&str> = text.split_whitespace().collect();
        if words.first() == Some(&"/strategy") {
            let rest = text.trim_start().trim_start_matches("/strategy");
            return Command::Strategy(rest.trim().to_string());
        }
        match words.as_slice() {
            ["/mode", "enter"] => Command::Enter(None),
            ["/mode", "enter", id] => Command::Enter(Some(id.to_string())),
            ["/mode", "exit"] => Command::Exit(None),
            ["/mode", "exit", id] => Command::Exit(Some(id.to_string())),
            ["/mode"] | ["/mode", "status"] | ["/status"] => Command::Status,
            ["/why"] => Command::Why,
            ["/good"] => Command::Good,
            ["/good", channel, chat_id] => Command::GoodIn(ChatRef::new(channel, chat_id)),
            ["/good", ..] => Command::GoodIn(None),
            ["/examples", "forget"] => Command::ForgetExample(None),
            ["/examples", "forget", id] => Command::ForgetExample(
                Some(id.to_string()).filter(|id| crate::modes::examples::is_case_id(id)),
            ),
            ["/examples"] => Command::Examples(None),
            ["/examples", mode] => Command::Examples(Some(mode.to_string())),
            ["/reminders"] => Command::Reminders { all: false },
            ["/reminders", "all"] | ["/reminders", "--all"] => Command::Reminders { all: true },
            ["/reminders", "cancel", id] => {
                Command::CancelReminder(id.trim_start_matches('#').parse().ok())
            }
            _ => Command::Help,
        }
    }

    pub fn switches(&self) -> bool {
        matches!(self, Command::Enter(_) | Command::Exit(_))
    }
}

impl Command {
    /// The command `text` is, when it is one (it starts with `/`).
    pub fn of(text: &str) -> Option<Self> {
        text.starts_with('/').then(|| Self::parse(text))
    }
}

impl From<&str> for Command {
    fn from(text: &str) -> Self {
        Self::parse(text)
    }
}

/// The canonical text of a command; [`Command::parse`] reads it back as the same command.
impl From<&String> for Command {
    fn from(text: &String) -> Self {
        Self::parse(text)
    }
}

impl fmt::Display for Command {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Command::Enter(None) => f.write_str("/mode enter"),
            Command::Enter(Some(id)) => write!(f, "/mode enter {id}"),
            Command::Exit(None) => f.write_str("/mode exit"),
            Command::Exit(Some(id)) => write!(f, "/mode exit {id}"),
            Command::Status => f.write_str("/status"),
            Command::Reminders { all: false } => f.write_str("/reminders"),
            Command::Reminders { all: true } => f.write_str("/reminders all"),
            // not a number: parsed back as a cancel without an id (its usage line)
            Command::CancelReminder(None) => f.write_str("/reminders cancel ?"),
            Command::CancelReminder(Some(id)) => write!(f, "/reminders cancel {id}"),
            Command::Strategy(arg) if arg.is_empty() => f.write_str("/strategy"),
            Command::Strategy(arg) => write!(f, "/strategy {arg}"),
            Command::Why => f.write_str("/why"),
            Command::Good => f.write_str("/good"),
            Command::GoodIn(Some(c)) => write!(f, "/good {} {}", c.channel, c.chat_id),
            // names no chat: parsed back as a keep without one (its usage line)
            Command::GoodIn(None) => f.write_str("/good ?"),
            Command::Examples(None) => f.write_str("/examples"),
            Command::Examples(Some(mode)) => write!(f, "/examples {mode}"),
            Command::ForgetExample(None) => f.write_str("/examples forget ?"),
            Command::ForgetExample(Some(id)) => write!(f, "/examples forget {id}"),
            Command::Help => f.write_str("/help"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_command_reads_back_from_its_text() {
        let all = [
            Command::Enter(None),
            Command::Enter(Some("cooking".into())),
            Command::Exit(None),
            Command::Exit(Some("cooking".into())),
            Command::Status,
            Command::Reminders { all: false },
            Command::Reminders { all: true },
            Command::CancelReminder(None),
            Command::CancelReminder(Some(7)),
            Command::Strategy(String::new()),
            Command::Strategy("custom 回答前先说“收到”".into()),
            Command::Why,
            Command::Good,
            Command::GoodIn(ChatRef::new("qq", "group:5550001")),
            Command::GoodIn(None),
            Command::Examples(None),
            Command::Examples(Some("cooking".into())),
            Command::ForgetExample(None),
            Command::ForgetExample(Some("cooking-3".into())),
            Command::Help,
        ];
        for c in all {
            assert_eq!(Command::parse(&c.to_string()), c, "{c}");
        }
        assert_eq!(Command::of("你好"), None);
        assert_eq!(Command::of("/mode exit"), Some(Command::Exit(None)));
    }

    #[test]
    fn example_commands_check_their_ids_where_they_come_in() {
        let forget = |t: &str| Command::parse(t);
        assert_eq!(
            forget("/examples forget cooking-3"),
            Command::ForgetExample(Some("cooking-3".into()))
        );
        assert_eq!(forget("/examples  forget"), Command::ForgetExample(None));
        let long = format!("/examples forget {}-1", "m".repeat(200));
        for bad in [
            "/examples forget cooking",
            "/examples forget ../x-1",
            "/examples forget cooking-1x",
            long.as_str(),
        ] {
            assert_eq!(forget(bad), Command::ForgetExample(None), "{bad}");
        }
        assert_eq!(forget("/examples forget a b"), Command::Help);
        assert_eq!(forget("/examples"), Command::Examples(None));
        assert_eq!(
            forget("/examples cooking"),
            Command::Examples(Some("cooking".into()))
        );
        let good = |t: &str| Command::parse(t);
        assert_eq!(good("/good"), Command::Good);
        let named = good("/good qq group:5550001");
        assert_eq!(
            named,
            Command::GoodIn(Some(ChatRef {
                channel: "qq".into(),
                chat_id: "group:5550001".into()
            }))
        );
        let long_chat = format!("/good qq {}", "1".repeat(MAX_CHAT_ID + 1));
        for bad in [
            "/good 这个",
            "/good ../x group:1",
            "/good a b c",
            long_chat.as_str(),
        ] {
            assert_eq!(good(bad), Command::GoodIn(None), "{bad}");
        }
        assert!(ChatRef::new("qq", "group 1").is_none());
        assert!(ChatRef::new("qq", "").is_none());
        assert!(ChatRef::new("qq", "a\u{7}b").is_none());
        assert!(ChatRef::new("qq", &"1".repeat(MAX_CHAT_ID)).is_some());
    }
}

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
    Help,
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
            Command::Help,
        ];
        for c in all {
            assert_eq!(Command::parse(&c.to_string()), c, "{c}");
        }
        assert_eq!(Command::of("你好"), None);
        assert_eq!(Command::of("/mode exit"), Some(Command::Exit(None)));
    }
}

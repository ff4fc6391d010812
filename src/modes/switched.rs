//! Typed outcomes of a mode switch. The mode API returns these, never strings; the text a
//! user or the model reads is rendered at the edge (their `Display`, used by the
//! `switch_mode` tool result and the `/mode` command reply).

use super::mode_core::ModeError;
use super::switch::WordsRefusal;
use std::fmt;
use std::path::PathBuf;

/// What a switch did.
#[derive(Debug, Clone, PartialEq)]
pub enum Switched {
    Entered {
        mode_id: String,
        display_name: String,
        session_id: String,
        session_dir: PathBuf,
        /// A sub-mode: the parent it paused (its display name).
        paused: Option<String>,
    },
    /// The exit is recorded; the session is archived once this turn (and any other
    /// in-flight turn of the session) has been recorded.
    ExitRequested {
        mode_id: String,
        display_name: String,
        /// A sub-mode: the parent that then runs again.
        returns_to: Option<String>,
    },
    /// Archived already (nothing of the session was in flight).
    Exited {
        mode_id: String,
        display_name: String,
        session_id: String,
        /// A sub-mode: the parent that runs again.
        returns_to: Option<String>,
    },
    AlreadyEnding {
        mode_id: String,
        display_name: String,
    },
}

/// Why a switch changed nothing.
#[derive(Debug, thiserror::Error)]
pub enum SwitchError {
    /// Not allowed, or not meant: the reason goes back to the model / the user.
    #[error("{0}")]
    Refused(Refusal),
    /// Allowed but it could not be done (a file could not be written).
    #[error("failed: {0}")]
    Failed(#[from] ModeError),
    /// Entering could not be done (the new session's folder or `action.json` could not be
    /// written); nothing changed — a sub-mode's parent (`goes_on`) runs on as it was.
    #[error("{}", not_entered(.display_name, .goes_on.as_deref(), .source))]
    NotEntered {
        display_name: String,
        goes_on: Option<String>,
        source: ModeError,
    },
}

fn not_entered(display_name: &str, goes_on: Option<&str>, source: &ModeError) -> String {
    let rest = match goes_on {
        Some(p) => format!("{p}照常进行，它的会话没有变"),
        None => "什么都没有改变".to_string(),
    };
    format!(
        "failed: {display_name} could not be entered ({source}). {display_name}没能打开（保存会话时出错）；{rest}。"
    )
}

impl From<Refusal> for SwitchError {
    fn from(r: Refusal) -> Self {
        SwitchError::Refused(r)
    }
}

#[derive(Debug, Clone, PartialEq)]
pub enum Refusal {
    UnknownMode {
        id: String,
        available: Vec<String>,
    },
    ModeNeeded {
        available: Vec<String>,
    },
    NoActiveMode,
    NotActive {
        requested: String,
        active_id: String,
        active_name: String,
    },
    AlreadyIn {
        display_name: String,
        session_id: String,
    },
    OtherActive {
        display_name: String,
    },
    StillArchiving {
        display_name: String,
    },
    /// A sub-mode is entered only while its parent runs.
    ParentNotActive {
        display_name: String,
        parent_name: String,
    },
    /// The user's own words do not ask for the switch.
    Words(WordsRefusal),
    /// The channel does not let this sender switch modes here.
    NotPermitted,
}

impl fmt::Display for Switched {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Switched::Entered {
                mode_id,
                display_name,
                session_id,
                session_dir,
                paused,
            } => {
                write!(
                    f,
                    "ok: entered {mode_id} (session {session_id}). 已进入{display_name}。会话目录: {}。从现在起，对话会记录到本模式会话中，跨频道、跨唤醒延续。",
                    session_dir.display()
                )?;
                match paused {
                    Some(p) => write!(
                        f,
                        "{p}已暂停（不归档）；结束{display_name}或说“回到{p}”时，{display_name}的结论会带回{p}，接着原来的会话。"
                    ),
                    None => Ok(()),
                }
            }
            Switched::ExitRequested {
                mode_id,
                display_name,
                returns_to,
            } => {
                write!(
                    f,
                    "ok: {mode_id} will end after this reply; the session is archived with a summary. 已请求退出{display_name}，本轮回复后归档。"
                )?;
                match returns_to {
                    Some(p) => write!(
                        f,
                        "之后回到{p}，接着原来的会话，{display_name}的结论会带回去。"
                    ),
                    None => Ok(()),
                }
            }
            Switched::Exited {
                mode_id,
                display_name,
                session_id,
                returns_to,
            } => {
                write!(
                    f,
                    "ok: {mode_id} ended; session {session_id} archived with a summary. 已退出{display_name}，本次会话已归档。"
                )?;
                match returns_to {
                    Some(p) => write!(f, "已回到{p}，接着原来的会话，{display_name}的结论已带回。"),
                    None => Ok(()),
                }
            }
            Switched::AlreadyEnding {
                mode_id,
                display_name,
            } => write!(
                f,
                "ok: {mode_id} is already ending. {display_name}正在结束。"
            ),
        }
    }
}

impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Refusal::UnknownMode { id, available } => write!(
                f,
                "refused: unknown mode {id:?}. 可用模式: {}",
                available.join(", ")
            ),
            Refusal::ModeNeeded { available } => write!(
                f,
                "refused: which mode? 需要 mode_id，可用模式: {}",
                available.join(", ")
            ),
            Refusal::NoActiveMode => write!(f, "refused: no mode is active. 当前没有活动模式。"),
            Refusal::NotActive {
                requested,
                active_id,
                active_name,
            } => write!(
                f,
                "refused: {requested:?} is not active; the active mode is {active_id} ({active_name}). 当前活动的是{active_name}。"
            ),
            Refusal::AlreadyIn {
                display_name,
                session_id,
            } => write!(
                f,
                "refused: already in {display_name}. 已经在{display_name}中（会话 {session_id}）。"
            ),
            Refusal::OtherActive { display_name } => write!(
                f,
                "refused: {display_name} is active; only one mode at a time. 当前已在{display_name}中，一次只能有一个模式，请先退出{display_name}。"
            ),
            Refusal::StillArchiving { display_name } => write!(
                f,
                "refused: {display_name} is still being archived; try again in a moment. 上一个模式正在结束归档，请稍后再试。"
            ),
            Refusal::ParentNotActive {
                display_name,
                parent_name,
            } => write!(
                f,
                "refused: {display_name} is a sub-mode of {parent_name}; it is entered only while {parent_name} is active. {display_name}是{parent_name}的子模式，只能在{parent_name}里打开：请先说“打开{parent_name}”。"
            ),
            Refusal::Words(w) => write!(f, "{w}"),
            Refusal::NotPermitted => write!(
                f,
                "refused: this sender may not switch modes in this chat (channel permission). 这位成员在这个群里没有切换模式的权限。"
            ),
        }
    }
}

//! Where a QQ message goes: a group (quoting a message, @-ing someone) or a person; the
//! chat key a delivery queue is kept under, and the outbound door's target syntax.

use super::id::{Id, IdError};

/// Where a delivery goes.
#[derive(Debug, Clone, PartialEq)]
pub enum Target {
    Group {
        group_id: Id,
        /// The message to quote (first part only).
        reply_to: Option<Id>,
        /// Who to @ (first part only).
        mention: Option<Id>,
    },
    Private {
        user_id: Id,
    },
}

/// Why a door target is not a QQ target.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TargetError {
    #[error("expected group:<id>, group:<id>@<qq> or private:<id>")]
    Syntax,
    #[error("the id must be a QQ number (1 to 20 digits)")]
    NotANumber,
    #[error(transparent)]
    Id(#[from] IdError),
}

impl Target {
    /// The chat key: `group:<id>` or `private:<id>`.
    pub fn key(&self) -> String {
        match self {
            Target::Group { group_id, .. } => format!("group:{group_id}"),
            Target::Private { user_id } => format!("private:{user_id}"),
        }
    }

    /// An outbound door's target: `group:<id>`, `group:<id>@<qq>` (that member is @-ed,
    /// as a reminder to the one who set it) or `private:<id>`, ids QQ numbers.
    pub fn parse(s: &str) -> Result<Self, TargetError> {
        let (kind, rest) = s.split_once(':').ok_or(TargetError::Syntax)?;
        let number = |id: &str| -> Result<Id, TargetError> {
            if id.is_empty() || id.len() > 20 || !id.bytes().all(|b| b.is_ascii_digit()) {
                return Err(TargetError::NotANumber);
            }
            Ok(Id::new(id)?)
        };
        match kind {
            "group" => {
                let (group, mention) = match rest.split_once('@') {
                    Some((g, who)) => (g, Some(number(who)?)),
                    None => (rest, None),
                };
                Ok(Target::Group {
                    group_id: number(group)?,
                    reply_to: None,
                    mention,
                })
            }
            "private" => Ok(Target::Private {
                user_id: number(rest)?,
            }),
            _ => Err(TargetError::Syntax),
        }
    }

    /// Where a proactive message for this chat goes later (a reminder): the group with
    /// the asker @-ed, or the private chat.
    pub fn outbound(&self) -> String {
        match self {
            Target::Group {
                group_id,
                mention: Some(user),
                ..
            } => format!("group:{group_id}@{user}"),
            other => other.key(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn door_targets() {
        assert_eq!(
            Target::parse("group:5550001").unwrap(),
            Target::Group {
                group_id: Id::new("5550001").unwrap(),
                reply_to: None,
                mention: None
            }
        );
        assert_eq!(
            Target::parse("private:10001").unwrap().key(),
            "private:10001"
        );
        let asked = Target::parse("group:5550001@10001").unwrap();
        assert_eq!(
            asked,
            Target::Group {
                group_id: Id::new("5550001").unwrap(),
                reply_to: None,
                mention: Some(Id::new("10001").unwrap())
            }
        );
        assert_eq!(asked.outbound(), "group:5550001@10001");
        assert_eq!(asked.key(), "group:5550001");
        for bad in [
            "group:5550001@",
            "group:5550001@x",
            "private:1@2",
            "5550001",
            "group:",
            "group:abc",
            "group:-1",
            "channel:1",
            "group:1:2",
            &format!("group:{}", "9".repeat(21)),
        ] {
            assert!(Target::parse(bad).is_err(), "{bad}");
        }
    }
}

//! The speaker's `[成员资料]` block, and a message with it taken out (`without_profiles`).

/// The label of the block that carries the current speaker's `USER.md` in their message.
pub const PROFILE_LABEL: &str = "成员资料";

/// `message` without its `[成员资料]` blocks: what a guest's request replays of a
/// member's message (a member's profile is sent once, in her message, for the chat's
/// members; a guest who speaks in the same chat does not get it).
pub fn without_profiles(message: &str) -> std::borrow::Cow<'_, str> {
    let open = format!("\n\n[{PROFILE_LABEL}]\n");
    let close = format!("\n[/{PROFILE_LABEL}]");
    if !message.contains(&open) {
        return message.into();
    }
    let mut out = String::with_capacity(message.len());
    let mut rest = message;
    while let Some(i) = rest.find(&open) {
        out.push_str(&rest[..i]);
        // the body is defanged: it cannot hold the closing mark
        match rest[i..].find(&close) {
            Some(j) => rest = &rest[i + j + close.len()..],
            None => {
                rest = "";
            }
        }
    }
    out.push_str(rest);
    out.into()
}

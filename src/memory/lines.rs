//! The line of a memory in a recall block, whichever recall found it.

/// The line of memory `id` in a recall block, whichever found it (`- [#id] content`): a
/// memory recalled by wording and later by scene is found in the window by the same line.
pub fn memory_line(id: i64, content: &str) -> String {
    format!("- [#{id}] {}", one_line(content))
}

/// A memory as one line that cannot close or open a block of the tail: what a chat
/// member once said must not pass for the system's own markers.
fn one_line(content: &str) -> String {
    content
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
        .replace('[', "［")
        .replace(']', "］")
}

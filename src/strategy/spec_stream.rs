//! A spec said as the model writes it. The model writes JSON; what a channel that
//! streams gets is the card's own words ([`super::doc::render`]) as each value arrives —
//! "需求规格：一桌年夜饭", "需求：", "- 荤素搭配" … — never the markup: a satellite
//! reading `{"goal": "…", "requirements": [` aloud says braces, quotes and English keys
//! the household never asked for, and a chat log would show half an object. Keys the
//! card does not show, numbers, nested values and anything around the object are not
//! streamed (the card does not show them either).
//!
//! Written in the card's order (the order the instruction asks for), the stream is the
//! card's beginning, letter for letter, so a channel that compares what it said with the
//! final reply (the spoken kit's `rest`) says only the card's end after it: the steps to
//! run and how to confirm. Written in another order, the stream is still the spec's words,
//! and the reply is the whole card again.
//!
//! [`SpecText`] turns JSON deltas into that text with a fixed amount of state (a depth,
//! the current key of at most [`MAX_KEY_CHARS`]), whatever the model sends; [`SpecSpeech`]
//! hands it to the turn's `Partials` through [`speech::Answer`], so the splitter, the
//! partials' caps, a tool call that stops the saying and a retried attempt behave as in
//! any streamed answer.

use super::doc::{SPEC_LISTS, SPEC_TITLE};
use crate::provider::DeltaSink;
use crate::speech;
use crate::turn::Partials;
use std::sync::Mutex;

/// A longer key is no key of the card's: its value is not streamed.
pub const MAX_KEY_CHARS: usize = 40;

/// What the string being read is.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Role {
    /// A key of the top-level object.
    Key,
    /// The goal.
    Goal,
    /// An entry of one of the card's lists (its heading).
    Item(&'static str),
    /// Anything else: not said.
    Skip,
}

/// Where a `\` escape is.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Escape {
    None,
    /// Just after the `\`.
    Begun,
    /// Inside `\uXXXX`: the digits read so far and their value.
    Unicode(u8, u32),
}

/// JSON in, the card's words out (see the module's text).
#[derive(Debug)]
pub struct SpecText {
    /// The top-level object began (text before its `{` is not the spec).
    begun: bool,
    /// The top-level object ended: nothing more is read.
    done: bool,
    /// How deep in the object the reader is (1: the top-level object's own values).
    depth: usize,
    /// The value at depth 2 is an array (a list's entries are its strings).
    second_is_array: bool,
    /// In the top-level object, the next string is a key.
    expecting_key: bool,
    /// The top-level key whose value is being read; `None` past [`MAX_KEY_CHARS`].
    key: Option<String>,
    /// The list heading already written for the current key.
    headed: bool,
    in_string: bool,
    role: Role,
    escape: Escape,
    /// A high surrogate waiting for its low half.
    high: Option<u32>,
    /// The current value's line is open (its prefix was written).
    line_open: bool,
}

impl Default for SpecText {
    fn default() -> Self {
        Self {
            begun: false,
            done: false,
            depth: 0,
            second_is_array: false,
            expecting_key: false,
            key: Some(String::new()),
            headed: false,
            in_string: false,
            role: Role::Skip,
            escape: Escape::None,
            high: None,
            line_open: false,
        }
    }
}

impl SpecText {
    pub fn new() -> Self {
        Self::default()
    }

    /// Read a delta; the text it adds.
    pub fn push(&mut self, delta: &str) -> String {
        let mut out = String::new();
        for c in delta.chars() {
            if self.done {
                break;
            }
            if self.in_string {
                self.string_char(c, &mut out);
            } else {
                self.structure(c);
            }
        }
        out
    }

    /// A character outside strings.
    fn structure(&mut self, c: char) {
        if !self.begun {
            if c == '{' {
                self.begun = true;
                self.depth = 1;
                self.expecting_key = true;
            }
            return;
        }
        match c {
            '"' => {
                self.in_string = true;
                self.line_open = false;
                self.role = match self.depth {
                    1 if self.expecting_key => {
                        self.key = Some(String::new());
                        self.headed = false;
                        Role::Key
                    }
                    1 if self.key.as_deref() == Some("goal") => Role::Goal,
                    2 if self.second_is_array => self
                        .key
                        .as_deref()
                        .and_then(|k| SPEC_LISTS.iter().find(|(key, _)| *key == k))
                        .map_or(Role::Skip, |(_, heading)| Role::Item(heading)),
                    _ => Role::Skip,
                };
            }
            '{' | '[' => {
                self.depth += 1;
                if self.depth == 2 {
                    self.second_is_array = c == '[';
                }
            }
            '}' | ']' => {
                self.depth = self.depth.saturating_sub(1);
                if self.depth == 0 {
                    self.done = true;
                }
            }
            ':' if self.depth == 1 => self.expecting_key = false,
            ',' if self.depth == 1 => self.expecting_key = true,
            _ => {}
        }
    }

    /// A character inside a string: escapes decoded, the text written by the role.
    fn string_char(&mut self, c: char, out: &mut String) {
        let decoded = match self.escape {
            Escape::None => match c {
                '\\' => {
                    self.escape = Escape::Begun;
                    return;
                }
                '"' => {
                    self.end_string(out);
                    return;
                }
                c => c,
            },
            Escape::Begun => {
                self.escape = Escape::None;
                match c {
                    'u' => {
                        self.escape = Escape::Unicode(0, 0);
                        return;
                    }
                    'n' => '\n',
                    't' => '\t',
                    'r' => '\r',
                    'b' | 'f' => ' ',
                    other => other, // \" \\ \/ (and anything the parse will refuse)
                }
            }
            Escape::Unicode(n, v) => {
                let v = (v << 4) | c.to_digit(16).unwrap_or(0);
                if n < 3 {
                    self.escape = Escape::Unicode(n + 1, v);
                    return;
                }
                self.escape = Escape::None;
                match (self.high.take(), v) {
                    (None, 0xD800..=0xDBFF) => {
                        self.high = Some(v);
                        return;
                    }
                    (Some(h), 0xDC00..=0xDFFF) => {
                        char::from_u32(0x10000 + ((h - 0xD800) << 10) + (v - 0xDC00))
                            .unwrap_or(char::REPLACEMENT_CHARACTER)
                    }
                    (lone, v) => {
                        if lone.is_some() {
                            self.write(char::REPLACEMENT_CHARACTER, out);
                        }
                        char::from_u32(v).unwrap_or(char::REPLACEMENT_CHARACTER)
                    }
                }
            }
        };
        if self.high.take().is_some() {
            self.write(char::REPLACEMENT_CHARACTER, out); // a lone high surrogate
        }
        self.write(decoded, out);
    }

    /// One decoded character of the current string.
    fn write(&mut self, c: char, out: &mut String) {
        match self.role {
            Role::Skip => {}
            Role::Key => {
                if let Some(k) = &mut self.key {
                    if k.chars().count() < MAX_KEY_CHARS {
                        k.push(c);
                    } else {
                        self.key = None;
                    }
                }
            }
            Role::Goal | Role::Item(_) => {
                if !self.line_open {
                    if c.is_whitespace() {
                        return; // the card trims the value
                    }
                    self.line_open = true;
                    match self.role {
                        Role::Goal => {
                            out.push_str(SPEC_TITLE);
                            out.push('：');
                        }
                        Role::Item(heading) => {
                            if !self.headed {
                                self.headed = true;
                                out.push_str(heading);
                                out.push_str("：\n");
                            }
                            out.push_str("- ");
                        }
                        _ => {}
                    }
                }
                out.push(c);
            }
        }
    }

    fn end_string(&mut self, out: &mut String) {
        self.in_string = false;
        if self.high.take().is_some() {
            self.write(char::REPLACEMENT_CHARACTER, out);
        }
        if self.line_open {
            out.push('\n');
            self.line_open = false;
        }
    }
}

/// One spec request of a turn whose channel streams: the card's words go to the turn's
/// `Partials` as the model writes the JSON. The flow tells it how the request ended
/// ([`SpecSpeech::ended`]): a spec that parsed keeps what was said (the card's end
/// follows in the reply); one that did not, or an answer that called a tool, makes it an
/// aside, so the reply is not taken to begin with it.
pub struct SpecSpeech<'a> {
    text: Mutex<SpecText>,
    answer: speech::Answer<'a>,
}

impl<'a> SpecSpeech<'a> {
    pub fn new(sink: &'a Partials) -> Self {
        Self {
            text: Mutex::new(SpecText::new()),
            answer: speech::Answer::new(sink),
        }
    }

    fn reader(&self) -> std::sync::MutexGuard<'_, SpecText> {
        self.text
            .lock()
            .expect("no code panics while holding the spec reader's lock")
    }

    /// The request is over: `parsed` when its answer is the spec the card shows.
    pub fn ended(&self, parsed: bool) {
        self.answer.ended(parsed);
    }
}

impl DeltaSink for SpecSpeech<'_> {
    fn text(&self, piece: &str) {
        let words = self.reader().push(piece);
        if !words.is_empty() {
            self.answer.text(&words);
        }
    }

    fn tool_call(&self) {
        self.answer.tool_call();
    }

    fn retry(&self) {
        *self.reader() = SpecText::new();
        self.answer.retry();
    }
}

#[cfg(test)]
#[path = "spec_stream_tests.rs"]
mod tests;

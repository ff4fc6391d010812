//! OneBot v11 messages: both formats (array of segments, CQ-code string) into one
//! segment list, and back out. Pure functions, unit-tested.
//!
//! - CQ strings: text escapes `&amp;` `&#91;` `&#93;`; inside CQ parameters also `&#44;`.
//! - Segment data values may be strings or numbers (`"qq": 10001` and `"qq": "10001"`).
//! - Addressing in groups: an @ of the bot as the first or the last segment, or a reply
//!   to one of the bot's own messages. Images and other media become short placeholders.
//! - Ids inside segments (`qq`, a reply's `id`) are read with [`Id`], like every other id,
//!   and sent as strings ([`OutSegment`]).

use super::id::Id;
use serde::{Deserialize, Serialize, Serializer};
use serde_json::{Map, Value};

/// One message segment: `{"type": …, "data": {…}}`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct Segment {
    #[serde(rename = "type")]
    pub kind: String,
    #[serde(default, deserialize_with = "object_or_null")]
    pub data: Map<String, Value>,
}

/// The `message` field: an array of segments, or a CQ-code string.
#[derive(Deserialize)]
#[serde(untagged)]
enum WireMessage {
    Cq(String),
    Segments(Vec<Segment>),
}

fn object_or_null<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Map<String, Value>, D::Error> {
    Ok(Option::<Map<String, Value>>::deserialize(d)?.unwrap_or_default())
}

impl Segment {
    pub fn text(t: &str) -> Self {
        let mut data = Map::new();
        data.insert("text".into(), Value::String(t.into()));
        Self {
            kind: "text".into(),
            data,
        }
    }

    /// A text value (`text`, `name`, `title`, `url`); ids are read with [`Segment::id`].
    pub fn get(&self, key: &str) -> Option<String> {
        self.data.get(key)?.as_str().map(str::to_string)
    }

    /// A data value that is an id (`qq`, `id`), string or number alike.
    pub fn id(&self, key: &str) -> Option<Id> {
        Id::from_value(self.data.get(key)?)
    }

    pub fn is_at(&self, qq: &str) -> bool {
        self.kind == "at" && self.id("qq").is_some_and(|id| id == *qq)
    }
}

/// A segment homebot sends: `{"type": …, "data": {…}}`, ids as strings (as OneBot's
/// segment data has them).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", content = "data", rename_all = "snake_case")]
pub enum OutSegment {
    /// Quote a message.
    Reply {
        #[serde(serialize_with = "id_text")]
        id: Id,
    },
    /// @ someone.
    At {
        #[serde(serialize_with = "id_text")]
        qq: Id,
    },
    Text {
        text: String,
    },
}

impl OutSegment {
    pub fn text(t: impl Into<String>) -> Self {
        OutSegment::Text { text: t.into() }
    }
}

fn id_text<S: Serializer>(id: &Id, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(id.as_str())
}

/// Why a message's content cannot be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MessageError {
    /// The `message` value, its first 120 characters.
    #[error("message is neither a CQ string nor an array of {{type, data}} segments: {0}")]
    Shape(String),
    #[error("message without content")]
    NoContent,
}

/// Parse the `message` field of an event: an array of segments or a CQ string.
pub fn parse_message(v: &Value) -> Result<Vec<Segment>, MessageError> {
    match WireMessage::deserialize(v) {
        Ok(WireMessage::Cq(s)) => Ok(parse_cq(&s)),
        Ok(WireMessage::Segments(segs)) => Ok(segs),
        Err(_) => Err(MessageError::Shape(
            v.to_string().chars().take(120).collect(),
        )),
    }
}

pub fn unescape_text(s: &str) -> String {
    s.replace("&#91;", "[")
        .replace("&#93;", "]")
        .replace("&amp;", "&")
}

fn unescape_param(s: &str) -> String {
    s.replace("&#44;", ",")
        .replace("&#91;", "[")
        .replace("&#93;", "]")
        .replace("&amp;", "&")
}

pub fn escape_text(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('[', "&#91;")
        .replace(']', "&#93;")
}

/// CQ-code string → segments. Malformed codes are kept as text, never dropped.
pub fn parse_cq(s: &str) -> Vec<Segment> {
    let mut out = Vec::new();
    let mut rest = s;
    let push_text = |t: &str, out: &mut Vec<Segment>| {
        if !t.is_empty() {
            out.push(Segment::text(&unescape_text(t)));
        }
    };
    while let Some(start) = rest.find("[CQ:") {
        let Some(len) = rest[start..].find(']') else {
            break;
        };
        push_text(&rest[..start], &mut out);
        let body = &rest[start + 4..start + len];
        let mut parts = body.split(',');
        let kind = parts.next().unwrap_or_default().trim().to_string();
        let mut data = Map::new();
        for p in parts {
            if let Some((k, v)) = p.split_once('=') {
                data.insert(k.to_string(), Value::String(unescape_param(v)));
            }
        }
        out.push(Segment { kind, data });
        rest = &rest[start + len + 1..];
    }
    push_text(rest, &mut out);
    out
}

/// Why a group message is (or is not) for the bot.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Addressed {
    AtFirst,
    AtLast,
    ReplyToBot,
    No,
}

/// Is this group message for the bot? `is_bot_message` tells whether a message id is one
/// the bot sent.
pub fn addressed(
    segs: &[Segment],
    self_id: &str,
    is_bot_message: impl Fn(&Id) -> bool,
) -> Addressed {
    let meaningful: Vec<&Segment> = segs
        .iter()
        .filter(|s| !(s.kind == "text" && s.get("text").is_none_or(|t| t.trim().is_empty())))
        .collect();
    // a reply segment comes first in most clients; look past it for the @
    let body: Vec<&Segment> = meaningful
        .iter()
        .copied()
        .filter(|s| s.kind != "reply")
        .collect();
    if body.first().is_some_and(|s| s.is_at(self_id)) {
        return Addressed::AtFirst;
    }
    if body.last().is_some_and(|s| s.is_at(self_id)) {
        return Addressed::AtLast;
    }
    if segs
        .iter()
        .any(|s| s.kind == "reply" && s.id("id").is_some_and(|id| is_bot_message(&id)))
    {
        return Addressed::ReplyToBot;
    }
    Addressed::No
}

/// The user's words: the leading / trailing @ of the bot removed, other @s as `@name`,
/// media as short placeholders, the result trimmed.
pub fn plain_text(segs: &[Segment], self_id: &str) -> String {
    let mut idx: Vec<usize> = (0..segs.len())
        .filter(|&i| {
            !(segs[i].kind == "text" && segs[i].get("text").is_none_or(|t| t.trim().is_empty()))
        })
        .filter(|&i| segs[i].kind != "reply")
        .collect();
    if idx.first().is_some_and(|&i| segs[i].is_at(self_id)) {
        idx.remove(0);
    }
    if idx.last().is_some_and(|&i| segs[i].is_at(self_id)) {
        idx.pop();
    }
    let first = idx.first().copied().unwrap_or(segs.len());
    let last = idx.last().copied().unwrap_or(0);
    let mut out = String::new();
    for (i, s) in segs.iter().enumerate() {
        if i < first || i > last || s.kind == "reply" {
            continue;
        }
        match s.kind.as_str() {
            "text" => out.push_str(&s.get("text").unwrap_or_default()),
            "at" => match s.id("qq") {
                Some(q) if q == *self_id => out.push_str("@homebot"),
                Some(q) if q == *"all" => out.push_str("@全体成员"),
                Some(q) => out.push_str(&format!(
                    "@{}",
                    s.get("name").unwrap_or_else(|| q.to_string())
                )),
                None => {}
            },
            "face" => out.push_str("[表情]"),
            "image" => out.push_str("[图片]"),
            "record" => out.push_str("[语音]"),
            "video" => out.push_str("[视频]"),
            "file" => out.push_str("[文件]"),
            "share" => out.push_str(&format!(
                "[链接: {}]",
                s.get("title").or(s.get("url")).unwrap_or_default()
            )),
            "location" => out.push_str("[位置]"),
            "forward" | "node" => out.push_str("[合并转发]"),
            "json" | "xml" => out.push_str("[卡片消息]"),
            "dice" => out.push_str("[骰子]"),
            "rps" => out.push_str("[猜拳]"),
            "poke" => out.push_str("[戳一戳]"),
            other => out.push_str(&format!("[{other}]")),
        }
    }
    out.trim().to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn cq_strings_with_escapes() {
        let segs = parse_cq("[CQ:at,qq=10001] 番茄&#91;两个&#93; &amp; 鸡蛋[CQ:image,file=a.jpg,url=http://x/y?a=1&#44;2]");
        assert_eq!(segs.len(), 3);
        assert!(segs[0].is_at("10001"));
        assert_eq!(segs[1].get("text").unwrap(), " 番茄[两个] & 鸡蛋");
        assert_eq!(segs[2].kind, "image");
        assert_eq!(segs[2].get("url").unwrap(), "http://x/y?a=1,2");
        assert_eq!(
            parse_cq("a [CQ:broken"),
            vec![Segment::text("a [CQ:broken")]
        );
    }

    #[test]
    fn array_values_may_be_numbers() {
        let v = json!([{"type":"at","data":{"qq":10001}},{"type":"text","data":{"text":" hi"}}]);
        let segs = parse_message(&v).unwrap();
        assert!(segs[0].is_at("10001"));
        assert_eq!(segs[0].id("qq"), parse_cq("[CQ:at,qq=10001]")[0].id("qq"));
        let reply = parse_message(&json!([{"type":"reply","data":{"id":-5}}])).unwrap();
        assert_eq!(
            addressed(&reply, "1", |id| *id == *"-5"),
            Addressed::ReplyToBot
        );
        assert!(parse_message(&json!(42)).is_err());
        assert!(parse_message(&json!([{"data":{}}])).is_err());
    }

    #[test]
    fn addressing_rules() {
        let bot = "10001";
        let never = |_: &Id| false;
        let first = parse_cq("[CQ:at,qq=10001]  打开做饭模式");
        assert_eq!(addressed(&first, bot, never), Addressed::AtFirst);
        assert_eq!(plain_text(&first, bot), "打开做饭模式");
        let last = parse_cq("番茄几个 [CQ:at,qq=10001]");
        assert_eq!(addressed(&last, bot, never), Addressed::AtLast);
        assert_eq!(plain_text(&last, bot), "番茄几个");
        let reply = parse_cq("[CQ:reply,id=777]好的");
        assert_eq!(
            addressed(&reply, bot, |id| *id == *"777"),
            Addressed::ReplyToBot
        );
        assert_eq!(addressed(&reply, bot, never), Addressed::No);
        assert_eq!(plain_text(&reply, bot), "好的");
        let reply_at = parse_cq("[CQ:reply,id=5][CQ:at,qq=10001] 继续");
        assert_eq!(addressed(&reply_at, bot, never), Addressed::AtFirst);
        let middle = parse_cq("问问 [CQ:at,qq=10001] 行不行");
        assert_eq!(addressed(&middle, bot, never), Addressed::No);
        let other = parse_cq("[CQ:at,qq=20002] 你好");
        assert_eq!(addressed(&other, bot, never), Addressed::No);
        let with_image = parse_cq("[CQ:at,qq=10001] 这是什么菜[CQ:image,file=x.jpg]");
        assert_eq!(plain_text(&with_image, bot), "这是什么菜[图片]");
    }

    #[test]
    fn segments_out() {
        let id = |s: &str| Id::new(s).unwrap();
        for (seg, wire) in [
            (
                OutSegment::Reply { id: id("-5") },
                json!({"type": "reply", "data": {"id": "-5"}}),
            ),
            (
                OutSegment::At { qq: id("10001") },
                json!({"type": "at", "data": {"qq": "10001"}}),
            ),
            (
                OutSegment::text(" hi"),
                json!({"type": "text", "data": {"text": " hi"}}),
            ),
        ] {
            assert_eq!(serde_json::to_value(&seg).unwrap(), wire);
            assert_eq!(serde_json::from_value::<OutSegment>(wire).unwrap(), seg);
        }
    }
}

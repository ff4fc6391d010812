//! A turn's situation as weighted features, and how alike two situations are.
//!
//! | feature | from | weight |
//! |---|---|---|
//! | `chan` | the turn's channel | 1.0 |
//! | `peer` | the chat: `group_<id>` / `private_<id>` on QQ (the design's `peer_group` is the group form, so a group and a private chat never share it); on voice the member the trusted speaker mapping named, else `guest` (all unknown voices are one peer, never the whole channel); elsewhere the chat id | 1.0 |
//! | `tool` | tools the turn called | 0.8 |
//! | `room` | where it was said: the room of a voice satellite (its Home Assistant area); heard in a room, it is also the key of the room's own scene, `room:<name>`, stated by the channel | 0.6 |
//! | `topic` | content words ([`super::topic`]) | 0.4 |
//! | `part` | night / morning / afternoon / evening | 0.2 |
//!
//! `chan` and `peer` are the identity of a situation and make its key (a key's every
//! segment weighs 1.0, a room's too); the others are weak. Similarity is weighted Jaccard (Ruzicka: Σ min ÷ Σ max; for features present or
//! absent that is Σ shared weights ÷ Σ union weights). A scene's profile weighs each
//! weak feature by how often it occurred, so its topic mass stays bounded however many
//! turns joined it.
//!
//! Weak features never merge places: a turn is compared only with evidence of its own
//! key and with scenes whose key covers its own (see `store`), and the weak features of
//! a key's turns never enter the key. Unweighted, or ungated, one chance overlap of words
//! at the same hour would fold two family groups into one scene.

pub use super::key::MAX_ROOM_CHARS;
use super::key::{stand_in, SceneKey};
use super::topic::topic_words;
use crate::config::{MemoryConfig, ScenePolicy};
use crate::turn::Turn;
use chrono::{DateTime, FixedOffset, Timelike};
use std::collections::BTreeMap;

/// The weight of a feature `kind:value` by its kind (identity kinds of explicit keys,
/// such as `place`, weigh like `peer`). A segment of a scene's key weighs [`IDENTITY`]
/// whatever its kind: `room:厨房` is a weak feature of the speaker's scene and the
/// identity of the room's own ([`with_identity`]).
pub fn weight(feature: &str) -> f64 {
    match feature.split_once(':').map(|(k, _)| k).unwrap_or("") {
        "tool" => 0.8,
        "room" => 0.6,
        "topic" => 0.4,
        "part" => 0.2,
        _ => 1.0,
    }
}

/// What a segment of a scene's key weighs: the situation's identity.
pub const IDENTITY: f64 = 1.0;

/// `key`'s segments at [`IDENTITY`], then `features` at their weights — those that are
/// a segment of the key stay identity.
pub fn with_identity(
    key: &SceneKey,
    features: impl IntoIterator<Item = (String, f64)>,
) -> Weighted {
    let mut w: Weighted = key.segments().map(|s| (s.to_string(), IDENTITY)).collect();
    for (f, v) in features {
        w.entry(f).or_insert(v);
    }
    w
}

pub fn is_weak(feature: &str) -> bool {
    weight(feature) < 1.0
}

/// Features with weights.
pub type Weighted = BTreeMap<String, f64>;

/// Weighted Jaccard (Ruzicka) similarity: Σ min ÷ Σ max over the union; 0 for two
/// empty sets.
pub fn similarity(a: &Weighted, b: &Weighted) -> f64 {
    let (mut min, mut max) = (0.0, 0.0);
    for (f, &wa) in a {
        let wb = b.get(f).copied().unwrap_or(0.0);
        min += wa.min(wb);
        max += wa.max(wb);
    }
    for (f, &wb) in b {
        if !a.contains_key(f) {
            max += wb;
        }
    }
    if max <= 0.0 {
        0.0
    } else {
        min / max
    }
}

/// Features present once each, at their kind's weight.
pub fn weighted<'a>(features: impl IntoIterator<Item = &'a str>) -> Weighted {
    features
        .into_iter()
        .map(|f| (f.to_string(), weight(f)))
        .collect()
}

/// The part of the day of `t` (in the household's zone).
pub fn part_of_day(t: DateTime<FixedOffset>) -> &'static str {
    match t.hour() {
        0..=5 => "night",
        6..=11 => "morning",
        12..=17 => "afternoon",
        _ => "evening",
    }
}

/// Where a turn stands in the scene index: its keys and its weak features. Empty for a
/// turn under `ScenePolicy::None`: no features, no keys.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TurnScene {
    pub keys: Vec<SceneKey>,
    /// `part` and `topic` features (the `tool` ones are known after the tool loop).
    pub weak: Vec<String>,
}

/// Keys one turn may carry (those its channel states, then its own or the explicit ones).
pub const MAX_TURN_KEYS: usize = 4;

impl TurnScene {
    /// Derive a turn's scene: policy (the turn's own, else its channel's), keys (those
    /// the channel states, `room:厨房`, first; then the turn's explicit ones, else
    /// `chan:<channel>/peer:<peer>`), weak features.
    pub fn of(turn: &Turn, now: DateTime<FixedOffset>, cfg: &MemoryConfig) -> Self {
        let policy = turn
            .scene_policy
            .unwrap_or_else(|| cfg.policy_for(&turn.channel));
        if policy == ScenePolicy::None || !cfg.enabled {
            return Self::default();
        }
        let mut keys: Vec<SceneKey> = Vec::new();
        for raw in turn.scenes.iter().take(MAX_TURN_KEYS) {
            match SceneKey::parse(raw) {
                Ok(k) if !keys.contains(&k) => keys.push(k),
                Ok(_) => {}
                Err(e) => {
                    tracing::warn!(channel = %turn.channel, error = %e, "explicit scene key ignored")
                }
            }
        }
        if keys.is_empty() {
            let chan = format!("chan:{}", turn.channel);
            let key = match &turn.facts().memory_peer {
                // an id no key can hold (too long, nothing but punctuation) keeps a peer of
                // its own: falling back to the bare channel would make it cover every chat
                // …and so does one that normalizing would change: `A-b` and `a-b`, or
                // `x@y` and `x#y`, are different chats and must not share a scene
                Some(p) => SceneKey::parse(&format!("{chan}/peer:{p}"))
                    .ok()
                    .filter(|k| k.as_str().ends_with(&format!("/peer:{p}")))
                    .map(Ok)
                    .unwrap_or_else(|| SceneKey::parse(&format!("{chan}/peer:{}", stand_in(p)))),
                None => SceneKey::parse(&chan),
            };
            match key {
                Ok(k) => keys.push(k),
                Err(e) => {
                    tracing::warn!(channel = %turn.channel, error = %e, "no scene key for this turn")
                }
            }
        }
        // the keys the channel states (a room) come first: recall ranks their memories first
        let mut stated: Vec<SceneKey> = Vec::new();
        for raw in turn.facts().scenes.iter().take(MAX_TURN_KEYS) {
            match SceneKey::parse(raw) {
                Ok(k) if !stated.contains(&k) && !keys.contains(&k) => stated.push(k),
                Ok(_) => {}
                Err(e) => {
                    tracing::warn!(channel = %turn.channel, error = %e, "stated scene key ignored")
                }
            }
        }
        if keys.is_empty() {
            return Self::default();
        }
        // the turn's own key always stays: the room keys give way to it at the bound
        stated.truncate(MAX_TURN_KEYS.saturating_sub(keys.len()));
        stated.append(&mut keys);
        let keys = stated;
        let mut weak = vec![format!("part:{}", part_of_day(now))];
        if let Some(room) = turn
            .room
            .as_deref()
            .map(str::trim)
            .filter(|r| !r.is_empty())
        {
            let room: String = room.chars().take(MAX_ROOM_CHARS).collect();
            weak.push(format!("room:{room}"));
        }
        weak.extend(
            topic_words(&turn.text, cfg.max_topic_words)
                .into_iter()
                .map(|w| format!("topic:{w}")),
        );
        Self { keys, weak }
    }

    pub fn is_none(&self) -> bool {
        self.keys.is_empty()
    }

    /// The turn as seen from a scene of key `key`: the key's identity features plus the
    /// turn's weak ones (and `tools`). Identity features of the turn below `key` are not
    /// counted against an ancestor scene: they are what it generalizes over.
    pub fn features_for(&self, key: &SceneKey, tools: &[String]) -> Weighted {
        with_identity(
            key,
            self.weak
                .iter()
                .chain(tools)
                .map(|f| (f.clone(), weight(f))),
        )
    }
}

/// `tool:<name>` features for the distinct tools called, at most `max`.
pub fn tool_features(names: &[String], max: usize) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for n in names {
        let f = format!("tool:{}", n.chars().take(64).collect::<String>());
        if !out.contains(&f) {
            out.push(f);
        }
        if out.len() >= max {
            break;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::memory::tests::kit::turn_in;

    fn at(h: u32) -> DateTime<FixedOffset> {
        chrono::DateTime::parse_from_rfc3339(&format!("2026-03-02T{h:02}:00:00+08:00")).unwrap()
    }

    #[test]
    fn weighted_jaccard_is_shared_over_union() {
        let a = weighted(["chan:qq", "peer:group_1", "part:evening"]);
        let b = weighted(["chan:qq", "peer:group_1", "part:morning"]);
        // shared 2.0, union 2.4
        assert!((similarity(&a, &b) - 2.0 / 2.4).abs() < 1e-9);
        assert_eq!(similarity(&a, &a), 1.0);
        assert_eq!(similarity(&Weighted::new(), &Weighted::new()), 0.0);
        // the peer outweighs everything weak shared: another group, same hour, same topic
        let c = weighted(["chan:qq", "peer:group_2", "part:evening", "topic:晚饭"]);
        let d = weighted(["chan:qq", "peer:group_1", "part:evening", "topic:晚饭"]);
        assert!(similarity(&c, &d) < similarity(&a, &b));
    }

    #[test]
    fn peers_keep_groups_private_chats_and_guests_apart() {
        // (the peers themselves are the channels' facts: `channels::qq::facts`, …)
        let cfg = MemoryConfig::default();
        let t = turn_in("qq", "group:1027", "group_1027", "晚饭吃什么");
        let s = TurnScene::of(&t, at(19), &cfg);
        assert_eq!(s.keys[0].as_str(), "chan:qq/peer:group_1027");
        assert!(s.weak.contains(&"part:evening".to_string()), "{s:?}");
        assert!(s.weak.contains(&"topic:晚饭".to_string()), "{s:?}");
        assert_eq!(part_of_day(at(7)), "morning");
        assert_eq!(part_of_day(at(3)), "night");
        assert_eq!(part_of_day(at(13)), "afternoon");
    }

    #[test]
    fn the_room_it_was_said_in_is_a_weak_feature() {
        let cfg = MemoryConfig::default();
        let said_in = |room: Option<&str>| {
            let mut t = turn_in("voice", "wake-1", "mom", "晚饭吃什么");
            t.room = room.map(str::to_string);
            TurnScene::of(&t, at(19), &cfg)
        };
        let kitchen = said_in(Some("厨房"));
        assert!(
            kitchen.weak.contains(&"room:厨房".to_string()),
            "{kitchen:?}"
        );
        assert_eq!(
            kitchen.keys,
            said_in(None).keys,
            "a room never enters the key"
        );
        assert!(!said_in(None).weak.iter().any(|w| w.starts_with("room:")));
        let long = said_in(Some(&"房".repeat(500)));
        let room = long.weak.iter().find(|w| w.starts_with("room:")).unwrap();
        assert_eq!(room.chars().count(), "room:".len() + MAX_ROOM_CHARS);
        // the same words in the same room are more alike than in another room
        let key = &kitchen.keys[0];
        let f = |s: &TurnScene| s.features_for(key, &[]);
        let bedroom = said_in(Some("卧室"));
        assert!(
            similarity(&f(&kitchen), &f(&said_in(Some("厨房"))))
                > similarity(&f(&kitchen), &f(&bedroom))
        );
        assert!(weight("room:厨房") > weight("topic:晚饭") && is_weak("room:厨房"));
    }

    #[test]
    fn the_keys_a_channel_states_come_first_and_the_turns_own_always_stays() {
        let cfg = MemoryConfig::default();
        let mut t = turn_in("voice", "wake-1", "mom", "晚饭吃什么");
        t.facts.scenes = vec!["room:厨房".into(), "Room:厨房 ".into(), "room:".into()];
        let s = TurnScene::of(&t, at(19), &cfg);
        let keys: Vec<&str> = s.keys.iter().map(SceneKey::as_str).collect();
        assert_eq!(keys, ["room:厨房", "chan:voice/peer:mom"]);
        t.facts.scenes = (0..10).map(|i| format!("room:r{i}")).collect();
        let s = TurnScene::of(&t, at(19), &cfg);
        assert_eq!(s.keys.len(), MAX_TURN_KEYS);
        assert_eq!(s.keys.last().unwrap().as_str(), "chan:voice/peer:mom");
        t.scene_policy = Some(ScenePolicy::None);
        assert!(TurnScene::of(&t, at(19), &cfg).is_none());
        // a room is the identity of its own scene, a weak feature of the speaker's
        let room = SceneKey::parse("room:厨房").unwrap();
        let mut t = turn_in("voice", "wake-1", "mom", "晚饭吃什么");
        t.room = Some("厨房".into());
        let s = TurnScene::of(&t, at(19), &cfg);
        assert_eq!(s.features_for(&room, &[])["room:厨房"], IDENTITY);
        assert_eq!(
            s.features_for(&s.keys[0], &[])["room:厨房"],
            weight("room:厨房")
        );
    }

    #[test]
    fn none_policy_and_explicit_keys() {
        let cfg = MemoryConfig::default();
        let mut t = turn_in("qq", "group:1027", "group_1027", "晚饭吃什么");
        t.scene_policy = Some(ScenePolicy::None);
        assert!(TurnScene::of(&t, at(19), &cfg).is_none());
        assert_eq!(TurnScene::of(&t, at(19), &cfg), TurnScene::default());
        let cron = turn_in("cron", "x", "x", "提醒");
        assert!(TurnScene::of(&cron, at(19), &cfg).is_none());
        let mut t = turn_in("qq", "group:1027", "group_1027", "晚饭");
        t.scenes = vec!["Chan:QQ / Peer:Group_1027 ".into(), "chan:qq/part:x".into()];
        let s = TurnScene::of(&t, at(19), &cfg);
        assert_eq!(s.keys.len(), 1);
        assert_eq!(s.keys[0].as_str(), "chan:qq/peer:group_1027");
        // an id no key can hold still gets a peer of its own, never the bare channel
        let nines = "9".repeat(300);
        let long = turn_in(
            "qq",
            &format!("group:{nines}"),
            &format!("group_{nines}"),
            "晚饭",
        );
        let k = &TurnScene::of(&long, at(19), &cfg).keys[0];
        assert!(k.as_str().starts_with("chan:qq/peer:id_"), "{k}");
        let eights = "8".repeat(300);
        let other = turn_in(
            "qq",
            &format!("group:{eights}"),
            &format!("group_{eights}"),
            "晚饭",
        );
        assert_ne!(&TurnScene::of(&other, at(19), &cfg).keys[0], k);
        // ids that normalizing would merge stay apart
        let key_of = |chat: &str| {
            TurnScene::of(&turn_in("web", chat, chat, "晚饭"), at(19), &cfg).keys[0].clone()
        };
        assert_eq!(key_of("kitchen").as_str(), "chan:web/peer:kitchen");
        assert_ne!(key_of("A-b"), key_of("a-b"));
        assert_ne!(key_of("x@y"), key_of("x#y"));
        assert_eq!(key_of("x@y"), key_of("x@y"));
        // too many tools are bounded
        let names: Vec<String> = (0..10).map(|i| format!("t{i}")).collect();
        assert_eq!(tool_features(&names, 3).len(), 3);
    }
}

//! What homebot knows of Home Assistant as the `status` text shows it, and the satellite
//! a voice turn came from; the channel's name, as its link and its door are known by.

/// The Home Assistant channel's name: its outbound door and its link in the presence
/// registry.
pub const CHANNEL: &str = "home_assistant";

/// What `homebot status` shows.
#[derive(Debug, Clone, Default)]
pub struct Status {
    pub connected: bool,
    /// `connected`, or why not.
    pub link: String,
    pub version: Option<String>,
    pub entities: usize,
    pub exposed: Option<usize>,
    /// Satellite entity ids and their rooms.
    pub satellites: Vec<(String, Option<String>)>,
}

impl Status {
    /// The status lines (plain, one fact each).
    pub fn lines(&self) -> Vec<String> {
        let mut v = vec![format!(
            "Home Assistant: {}{}",
            self.link,
            self.version
                .as_deref()
                .map(|v| format!(" · 版本 {v}"))
                .unwrap_or_default()
        )];
        if self.connected || self.entities > 0 {
            v.push(format!(
                "Home Assistant 实体: {}{}",
                self.entities,
                self.exposed
                    .map(|n| format!("（{n} 个开放给 Assist）"))
                    .unwrap_or_default()
            ));
        }
        let sats: Vec<String> = self
            .satellites
            .iter()
            .map(|(e, room)| format!("{e}（{}）", room.as_deref().unwrap_or("房间未知")))
            .collect();
        v.push(format!(
            "Home Assistant 语音卫星: {}",
            if sats.is_empty() {
                "无".to_string()
            } else {
                sats.join(", ")
            }
        ));
        v
    }
}

pub use crate::channels::spoken::Located;

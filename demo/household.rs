//! The demo household's fixed ids: the QQ group, the bot's and mom's QQ numbers, the
//! kitchen satellite and the speakers Home Assistant and the satellite name.

/// The demo household's QQ group, members and devices.
pub const GROUP: u64 = 5_550_001;

pub const BOT_QQ: u64 = 3_000_000_001;

pub const MOM_QQ: u64 = 10_001;

pub const SATELLITE: &str = "kitchen";

/// What Home Assistant reports as mom's speaker id (mapped in `voice.wyoming_speakers`).
pub const HA_SPEAKER: &str = "ha-user-mom";

/// What the kitchen satellite reports as mom's voice profile (its `speakers`).
pub const SATELLITE_SPEAKER: &str = "voice-profile-mom";

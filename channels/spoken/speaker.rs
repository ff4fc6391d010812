//! Who speaks: a speaker id a front end reports is only a claim. It becomes a member
//! only through a mapping the household configured for that front end —
//! `voice.wyoming_speakers` for Wyoming (which has no authentication), a satellite's
//! `speakers` for a satellite that proved itself with a token — and never by matching a
//! member id; everyone else is [`GUEST`].

use std::collections::BTreeMap;

/// The speaker id of everyone the configuration does not vouch for.
pub const GUEST: &str = crate::turn::facts::GUEST;

/// The member a reported speaker id is, by a mapping the household trusts for that
/// front end; anything else (no id, an unmapped id, a member's own id) is [`GUEST`].
pub fn speaker_member(
    trusted: Option<&BTreeMap<String, String>>,
    reported: Option<&str>,
) -> String {
    reported
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .and_then(|s| trusted?.get(s))
        .cloned()
        .unwrap_or_else(|| GUEST.to_string())
}

/// `speaker`, or — when that is a guest — the member the household opted in to for every
/// voice at Home Assistant's satellite `entity` (`[home_assistant] speakers`).
pub fn or_satellite_member(
    speaker: String,
    satellites: &BTreeMap<String, String>,
    entity: Option<&str>,
) -> String {
    if speaker != GUEST {
        return speaker;
    }
    entity
        .and_then(|e| satellites.get(e))
        .cloned()
        .unwrap_or(speaker)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_trusted_mapping_makes_a_member() {
        let map = BTreeMap::from([("voice-profile-1".to_string(), "mom".to_string())]);
        assert_eq!(speaker_member(Some(&map), Some("voice-profile-1")), "mom");
        assert_eq!(
            speaker_member(Some(&map), Some("mom")),
            GUEST,
            "a member id is no credential"
        );
        assert_eq!(speaker_member(None, Some("voice-profile-1")), GUEST);
        assert_eq!(speaker_member(Some(&map), None), GUEST);
        let at: BTreeMap<String, String> =
            [("assist_satellite.k".to_string(), "mom".to_string())].into();
        let k = Some("assist_satellite.k");
        assert_eq!(or_satellite_member(GUEST.into(), &at, k), "mom");
        assert_eq!(
            or_satellite_member("dad".into(), &at, k),
            "dad",
            "a known voice stays"
        );
        assert_eq!(
            or_satellite_member(GUEST.into(), &at, Some("assist_satellite.x")),
            GUEST
        );
        assert_eq!(or_satellite_member(GUEST.into(), &at, None), GUEST);
    }
}

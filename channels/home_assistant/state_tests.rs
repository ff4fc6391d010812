//! The state's own transitions, without an actor or a connection: fired watches sent
//! (bounded), the in-flight sentences by call, the services list kept
//! for a minute, the state rebuilt after a panic.

use super::*;
use crate::channels::home_assistant::watch;
use std::time::{Duration, Instant};

fn watch(n: usize) -> HaWatch {
    HaWatch {
        entity_id: format!("sensor.s{n}"),
        to: "off".into(),
        message: format!("message {n}"),
        channel: "qq".into(),
        target: "group:1".into(),
    }
}

/// A state with `watches` configured, and the queue its fired watches go to.
fn state(watches: usize) -> (HaState, mpsc::Receiver<HaWatch>) {
    let cfg = HomeAssistantConfig {
        watch: (0..watches).map(watch).collect(),
        ..Default::default()
    };
    let presence = crate::presence::Presence::new(
        std::sync::Arc::new(crate::clock::SystemClock),
        crate::zone::Zone::utc(),
    );
    let (tx, rx) = mpsc::channel(watch::QUEUE);
    let st = HaState::new(
        cfg,
        Err(NotConfigured::NoUrl),
        presence,
        tokio::sync::watch::channel(0).0,
        tx,
    );
    (st, rx)
}

#[test]
fn fired_watches_go_to_the_queue_and_a_full_queue_drops_one() {
    let (mut st, mut rx) = state(3);
    st.on_report(Report::Watch(0));
    st.on_report(Report::Watch(1));
    st.on_report(Report::Watch(7)); // no such watch: nothing
    let got: Vec<String> = std::iter::from_fn(|| rx.try_recv().ok())
        .map(|w| w.message)
        .collect();
    assert_eq!(got, ["message 0", "message 1"]);
    for _ in 0..watch::QUEUE + 5 {
        st.on_report(Report::Watch(2));
    }
    assert_eq!(
        std::iter::from_fn(|| rx.try_recv().ok()).count(),
        watch::QUEUE,
        "bounded: the rest were dropped"
    );
}

#[test]
fn a_sentence_is_in_flight_once_and_only_its_own_call_ends_it() {
    let (mut st, _) = state(0);
    assert!(st.start_conversing("打开厨房的灯".into(), 1));
    assert!(
        !st.start_conversing("打开厨房的灯".into(), 2),
        "it came back while with HA's agent"
    );
    // the refused call ends: the first call's entry stays
    st.conversed("打开厨房的灯", 2);
    assert!(!st.start_conversing("打开厨房的灯".into(), 3));
    st.conversed("打开厨房的灯", 1);
    assert!(st.start_conversing("打开厨房的灯".into(), 4), "free again");
}

#[test]
fn the_services_list_is_trusted_for_a_minute() {
    let (mut st, _) = state(0);
    assert_eq!(st.known_services("light"), None, "never read");
    let map: HashMap<String, Vec<String>> = [("light".into(), vec!["turn_on".into()])].into();
    st.services = Some((Instant::now(), map.clone()));
    assert_eq!(
        st.known_services("light"),
        Some(Some(vec!["turn_on".into()]))
    );
    assert_eq!(st.known_services("lock"), Some(None), "no such domain");
    let old = Instant::now().checked_sub(SERVICES_FOR + Duration::from_secs(1));
    st.services = old.map(|at| (at, map));
    assert_eq!(st.known_services("light"), None, "read again");
}

#[test]
fn a_rebuilt_state_keeps_only_what_is_not_its_own() {
    let (mut st, mut rx) = state(1);
    st.on_report(Report::Connected {
        version: Some("2025.4.4".into()),
    });
    assert!(st.start_conversing("打开厨房的灯".into(), 1));
    st.services = Some((Instant::now(), HashMap::new()));
    st.no_listen_again.insert("assist_satellite.kitchen".into());
    st.exposed = Some(3);
    st.session = 4;
    let presence = st.presence.clone();
    let up = |p: &crate::presence::Presence| {
        p.snapshot()
            .iter()
            .find(|c| c.channel == CHANNEL)
            .map(|c| c.connected)
    };
    assert_eq!(up(&presence), Some(true));

    let mut fresh = st.rebuilt("a report from the connection (boom)");
    assert_eq!(up(&presence), Some(false), "the link it had up is down");
    assert_eq!(fresh.session, 5, "the old connection's reports are ignored");
    assert!(fresh.connection.is_none() && fresh.version.is_none());
    assert_eq!(
        link_text(&fresh.link),
        NotConfigured::NoUrl.to_string(),
        "why it cannot connect, as at start"
    );
    assert!(fresh.services.is_none() && fresh.exposed.is_none());
    assert!(fresh.no_listen_again.is_empty());
    assert!(
        fresh.start_conversing("打开厨房的灯".into(), 2),
        "in flight no more"
    );
    // where the watches go is not the state's: it is kept
    fresh.on_report(Report::Watch(0));
    assert_eq!(rx.try_recv().unwrap().message, "message 0");
}

#[test]
fn a_state_opens_one_connection_and_dropping_it_stops_that_connection() {
    let (no_settings, _rx) = state(0);
    let mut st = HaState::new(
        HomeAssistantConfig::default(),
        Ok(connection::Settings {
            url: "ws://127.0.0.1:1/api/websocket".into(),
            token: crate::config::Secret::new("t"),
            timeout: Duration::from_secs(1),
            max_message: 1 << 20,
            watches: Vec::new(),
            tls: None,
        }),
        no_settings.presence.clone(),
        no_settings.back.clone(),
        no_settings.watches.clone(),
    );
    let mut no_settings = no_settings;
    assert!(no_settings.open().is_none(), "nothing to connect with");
    st.session = 7;
    let o = st.open().expect("settings, and no connection yet");
    assert_eq!(o.session, 7);
    assert!(st.open().is_none(), "one connection per state");
    assert!(!o.stop.is_cancelled());
    drop(st);
    assert!(
        o.stop.is_cancelled(),
        "the dropped state's connection stops"
    );
}

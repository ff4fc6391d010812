//! Starting the real Home Assistant cannot be raced (tests/common/ports.rs): its port is
//! chosen below the kernel's ephemeral range, and when something binds it first anyway, HA
//! says so in its log (its HTTP server is not created, though HA itself runs on) and the
//! kit starts it again on another port. Here the first port is taken on purpose.

use crate::common;
use crate::real_ha;

use common::ports;
use real_ha::RealHa;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn home_assistant_is_started_again_when_its_port_was_taken() {
    let python = real_ha::ha_python();
    let port = ports::for_a_child();
    let _taken = std::net::TcpListener::bind(("127.0.0.1", port)).unwrap();
    let ha = RealHa::start_trying_first(&python, port).await;
    assert_ne!(ha.port, port);
    let first = std::fs::read_to_string(ha.dir.path().join("hass.1.log")).unwrap();
    assert!(
        first.contains(&format!("Failed to create HTTP server at port {port}")),
        "the first start's log:\n{first}"
    );
    // the second start is a whole HA: its API answers, the satellite is in its area
    let config = ha.get("/api/config").await.unwrap();
    assert_eq!(config["state"], "RUNNING", "{config}");
    assert!(ha.satellite_entity.starts_with("assist_satellite."));
}

#[test]
fn a_childs_port_is_below_the_ephemeral_range_and_free() {
    let range = std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range").unwrap();
    let low: u16 = range.split_whitespace().next().unwrap().parse().unwrap();
    let picked: Vec<u16> = (0..50).map(|_| ports::for_a_child()).collect();
    for &p in &picked {
        assert!(
            (10_000..low.max(12_000)).contains(&p),
            "{p} (ephemeral from {low})"
        );
        std::net::TcpListener::bind(("127.0.0.1", p)).unwrap();
    }
    let distinct: std::collections::HashSet<_> = picked.iter().collect();
    assert!(
        distinct.len() > 45,
        "50 picks, {} ports: {picked:?}",
        distinct.len()
    );
}

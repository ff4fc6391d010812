//! Scene memory upkeep on a real SQLite file: decay, twin merges, file modes, schema
//! migrations; scenes are an index, so deleting one never deletes a memory.

use super::*;

#[test]
fn deleting_a_scene_never_deletes_a_memory() {
    let d = tempfile::tempdir().unwrap();
    let mut s = open(&d);
    let k = vec![SceneKey::parse("chan:qq/peer:group_1").unwrap()];
    s.commit("甲", &k, "t", 0).unwrap();
    s.conn.execute("DELETE FROM scenes", []).unwrap();
    assert_eq!(count(&s, "memories"), 1);
    assert_eq!(count(&s, "scene_memories"), 0);
}

#[test]
fn unused_links_decay_and_go_below_the_floor_but_the_memory_stays() {
    let d = tempfile::tempdir().unwrap();
    let mut s = open(&d);
    let cfg = MemoryConfig::default();
    let here = scene("qq", "group:1", "晚饭", at(2, 19));
    let t0 = at(2, 19).timestamp();
    s.commit("三个人吃饭", &here.keys, "t", t0).unwrap();
    // one half-life later: half strength, still recalled
    let m = s.maintain(t0 + 30 * DAY).unwrap();
    assert_eq!((m.links_decayed, m.links_removed), (1, 0));
    let idx = s.snapshot().unwrap();
    let link = &idx.scenes[0].links[0];
    assert!((link.strength - 0.5).abs() < 1e-9, "{link:?}");
    // maintenance twice at one instant changes nothing more
    s.maintain(t0 + 30 * DAY).unwrap();
    assert!((s.snapshot().unwrap().scenes[0].links[0].strength - 0.5).abs() < 1e-9);
    // recalling refreshes a link
    let r = idx.recall(&here, &cfg, t0 + 30 * DAY);
    assert_eq!(r.len(), 1);
    s.touch(&[(r[0].scene, r[0].memory)], t0 + 30 * DAY)
        .unwrap();
    assert_eq!(s.snapshot().unwrap().scenes[0].links[0].strength, 1.0);
    // four half-lives unused: below 0.1, the link goes, the memory stays
    let m = s.maintain(t0 + 30 * DAY + 120 * DAY).unwrap();
    assert_eq!(m.links_removed, 1);
    assert_eq!(count(&s, "memories"), 1);
    assert!(s
        .snapshot()
        .unwrap()
        .recall(&here, &cfg, t0 + 150 * DAY)
        .is_empty());
}

#[test]
fn twin_scenes_are_merged_once() {
    let d = tempfile::tempdir().unwrap();
    let mut s = open(&d);
    let a = SceneKey::parse("chan:qq/peer:group_1027").unwrap();
    let m1 = s.commit("甲", std::slice::from_ref(&a), "t", 10).unwrap();
    // twins written by hand or by an older homebot, before keys were normalized
    for (raw, occ) in [
        ("Chan:QQ/Peer:Group_1027", 3),
        ("chan:qq / peer:group 1027/", 2),
    ] {
        s.conn
            .execute(
                "INSERT INTO scenes (key, occurrences, origin, created_at, last_seen) VALUES (?1, ?2, 'emerged', 5, 20)",
                rusqlite::params![raw, occ],
            )
            .unwrap();
        let id = s.conn.last_insert_rowid();
        s.conn
            .execute(
                "INSERT INTO scene_features (scene_id, feature, count) VALUES (?1, 'part:evening', 2)",
                [id],
            )
            .unwrap();
    }
    let m2 = s.commit("乙", &[], "t", 10).unwrap();
    s.conn
        .execute(
            "INSERT INTO scene_memories SELECT id, ?1, 0.7, 10, 10 FROM scenes WHERE key = 'Chan:QQ/Peer:Group_1027'",
            [m2],
        )
        .unwrap();
    assert_eq!(s.dedupe().unwrap(), 2);
    let idx = s.snapshot().unwrap();
    assert_eq!(idx.scenes.len(), 1);
    let sc = &idx.scenes[0];
    assert_eq!(sc.key, a);
    assert_eq!(sc.occurrences, 5);
    assert_eq!(sc.features, vec![("part:evening".to_string(), 4)]);
    let mut linked: Vec<i64> = sc.links.iter().map(|l| l.memory).collect();
    linked.sort();
    assert_eq!(linked, vec![m1, m2]);
    // idempotent
    assert_eq!(s.dedupe().unwrap(), 0);
    assert_eq!(s.snapshot().unwrap().scenes[0].occurrences, 5);
}

#[cfg(unix)]
#[test]
fn the_database_and_its_wal_files_are_private() {
    use std::os::unix::fs::PermissionsExt;
    let d = tempfile::tempdir().unwrap();
    let mut s = open(&d);
    s.commit("甲", &[], "t", 0).unwrap();
    for f in ["memory.db", "memory.db-wal", "memory.db-shm"] {
        let p = d.path().join("memory").join(f);
        let mode = std::fs::metadata(&p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600, "{f} is {mode:o}");
    }
    let dir = std::fs::metadata(d.path().join("memory"))
        .unwrap()
        .permissions()
        .mode()
        & 0o777;
    assert_eq!(dir, 0o700);
}

#[test]
fn the_schema_is_migrated_once_and_a_newer_one_is_refused() {
    let d = tempfile::tempdir().unwrap();
    let path = d.path().join("m.db");
    let mut s = Store::open(&path, MemoryConfig::default()).unwrap();
    s.commit("甲", &[], "t", 0).unwrap();
    drop(s);
    let s = Store::open(&path, MemoryConfig::default()).unwrap();
    assert_eq!(count(&s, "memories"), 1);
    s.conn.execute_batch("PRAGMA user_version = 99").unwrap();
    drop(s);
    let e = Store::open(&path, MemoryConfig::default()).err().unwrap();
    assert!(e.to_string().contains("schema version 99"), "{e}");
}

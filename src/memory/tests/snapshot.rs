//! Snapshots of the index: what a snapshot shares with the one before, and that what it
//! shares is still what the database holds.

use super::*;
use std::sync::Arc;

#[test]
fn a_snapshot_shares_the_memories_while_none_changed() {
    let d = tempfile::tempdir().unwrap();
    let mut s = open(&d);
    let here = scene("qq", "group:1", "晚饭", at(2, 19));
    let t0 = at(2, 19).timestamp();
    for i in 0..50 {
        s.commit(
            &format!("第{i}条：做菜少放盐"),
            &here.keys,
            "qq:group:1",
            t0,
        )
        .unwrap();
    }
    let first = s.snapshot().unwrap();
    assert_eq!(first.memories.len(), 50);

    // observations and touches change scenes and links, not memories: shared, not copied
    observe(&mut s, "qq", "group:1", "晚饭吃什么", at(2, 20));
    let link = (first.scenes[0].id, *first.memories.keys().next().unwrap());
    s.touch(&[link], t0 + 60).unwrap();
    let second = s.snapshot_after(Some(&first)).unwrap();
    assert!(
        Arc::ptr_eq(&first.memories, &second.memories),
        "the memories were read and copied again although none changed"
    );
    assert_ne!(
        first.scenes[0].occurrences, second.scenes[0].occurrences,
        "the scenes are read afresh"
    );

    // a memory kept, one forgotten, one changed by another writer: read again
    let kept = s.commit("新的一条", &here.keys, "qq:group:1", t0).unwrap();
    let third = s.snapshot_after(Some(&second)).unwrap();
    assert!(!Arc::ptr_eq(&second.memories, &third.memories));
    assert_eq!(third.memories[&kept].content, "新的一条");
    assert!(s.forget(kept).unwrap());
    let fourth = s.snapshot_after(Some(&third)).unwrap();
    assert!(!fourth.memories.contains_key(&kept));
    let some = *fourth.memories.keys().nth(7).unwrap();
    s.conn
        .execute(
            "UPDATE memories SET content = '改过的' WHERE id = ?1",
            [some],
        )
        .unwrap();
    let fifth = s.snapshot_after(Some(&fourth)).unwrap();
    assert_eq!(fifth.memories[&some].content, "改过的");
    assert_eq!(fifth.memories.len(), 50);
}

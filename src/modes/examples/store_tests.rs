use super::*;

fn store() -> (tempfile::TempDir, ExampleStore) {
    let d = tempfile::tempdir().expect("a temporary directory");
    let s = ExampleStore {
        dir: d.path().join("modes/examples"),
    };
    (d, s)
}

fn case(user: &str) -> Case {
    Case {
        id: String::new(),
        user: user.into(),
        answer: "先焯水，再小火慢炖。".into(),
        scene: CaseScene {
            channel: "qq".into(),
            chat_id: "group_1".into(),
            room: None,
        },
        at: "2026-12-01T18:00:00+08:00".into(),
        judged: Judged::Thanked,
        session_id: "cook-1".into(),
    }
}

#[test]
fn keeps_the_most_recent_and_cuts_words_and_answers() {
    let (_d, s) = store();
    for i in 0..5 {
        let (id, w) = s
            .add("cooking", case(&format!("第{i}问")), 3)
            .expect("kept");
        assert_eq!(id, format!("cooking-{}", i + 1));
        assert!(w.is_none());
    }
    let (cases, _) = s.load("cooking");
    let users: Vec<&str> = cases.iter().map(|c| c.user.as_str()).collect();
    assert_eq!(users, ["第2问", "第3问", "第4问"]);
    let mut long = case(&"问".repeat(MAX_USER_CHARS + 10));
    long.answer = "答".repeat(MAX_ANSWER_CHARS + 10);
    s.add("cooking", long, 3).expect("kept");
    let (cases, _) = s.load("cooking");
    let last = cases.last().expect("a case");
    assert_eq!(last.user.chars().count(), MAX_USER_CHARS);
    assert_eq!(last.answer.chars().count(), MAX_ANSWER_CHARS);
    assert_eq!(s.modes(), ["cooking"]);
}

#[test]
fn forget_removes_one_case_and_says_when_there_is_none() {
    let (_d, s) = store();
    let (a, _) = s.add("cooking", case("红烧肉"), 10).expect("kept");
    let (b, _) = s.add("cooking", case("蒸鱼"), 10).expect("kept");
    assert!(s.forget(&a).expect("forgotten"));
    assert!(!s.forget(&a).expect("no such case"));
    assert!(!s.forget("nosuchmode-1").expect("no such mode"));
    assert!(!s.forget("../x-1").expect("not an id"));
    let (cases, _) = s.load("cooking");
    assert_eq!(cases.len(), 1);
    assert_eq!(cases[0].id, b);
    // ids are not reused after a forget
    let (c, _) = s.add("cooking", case("炒饭"), 10).expect("kept");
    assert_eq!(c, "cooking-3");
}

#[test]
fn a_corrupt_or_oversized_file_is_set_aside_and_starts_empty() {
    let (_d, s) = store();
    fsutil::create_private_dirs(&s.dir).expect("dir");
    std::fs::write(s.path("cooking"), "{not json").expect("written");
    let (cases, warning) = s.load("cooking");
    assert!(cases.is_empty());
    assert!(warning.expect("a warning").contains("unreadable"));
    assert!(s.dir.join("cooking.json.corrupt").exists());
    // keeping works again after it
    let (id, _) = s.add("cooking", case("红烧肉"), 10).expect("kept");
    assert_eq!(id, "cooking-1");
    // a file past the byte bound is not read
    let big = std::fs::File::create(s.path("baking")).expect("created");
    big.set_len(MAX_FILE_BYTES + 1).expect("grown");
    let (cases, warning) = s.load("baking");
    assert!(cases.is_empty());
    assert!(warning.expect("a warning").contains("larger than"));
}

#[test]
fn a_file_with_too_many_cases_is_read_bounded() {
    let (_d, s) = store();
    fsutil::create_private_dirs(&s.dir).expect("dir");
    let cases: Vec<Case> = (0..MAX_KEEP + 5)
        .map(|i| Case {
            id: format!("cooking-{i}"),
            ..case("问")
        })
        .collect();
    let f = File {
        next_id: cases.len() as u64,
        cases,
    };
    std::fs::write(s.path("cooking"), serde_json::to_vec(&f).expect("json")).expect("written");
    let (cases, warning) = s.load("cooking");
    assert!(warning.is_none());
    assert_eq!(cases.len(), MAX_KEEP);
    assert_eq!(cases[0].id, "cooking-5");
}

#[test]
fn a_case_id_is_a_mode_id_and_a_number_within_its_bound() {
    for ok in ["cooking-1", "home-cooking-12", "a_b.c-0"] {
        assert!(is_case_id(ok), "{ok}");
    }
    let long = format!("{}-1", "m".repeat(MAX_CASE_ID));
    for bad in [
        "",
        "cooking",
        "cooking-",
        "-1",
        "cooking-x",
        "cooking-1a",
        "../x-1",
        "co oking-1",
        "cooking-+1",
        "cooking-123456789012345678901",
        &long,
    ] {
        assert!(!is_case_id(bad), "{bad}");
    }
}

#[test]
fn peek_reads_a_corrupt_file_without_setting_it_aside() {
    let (_d, s) = store();
    s.add("cooking", case("红烧肉"), 10).expect("kept");
    let (cases, warning) = s.peek("cooking");
    assert_eq!((cases.len(), warning), (1, None));
    std::fs::write(s.path("cooking"), "{not json").expect("written");
    let (cases, warning) = s.peek("cooking");
    assert!(cases.is_empty());
    assert!(warning.expect("a warning").contains("unreadable"));
    assert!(s.path("cooking").exists(), "left where it was");
    assert!(!s.dir.join("cooking.json.corrupt").exists());
    assert!(s.peek("nosuchmode").0.is_empty());
}

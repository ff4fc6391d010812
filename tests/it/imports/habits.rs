//! Two habits the house step removed, held so they do not come back: an error that is
//! only a `String` (`Result<_, String>`: a caller cannot tell one failure from another)
//! and a `json!` frame in a channel (its protocol's frames are typed, serde's enums and
//! structs, so a misspelt field fails to compile instead of reaching a peer).

use super::scan::{self, code};

/// The `Result<…, String>` types in `line`.
fn string_errors(line: &str) -> Vec<String> {
    let mut found = Vec::new();
    for (at, _) in line.match_indices("Result<") {
        let args = &line[at + "Result<".len()..];
        let (mut depth, mut end, mut last_comma) = (1usize, None, None);
        for (i, c) in args.char_indices() {
            match c {
                '<' | '(' | '[' => depth += 1,
                '>' | ')' | ']' => {
                    depth -= 1;
                    if depth == 0 {
                        end = Some(i);
                        break;
                    }
                }
                ',' if depth == 1 => last_comma = Some(i),
                _ => {}
            }
        }
        if let (Some(end), Some(comma)) = (end, last_comma) {
            if args[comma + 1..end].trim() == "String" {
                found.push(format!("Result<{}>", &args[..end]));
            }
        }
    }
    found
}

#[test]
fn the_scanner_sees_a_string_error_in_any_shape() {
    for (line, n) in [
        ("fn f() -> Result<(), String> {", 1),
        (") -> Result<(String, String), String> {", 1),
        ("fn g() -> Result<Vec<Option<u8>>, String>;", 1),
        ("fn h() -> Result<String, Error>;", 0),
        ("fn i() -> io::Result<String>;", 0),
        ("fn j() -> Result<(), (String, String)>;", 0),
    ] {
        assert_eq!(string_errors(line).len(), n, "{line}");
    }
}

#[test]
fn no_error_is_only_a_string() {
    let root = scan::repo();
    let mut found = Vec::new();
    for (_, path) in scan::library() {
        let text = std::fs::read_to_string(&path).unwrap();
        for (n, line) in code(&text).lines().enumerate() {
            for t in string_errors(line) {
                let shown = path.strip_prefix(&root).unwrap().display().to_string();
                found.push(format!("{shown}:{}: {t}", n + 1));
            }
        }
    }
    assert!(
        found.is_empty(),
        "errors that are only a String (give them a type, thiserror's enum or struct):\n{}",
        found.join("\n")
    );
}

#[test]
fn no_channel_builds_a_json_frame() {
    let root = scan::repo();
    let mut found = Vec::new();
    for (_, path) in scan::library() {
        let shown = path.strip_prefix(&root).unwrap().display().to_string();
        if !shown.starts_with("channels/") {
            continue;
        }
        let text = std::fs::read_to_string(&path).unwrap();
        for (n, line) in code(&text).lines().enumerate() {
            if line.contains("json!(") {
                found.push(format!("{shown}:{}: {}", n + 1, line.trim()));
            }
        }
    }
    assert!(
        found.is_empty(),
        "json! frames in a channel (type the frame):\n{}",
        found.join("\n")
    );
}

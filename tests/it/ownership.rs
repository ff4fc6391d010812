//! A workspace holds keys and family conversations: homebot refuses a workspace, or a
//! `config.toml`, owned by another user (who could replace the configuration), naming
//! the path and both uids, and changes nothing in it. The lock file is the owner's only.
//!
//! Giving a file away needs root: the refusal tests run as root and otherwise skip with a
//! printed reason.

use crate::common;

use common::*;
use homebot::kernel::{Kernel, KernelOptions};
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::Path;

const OTHER_UID: u32 = 65534;

/// Whether this process may give files away (runs as root): the uid of a file it made.
fn running_as_root(probe: &Path) -> bool {
    let root = std::fs::metadata(probe).unwrap().uid() == 0;
    if !root {
        eprintln!("skipped: not running as root, so no file can be given to another uid");
    }
    root
}

fn start_error(ws: &Path, fake: &FakeLlm) -> String {
    match Kernel::start(
        ws,
        KernelOptions {
            env: Some(fake.env()),
            ..Default::default()
        },
    ) {
        Ok(_) => panic!("homebot started on {}", ws.display()),
        Err(e) => e.to_string(),
    }
}

#[tokio::test]
async fn a_workspace_owned_by_another_user_is_refused() {
    let dir = workspace();
    if !running_as_root(dir.path()) {
        return;
    }
    let ws = dir.path().join("ws");
    std::fs::create_dir(&ws).unwrap();
    std::fs::set_permissions(&ws, std::fs::Permissions::from_mode(0o755)).unwrap();
    std::os::unix::fs::chown(&ws, Some(OTHER_UID), Some(OTHER_UID)).unwrap();
    let fake = FakeLlm::scripted().await;
    let e = start_error(&ws, &fake);
    assert!(e.contains(&ws.display().to_string()), "{e}");
    assert!(
        e.contains(&format!("owned by uid {OTHER_UID}")) && e.contains("runs as uid 0"),
        "{e}"
    );
    // nothing was changed: not tightened, nothing created
    let meta = std::fs::metadata(&ws).unwrap();
    assert_eq!(meta.permissions().mode() & 0o777, 0o755);
    assert_eq!(meta.uid(), OTHER_UID);
    assert_eq!(std::fs::read_dir(&ws).unwrap().count(), 0);
}

#[tokio::test]
async fn a_config_owned_by_another_user_is_refused() {
    let dir = workspace();
    if !running_as_root(dir.path()) {
        return;
    }
    let ws = dir.path();
    let fake = FakeLlm::scripted().await;
    drop(start_kernel(ws, &fake)); // a normal workspace with its config.toml
    let config = ws.canonicalize().unwrap().join("config.toml");
    std::os::unix::fs::chown(&config, Some(OTHER_UID), None).unwrap();
    let e = start_error(ws, &fake);
    assert!(e.contains(&config.display().to_string()), "{e}");
    assert!(
        e.contains(&format!("owned by uid {OTHER_UID}")) && e.contains("runs as uid 0"),
        "{e}"
    );
    // the binary says the same and exits non-zero
    let o = homebot(ws, Some(&fake))
        .arg("status")
        .output()
        .await
        .unwrap();
    assert!(!o.status.success(), "{o:?}");
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(
        stderr.contains(&format!("owned by uid {OTHER_UID}")),
        "{stderr}"
    );
}

#[tokio::test]
async fn the_lock_file_is_the_owners_only_even_if_it_was_wider() {
    let dir = workspace();
    let ws = dir.path();
    let lock = ws.join("homebot.lock");
    std::fs::write(&lock, "").unwrap();
    std::fs::set_permissions(&lock, std::fs::Permissions::from_mode(0o644)).unwrap();
    let fake = FakeLlm::scripted().await;
    let kernel = start_kernel(ws, &fake);
    let mode = std::fs::metadata(&lock).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600, "homebot.lock is {mode:o}");
    let root_mode = std::fs::metadata(ws).unwrap().permissions().mode() & 0o777;
    assert_eq!(root_mode, 0o700);
    drop(kernel);
}

//! A workspace holds keys and family conversations: homebot refuses a workspace, or a
//! `config.toml`, owned by another user (who could replace the configuration), naming
//! the path and both uids, and changes nothing in it. The lock file is the owner's only.
//!
//! Giving a file away needs root. Run as root, the refusal tests give a workspace or its
//! `config.toml` to another uid; run as anyone else, they use what another user already
//! owns — the root directory as a workspace, `/etc/passwd` behind a `config.toml`
//! symlink (homebot follows the link, so the file it would read is root's) — so both
//! ways the refusal is checked.

use crate::common;

use common::*;
use homebot::kernel::{Kernel, KernelOptions};
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::Path;

const OTHER_UID: u32 = 65534;

/// The uid this process runs as: the owner of a file it made.
fn running_uid(probe: &Path) -> u32 {
    let f = probe.join(".uid-probe");
    std::fs::write(&f, "").unwrap();
    let uid = std::fs::metadata(&f).unwrap().uid();
    std::fs::remove_file(f).unwrap();
    uid
}

/// A file or directory someone else owns: `ours`, given to [`OTHER_UID`] when this
/// process may give files away (root), else `theirs`, which must already be another's.
fn foreign(ours: &Path, theirs: &Path, running: u32) -> (std::path::PathBuf, u32) {
    if running == 0 {
        std::os::unix::fs::chown(ours, Some(OTHER_UID), Some(OTHER_UID)).unwrap();
        return (ours.to_path_buf(), OTHER_UID);
    }
    let owner = std::fs::metadata(theirs).unwrap().uid();
    assert_ne!(
        owner,
        running,
        "{} is ours: no foreign file to test with",
        theirs.display()
    );
    (theirs.to_path_buf(), owner)
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
    let running = running_uid(dir.path());
    let mine = dir.path().join("ws");
    std::fs::create_dir(&mine).unwrap();
    std::fs::set_permissions(&mine, std::fs::Permissions::from_mode(0o755)).unwrap();
    let (ws, owner) = foreign(&mine, Path::new("/"), running);
    let before = std::fs::read_dir(&ws).unwrap().count();
    let mode = std::fs::metadata(&ws).unwrap().permissions().mode() & 0o777;
    let fake = FakeLlm::scripted().await;
    let e = start_error(&ws, &fake);
    assert!(e.contains(&ws.display().to_string()), "{e}");
    assert!(
        e.contains(&format!("owned by uid {owner}"))
            && e.contains(&format!("runs as uid {running}")),
        "{e}"
    );
    // nothing was changed: not tightened, nothing created
    let meta = std::fs::metadata(&ws).unwrap();
    assert_eq!(meta.permissions().mode() & 0o777, mode);
    assert_eq!(meta.uid(), owner);
    assert_eq!(std::fs::read_dir(&ws).unwrap().count(), before);
}

#[tokio::test]
async fn a_config_owned_by_another_user_is_refused() {
    let dir = workspace();
    let ws = dir.path();
    let running = running_uid(ws);
    let fake = FakeLlm::scripted().await;
    drop(start_kernel(ws, &fake)); // a normal workspace with its config.toml
    let config = ws.canonicalize().unwrap().join("config.toml");
    if running != 0 {
        // the config.toml homebot would read is someone else's file
        std::fs::remove_file(&config).unwrap();
        std::os::unix::fs::symlink("/etc/passwd", &config).unwrap();
    }
    let (_, owner) = foreign(&config, &config, running);
    let e = start_error(ws, &fake);
    assert!(e.contains(&config.display().to_string()), "{e}");
    assert!(
        e.contains(&format!("owned by uid {owner}"))
            && e.contains(&format!("runs as uid {running}")),
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
        stderr.contains(&format!("owned by uid {owner}")),
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

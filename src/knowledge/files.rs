//! Reading a mode's knowledge folders: which files (regular `.md` / `.txt`, no dotfiles, no
//! symlinks leading out), within which bounds, cut into paragraphs.

use std::path::{Path, PathBuf};

/// Files looked at per mode; the rest are ignored (and logged once per scan).
pub const MAX_FILES: usize = 200;

/// Largest knowledge file read; bigger ones are skipped.
pub const MAX_FILE_BYTES: u64 = 256 * 1024;

/// The most bytes of a mode's knowledge searched (files past it, in name order, are not):
/// retrieval runs on the turn's path, so its work stays small whatever the folder holds.
pub const MAX_TOTAL_BYTES: u64 = 4 * 1024 * 1024;

/// Folder depth searched below a knowledge folder.
const MAX_DEPTH: usize = 4;

/// Longest paragraph kept whole; longer ones are cut into pieces of this many chars.
const MAX_CHUNK_CHARS: usize = 600;

/// Regular `.md` / `.txt` files below `dir` (no dotfiles, nothing leading out of `root`).
pub(super) fn collect_files(
    root: &Path,
    dir: &Path,
    name: &str,
    depth: usize,
    out: &mut Vec<(String, PathBuf, std::fs::Metadata)>,
) {
    if depth > MAX_DEPTH || out.len() > MAX_FILES {
        return;
    }
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let mut entries: Vec<_> = entries.flatten().collect();
    entries.sort_by_key(|e| e.file_name());
    for e in entries {
        let file_name = e.file_name().to_string_lossy().into_owned();
        if file_name.starts_with('.') {
            continue;
        }
        // symlink_metadata: a link is never followed (it could lead anywhere)
        let Ok(meta) = std::fs::symlink_metadata(e.path()) else {
            continue;
        };
        if meta.is_dir() {
            collect_files(root, &e.path(), name, depth + 1, out);
        } else if meta.is_file() && meta.len() <= MAX_FILE_BYTES {
            let ext = Path::new(&file_name)
                .extension()
                .map(|x| x.to_string_lossy().to_lowercase());
            if matches!(ext.as_deref(), Some("md" | "txt" | "markdown")) {
                let rel = e.path().strip_prefix(root).map(Path::to_path_buf);
                let rel = rel.unwrap_or_else(|_| PathBuf::from(&file_name));
                out.push((format!("{name}/{}", rel.display()), e.path(), meta));
            }
        }
    }
}

/// Paragraphs: blank-line separated blocks, a heading kept with the text under it,
/// long ones cut at [`MAX_CHUNK_CHARS`].
pub(super) fn split_chunks(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut heading: Option<String> = None;
    for block in text.split("\n\n") {
        let block = block.trim();
        if block.is_empty() {
            continue;
        }
        if block.starts_with('#') && !block.contains('\n') {
            heading = Some(block.to_string());
            continue;
        }
        // a paragraph keeps its nearest heading: its own first line when it has one
        // (the file's title above it would repeat the source shown with the snippet)
        let whole = match heading.take().filter(|_| !block.starts_with('#')) {
            Some(h) => format!("{h}\n{block}"),
            None => block.to_string(),
        };
        let chars: Vec<char> = whole.chars().collect();
        for piece in chars.chunks(MAX_CHUNK_CHARS) {
            out.push(piece.iter().collect());
        }
    }
    if let Some(h) = heading {
        out.push(h);
    }
    out
}

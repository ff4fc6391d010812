//! Reading only the end of a history file: the last records and how many lines come
//! before them, so a year-old chat (or an ended session's last turns) loads as fast as a
//! new one.

use crate::history::Record;
use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::path::Path;

/// The last records of a history file, how many lines come before them, and what was
/// wrong with the lines read.
pub type Tail = (Vec<Record>, usize, Vec<String>);

/// The last `keep` records of a history file and how many lines come before them, reading
/// only those records (the lines before are counted); `None` when the file needs the
/// full loader: it is not a regular file, or its last line is torn.
pub fn load_tail(path: &Path, keep: usize) -> std::io::Result<Option<Tail>> {
    let mut f = match File::open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Ok(Some((Vec::new(), 0, Vec::new())))
        }
        Err(e) => return Err(e),
    };
    let meta = f.metadata()?;
    if !meta.is_file() {
        return Ok(None);
    }
    let size = meta.len();
    if size == 0 {
        return Ok(Some((Vec::new(), 0, Vec::new())));
    }
    let mut last = [0u8; 1];
    f.seek(SeekFrom::End(-1))?;
    f.read_exact(&mut last)?;
    if last[0] != b'\n' {
        return Ok(None);
    }
    // backwards from the end: the start of the last `keep` lines
    const BLOCK: u64 = 64 * 1024;
    let mut buf = vec![0u8; BLOCK as usize];
    let (mut pos, mut newlines, mut start) = (size, 0usize, 0u64);
    'back: while pos > 0 {
        let n = BLOCK.min(pos);
        pos -= n;
        f.seek(SeekFrom::Start(pos))?;
        f.read_exact(&mut buf[..n as usize])?;
        for i in (0..n as usize).rev() {
            if buf[i] == b'\n' {
                newlines += 1;
                if newlines == keep + 1 {
                    start = pos + i as u64 + 1;
                    break 'back;
                }
            }
        }
    }
    // forwards: the lines before it, counted
    let mut before = 0usize;
    let mut left = start;
    f.seek(SeekFrom::Start(0))?;
    while left > 0 {
        let n = BLOCK.min(left) as usize;
        f.read_exact(&mut buf[..n])?;
        before += buf[..n].iter().filter(|&&b| b == b'\n').count();
        left -= n as u64;
    }
    let mut tail = Vec::with_capacity((size - start) as usize);
    f.seek(SeekFrom::Start(start))?;
    f.read_to_end(&mut tail)?;
    let mut records = Vec::new();
    let mut warnings = Vec::new();
    for (i, line) in tail.split(|&b| b == b'\n').enumerate() {
        if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        match serde_json::from_slice::<Record>(line) {
            Ok(r) => records.push(r),
            Err(e) => warnings.push(format!(
                "{}: line {} unreadable ({e}); kept in the file and skipped",
                path.display(),
                before + i + 1
            )),
        }
    }
    Ok(Some((records, before, warnings)))
}

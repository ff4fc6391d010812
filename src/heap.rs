//! Giving freed heap memory back to the system.
//!
//! glibc's allocator keeps what a thread frees in that thread's arena for its next
//! allocations and returns only the arena's top to the system. A gateway's turns
//! interleave short-lived buffers (request bodies of tens of KiB, parsed answers) with
//! long-lived records, so the arenas fill with free chunks between live ones: in the
//! soak, after 30,000 turns, half of the 19.6 MB in the arenas was free, and 3.2 MB of
//! it resident for nothing. [`release`] (`malloc_trim(0)`) hands every whole free page
//! of every arena back (`MADV_DONTNEED`); the gateway calls it every [`PERIOD`], off the
//! runtime's workers. It costs well under a millisecond of one thread's time.
//!
//! Elsewhere than glibc it does nothing (other allocators return memory themselves).

use std::time::Duration;

/// How often the gateway gives free pages back.
pub const PERIOD: Duration = Duration::from_secs(10);

/// Give every whole free page of the heap back to the system now. Returns whether any
/// memory was released (always `false` where the allocator is not glibc's).
pub fn release() -> bool {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        // SAFETY: malloc_trim only walks the allocator's own free lists under its locks.
        unsafe { libc::malloc_trim(0) == 1 }
    }
    #[cfg(not(all(target_os = "linux", target_env = "gnu")))]
    {
        false
    }
}

/// Call [`release`] every `period` on the blocking pool, as a background task of `tasks`
/// (the kernel's: its shutdown cancels it).
pub fn release_periodically(
    tasks: &crate::actor::Tasks,
    period: Duration,
) -> tokio::task::JoinHandle<()> {
    tasks.spawn(async move {
        let mut every = tokio::time::interval_at(tokio::time::Instant::now() + period, period);
        every.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            every.tick().await;
            let _ = tokio::task::spawn_blocking(release).await;
        }
    })
}

#[cfg(all(test, target_os = "linux", target_env = "gnu"))]
mod tests {
    use super::*;

    /// The resident pages of `[start, start + len)` (whole pages only), by `mincore`: what
    /// the kernel holds for these very addresses, whatever other threads of the test process
    /// allocate meanwhile (the process's RSS moves with them). An unmapped range counts as
    /// given back. `(resident, whole pages)`.
    fn resident_pages(start: usize, len: usize) -> (usize, usize) {
        // SAFETY: sysconf only reads a system constant.
        let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) } as usize;
        let first = start.next_multiple_of(page);
        let end = (start + len) / page * page;
        if end <= first {
            return (0, 0);
        }
        let mut vec = vec![0u8; (end - first) / page];
        // SAFETY: mincore writes one byte per page of the range into `vec`, which has one
        // for each; the range is only looked at, never touched.
        let ok =
            unsafe { libc::mincore(first as *mut libc::c_void, end - first, vec.as_mut_ptr()) };
        match ok {
            0 => (vec.iter().filter(|b| **b & 1 == 1).count(), vec.len()),
            _ => (0, vec.len()),
        }
    }

    #[test]
    fn free_chunks_between_live_ones_go_back_to_the_system() {
        // on a thread of its own, so its arena holds mostly what this test allocates
        let (pages, after) = std::thread::spawn(|| {
            // 64 KiB buffers (below the allocator's mmap threshold) each followed by a
            // small allocation that stays: freeing the buffers leaves holes, not a top
            let mut keep = Vec::new();
            let mut bufs = Vec::new();
            for i in 0..1024u32 {
                bufs.push(vec![1u8; 64 * 1024]); // written: resident
                keep.push(Box::new(i));
            }
            let holes: Vec<(usize, usize)> = bufs
                .iter()
                .map(|b| (b.as_ptr() as usize, b.len()))
                .collect();
            drop(bufs);
            // freed, the holes' pages stay resident: the allocator keeps them for the next
            // allocations (unless another test's trim, which covers every arena, came first)
            assert!(release(), "nothing was released");
            let (resident, pages) = holes
                .iter()
                .map(|&(p, n)| resident_pages(p, n))
                .fold((0, 0), |(r, t), (a, b)| (r + a, t + b));
            drop(keep);
            (pages, resident)
        })
        .join()
        .unwrap();
        // trimmed, their whole pages go back. Another thread of the test process may reuse
        // a hole meanwhile, so a quarter is the bar; without the trim all stay (seen: 15,364
        // of 15,364)
        assert!(pages > 10_000, "{pages} whole pages in the holes");
        assert!(
            after < pages / 4,
            "{after} of the holes' {pages} whole pages are still resident after the trim"
        );
    }
}

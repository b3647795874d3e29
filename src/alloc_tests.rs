use super::*;

/// Forks while other threads allocate and free on the global pool; each
/// child allocates and exits. Without the fork handlers a child can inherit
/// the lock held by a thread it does not have, and spin forever.
#[test]
fn a_child_forked_while_threads_allocate_can_allocate() {
    TEST_ALLOCATOR.install_fork_handlers();
    let stop = std::sync::Arc::new(AtomicBool::new(false));
    let busy: Vec<_> = (0..2)
        .map(|_| {
            let stop = stop.clone();
            std::thread::spawn(move || {
                while !stop.load(Ordering::Relaxed) {
                    let v: Vec<Vec<u8>> = (1..64).map(|n| vec![0u8; n * 24]).collect();
                    std::hint::black_box(v);
                }
            })
        })
        .collect();
    for _ in 0..300 {
        // SAFETY: the child only allocates (through the pool) and _exits.
        match unsafe { libc::fork() } {
            0 => {
                let v: Vec<Vec<u8>> = (1..64).map(|n| vec![1u8; n * 24]).collect();
                let sum: usize = v.iter().map(Vec::len).sum();
                // SAFETY: ends the child without running the parent's atexit state.
                unsafe { libc::_exit(if sum > 0 { 0 } else { 1 }) };
            }
            pid if pid > 0 => {
                let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
                let mut status = 0;
                loop {
                    // SAFETY: waiting for our own child.
                    let r = unsafe { libc::waitpid(pid, &mut status, libc::WNOHANG) };
                    if r == pid {
                        break;
                    }
                    if std::time::Instant::now() > deadline {
                        // SAFETY: our own child, stuck.
                        unsafe { libc::kill(pid, libc::SIGKILL) };
                        panic!("a forked child hung allocating");
                    }
                    std::thread::sleep(std::time::Duration::from_millis(1));
                }
                assert!(libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0);
            }
            _ => panic!("fork failed"),
        }
    }
    stop.store(true, Ordering::Relaxed);
    for t in busy {
        t.join().expect("allocating thread");
    }
}

fn layout(size: usize, align: usize) -> Layout {
    Layout::from_size_align(size, align).expect("layout")
}

#[test]
fn blocks_are_aligned_disjoint_and_reused() {
    let pool = Pool::new();
    let mut live = Vec::new();
    for (i, size) in [
        1,
        8,
        16,
        17,
        40,
        100,
        1000,
        5000,
        40000,
        65536,
        70000,
        1 << 20,
    ]
    .iter()
    .cycle()
    .take(600)
    .enumerate()
    {
        let l = layout(*size, if i % 7 == 0 { 64 } else { 8 });
        // SAFETY: non-zero layout; the block is written within its size.
        let p = unsafe { pool.alloc(l) };
        assert!(!p.is_null());
        assert_eq!(p as usize % l.align(), 0, "alignment of {l:?}");
        // SAFETY: `p` is a live block of `l.size()` bytes, just allocated.
        unsafe { std::ptr::write_bytes(p, (i % 251) as u8, l.size()) };
        live.push((p, l, (i % 251) as u8));
    }
    for (p, l, fill) in &live {
        // SAFETY: each block is live and was filled with `fill`.
        let bytes = unsafe { std::slice::from_raw_parts(*p, l.size()) };
        assert!(bytes.iter().all(|b| b == fill), "block overwritten");
    }
    for (p, l, _) in live.drain(..) {
        // SAFETY: allocated above with this layout, freed once.
        unsafe { pool.dealloc(p, l) };
    }
    // A freed block is handed out again (last freed, first reused).
    let l = layout(100, 8);
    // SAFETY: alloc/dealloc pairs with the same layout.
    unsafe {
        let a = pool.alloc(l);
        pool.dealloc(a, l);
        assert_eq!(pool.alloc(l), a);
        pool.dealloc(a, l);
    }
}

#[test]
fn zeroed_blocks_are_zero_whether_fresh_or_reused() {
    let pool = Pool::new();
    let l = layout(5000, 8);
    // SAFETY: blocks used within their size.
    unsafe {
        let a = pool.alloc_zeroed(l);
        assert!(
            std::slice::from_raw_parts(a, l.size())
                .iter()
                .all(|b| *b == 0)
        );
        std::ptr::write_bytes(a, 0xab, l.size());
        pool.dealloc(a, l);
        let b = pool.alloc_zeroed(l);
        assert_eq!(a, b, "reused");
        assert!(
            std::slice::from_raw_parts(b, l.size())
                .iter()
                .all(|b| *b == 0)
        );
        pool.dealloc(b, l);
    }
}

#[test]
fn realloc_keeps_contents_across_classes() {
    let pool = Pool::new();
    let l = layout(10, 1);
    // SAFETY: blocks used within their current sizes only.
    unsafe {
        let mut p = pool.alloc(l);
        std::ptr::copy_nonoverlapping(b"0123456789".as_ptr(), p, 10);
        let same = pool.realloc(p, l, 16);
        assert_eq!(same, p, "same class: no move");
        p = same;
        let mut size = 16;
        for next in [100, 5000, 70000, 200, 12] {
            p = pool.realloc(p, layout(size, 1), next);
            assert!(!p.is_null());
            size = next;
            let head = std::slice::from_raw_parts(p, 10);
            assert_eq!(head, b"0123456789");
        }
        pool.dealloc(p, layout(size, 1));
    }
}

#[test]
fn threads_share_the_pool_without_overlap() {
    static POOL: Pool = Pool::new();
    let handles: Vec<_> = (1..=4u8)
        .map(|t| {
            std::thread::spawn(move || {
                for round in 0..50usize {
                    let blocks: Vec<_> = (0..40usize)
                        .map(|i| {
                            let l = layout(1 + (i * 37 + round) % 3000, 8);
                            // SAFETY: a fresh block, filled within its size.
                            let p = unsafe { POOL.alloc(l) };
                            assert!(!p.is_null());
                            // SAFETY: `p` is this thread's live block of `l.size()` bytes.
                            unsafe { std::ptr::write_bytes(p, t, l.size()) };
                            (p, l)
                        })
                        .collect();
                    std::thread::yield_now();
                    for (p, l) in blocks {
                        // SAFETY: still ours; freed once.
                        unsafe {
                            let bytes = std::slice::from_raw_parts(p, l.size());
                            assert!(bytes.iter().all(|b| *b == t), "shared with another thread");
                            POOL.dealloc(p, l);
                        }
                    }
                }
            })
        })
        .collect();
    for h in handles {
        h.join().expect("thread");
    }
}

//! The binary's allocator. A CNI call lives for milliseconds and allocates a few
//! hundred KB in small pieces; musl's malloc maps and unmaps pages for that about
//! 40 times per call, and every unmap is a TLB shootdown (a fifth of the CPU of
//! a loopback ADD was in it). Here small blocks come from size-class free lists
//! carved out of arenas that are kept for the life of the process; blocks larger
//! than the biggest class, or aligned beyond 16 bytes, go to the system allocator.
//!
//! Invariants: (1) `State` is touched only with `busy` held; (2) a free block of
//! class `c` is `CLASSES[c]` bytes, 16-aligned, and holds the next free block's
//! address in its first 8 bytes; (3) arena memory is never returned to the
//! system, so a block's address stays valid for the life of the process;
//! (4) fork: see [`Pool::install_fork_handlers`].

use nix::libc;
use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::UnsafeCell;
use std::ptr::null_mut;
use std::sync::atomic::{AtomicBool, AtomicPtr, Ordering};

/// Block sizes (steps of 1.5x or 1.33x, so rounding wastes at most a third);
/// every one a multiple of 16, which keeps carved blocks 16-byte aligned.
const CLASSES: [usize; 24] = [
    16, 32, 48, 64, 96, 128, 192, 256, 384, 512, 768, 1024, 1536, 2048, 3072, 4096, 6144, 8192,
    12288, 16384, 24576, 32768, 49152, 65536,
];
const ALIGN: usize = 16;
/// Address space taken from the system at a time; pages count only once touched.
const ARENA: usize = 256 * 1024;

struct State {
    /// Head of each class's free list; a free block holds the next pointer.
    free: [*mut u8; CLASSES.len()],
    next: *mut u8,
    end: *mut u8,
}

pub struct Pool {
    busy: AtomicBool,
    state: UnsafeCell<State>,
}

// SAFETY: `state` is only touched while `busy` is held (invariant 1), so
// sharing a `&Pool` between threads cannot race on it.
unsafe impl Sync for Pool {}

/// The pool the fork handlers lock: the one installed as the global allocator.
static FORK_POOL: AtomicPtr<Pool> = AtomicPtr::new(null_mut());

fn class_of(layout: Layout) -> Option<usize> {
    if layout.align() > ALIGN {
        return None;
    }
    CLASSES.iter().position(|&c| c >= layout.size())
}

impl Pool {
    pub const fn new() -> Pool {
        Pool {
            busy: AtomicBool::new(false),
            state: UnsafeCell::new(State {
                free: [null_mut(); CLASSES.len()],
                next: null_mut(),
                end: null_mut(),
            }),
        }
    }

    /// Runs `f` on the state with the lock held (a spin lock: held for a few
    /// instructions, and almost never contended in a one-call process).
    ///
    /// Fork: a child has only the forking thread. Had another thread held this
    /// lock at the fork, the child would spin forever on its first allocation.
    /// The fork handlers ([`Pool::install_fork_handlers`]) take the lock before
    /// `fork()` and release it on both sides, so the child starts with it free.
    fn locked<T>(&self, f: impl FnOnce(&mut State) -> T) -> T {
        self.acquire();
        // SAFETY: the lock is held, so this is the only reference.
        let out = f(unsafe { &mut *self.state.get() });
        self.release();
        out
    }

    fn acquire(&self) {
        while self
            .busy
            .compare_exchange_weak(false, true, Ordering::Acquire, Ordering::Relaxed)
            .is_err()
        {
            std::hint::spin_loop();
        }
    }

    fn release(&self) {
        self.busy.store(false, Ordering::Release);
    }

    /// Makes `fork()` safe for this pool (call it for the global allocator,
    /// before threads start; later calls do nothing): `pthread_atfork` handlers
    /// take the lock before the fork and release it in parent and child, so no
    /// fork happens while another thread is inside the pool.
    pub fn install_fork_handlers(&'static self) {
        extern "C" fn prepare() {
            // SAFETY: FORK_POOL is null or points to a 'static Pool.
            if let Some(pool) = unsafe { FORK_POOL.load(Ordering::Acquire).as_ref() } {
                pool.acquire();
            }
        }
        extern "C" fn after() {
            // SAFETY: as in `prepare`, which took the lock this releases.
            if let Some(pool) = unsafe { FORK_POOL.load(Ordering::Acquire).as_ref() } {
                pool.release();
            }
        }
        let me = std::ptr::from_ref(self).cast_mut();
        if FORK_POOL
            .compare_exchange(null_mut(), me, Ordering::AcqRel, Ordering::Acquire)
            .is_ok()
        {
            // SAFETY: plain C callbacks with no arguments, registered once.
            unsafe { libc::pthread_atfork(Some(prepare), Some(after), Some(after)) };
        }
    }
}

impl Default for Pool {
    fn default() -> Self {
        Pool::new()
    }
}

impl Pool {
    /// A block of `class`, and whether it is fresh from an arena (still zero).
    fn take(&self, class: usize) -> (*mut u8, bool) {
        let size = CLASSES[class];
        self.locked(|s| {
            let head = s.free[class];
            if !head.is_null() {
                // SAFETY: a free block of this class holds the next pointer.
                s.free[class] = unsafe { head.cast::<*mut u8>().read() };
                return (head, false);
            }
            if (s.end as usize) - (s.next as usize) < size {
                // The rest of the old arena is left unused (less than one block).
                // Anonymous pages: zero, and resident only once touched.
                // SAFETY: a fresh private anonymous mapping; no existing memory involved.
                let arena = unsafe {
                    libc::mmap(
                        null_mut(),
                        ARENA,
                        libc::PROT_READ | libc::PROT_WRITE,
                        libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                        -1,
                        0,
                    )
                };
                if arena == libc::MAP_FAILED {
                    return (null_mut(), false);
                }
                s.next = arena.cast();
                // SAFETY: one past the end of the mapping just made.
                s.end = unsafe { s.next.add(ARENA) };
            }
            let block = s.next;
            // SAFETY: `size` bytes fit before `end` (checked above).
            s.next = unsafe { block.add(size) };
            (block, true)
        })
    }
}

// SAFETY: blocks of a class are disjoint (carved once from an arena, or reused
// only after `dealloc` put them on the free list), at least `layout.size()`
// bytes and 16-aligned for the layouts sent to classes (align <= 16); larger or
// more aligned layouts go to `System`, and `dealloc` routes them back there by
// the same `class_of` test.
unsafe impl GlobalAlloc for Pool {
    /// # Safety
    /// As `GlobalAlloc::alloc`: `layout` has a non-zero size.
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        match class_of(layout) {
            Some(class) => self.take(class).0,
            // SAFETY: the caller's layout, passed on.
            None => unsafe { System.alloc(layout) },
        }
    }

    /// Fresh arena memory is already zero: not writing it keeps untouched
    /// pages (most of a 32 KB netlink receive buffer) out of the resident set.
    ///
    /// # Safety
    /// As `GlobalAlloc::alloc_zeroed`: `layout` has a non-zero size.
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        let Some(class) = class_of(layout) else {
            // SAFETY: the caller's layout, passed on.
            return unsafe { System.alloc_zeroed(layout) };
        };
        let (block, fresh) = self.take(class);
        if !block.is_null() && !fresh {
            // SAFETY: the block holds at least `layout.size()` bytes.
            unsafe { std::ptr::write_bytes(block, 0, layout.size()) };
        }
        block
    }

    /// # Safety
    /// As `GlobalAlloc::dealloc`: `ptr` came from this pool with `layout` and is
    /// freed once.
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        let Some(class) = class_of(layout) else {
            // SAFETY: it came from System.alloc with this layout.
            return unsafe { System.dealloc(ptr, layout) };
        };
        self.locked(|s| {
            // SAFETY: the block is ours again and at least 16 bytes, 16-aligned.
            unsafe { ptr.cast::<*mut u8>().write(s.free[class]) };
            s.free[class] = ptr;
        })
    }

    /// # Safety
    /// As `GlobalAlloc::realloc`: `ptr` came from this pool with `layout`, and
    /// `new_size` is non-zero and does not overflow when rounded to the alignment.
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // Growing or shrinking within the block's class needs no move.
        if let (Some(old), Ok(new)) = (
            class_of(layout),
            Layout::from_size_align(new_size, layout.align()),
        ) && class_of(new) == Some(old)
        {
            return ptr;
        }
        let Ok(new_layout) = Layout::from_size_align(new_size, layout.align()) else {
            return null_mut();
        };
        // SAFETY: a valid layout; the old block is valid for `layout.size()` bytes.
        unsafe {
            let new = self.alloc(new_layout);
            if !new.is_null() {
                std::ptr::copy_nonoverlapping(ptr, new, layout.size().min(new_size));
                self.dealloc(ptr, layout);
            }
            new
        }
    }
}

/// The unit tests run on this allocator too (the binary installs it in main.rs).
#[cfg(test)]
#[global_allocator]
static TEST_ALLOCATOR: Pool = Pool::new();

#[cfg(test)]
#[path = "alloc_tests.rs"]
mod tests;

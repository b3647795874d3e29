//! Exclusive file locks with a deadline: a lock another process holds forever
//! (stuck, or hostile) ends in a clear error naming the file, never a hang.

use crate::files::path_error;
use nix::errno::Errno;
use nix::fcntl::{Flock, FlockArg};
use std::fs::File;
use std::io;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::time::Duration;

/// How long a plugin waits for a lock before giving up.
pub const DEADLINE: Duration = Duration::from_secs(60);

/// Opens (creating it 0600, so no other user can open it to hold the lock;
/// never through a symlink) and locks `path` exclusively, waiting at most
/// `deadline`. A file left with wider permissions by an older version is
/// narrowed to 0600.
pub fn lock_private(path: &Path, deadline: Duration) -> io::Result<Flock<File>> {
    let (file, _) =
        crate::files::open_state(path, crate::files::StateOpen::ReadWrite)?.into_parts();
    let meta = file.metadata().map_err(|e| path_error(e, "stat", path))?;
    if meta.permissions().mode() & 0o077 != 0 {
        file.set_permissions(std::fs::Permissions::from_mode(0o600))
            .map_err(|e| path_error(e, "chmod", path))?;
    }
    lock(file, path, deadline)
}

fn lock(file: File, path: &Path, deadline: Duration) -> io::Result<Flock<File>> {
    let file = match Flock::lock(file, FlockArg::LockExclusiveNonblock) {
        Ok(lock) => return Ok(lock),
        Err((file, Errno::EWOULDBLOCK)) => file,
        Err((_, e)) => return Err(path_error(io::Error::from(e), "lock", path)),
    };
    if deadline.is_zero() {
        return Err(timed_out(path, deadline));
    }
    wait_in_queue(file, path, deadline)
}

/// Waits for the lock in the kernel's queue, so that a waiter takes it the
/// moment it is released (polling slept up to 50 ms past each release, and
/// 30 parallel ADDs on one network queued those sleeps). flock(2) takes no
/// timeout, so the wait runs on a thread of its own; one abandoned at the
/// deadline drops the lock as soon as it gets it, its result having nowhere
/// to go (the channel is gone).
fn wait_in_queue(file: File, path: &Path, deadline: Duration) -> io::Result<Flock<File>> {
    let (tx, rx) = std::sync::mpsc::sync_channel(1);
    let waiter = std::thread::Builder::new()
        .name("lock".into())
        .stack_size(64 * 1024)
        .spawn(move || {
            let mut file = file;
            let got = loop {
                match Flock::lock(file, FlockArg::LockExclusive) {
                    Err((f, Errno::EINTR)) => file = f,
                    other => break other.map_err(|(_, e)| e),
                }
            };
            let _ = tx.send(got);
        })
        .map_err(|e| path_error(e, "start a thread to wait for the lock on", path))?;
    match rx.recv_timeout(deadline) {
        Ok(got) => {
            // Done with its one send: joined so that no thread of ours is
            // left when a caller forks.
            let _ = waiter.join();
            got.map_err(|e| path_error(io::Error::from(e), "lock", path))
        }
        Err(std::sync::mpsc::RecvTimeoutError::Timeout) => Err(timed_out(path, deadline)),
        Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => Err(io::Error::other(format!(
            "the thread waiting for the lock on {} ended without it",
            path.display()
        ))),
    }
}

fn timed_out(path: &Path, deadline: Duration) -> io::Error {
    io::Error::new(
        io::ErrorKind::TimedOut,
        format!(
            "timed out after {} s waiting for the lock on {} (another process holds it)",
            deadline.as_secs(),
            path.display()
        ),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Instant;

    #[test]
    fn a_held_lock_times_out_naming_the_file_and_files_are_private() {
        let dir = std::env::temp_dir().join(format!("cni-multi-lock-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("dir");
        let path = dir.join("lock");
        std::fs::write(&path, "").expect("file");
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).expect("chmod");
        let held = lock_private(&path, DEADLINE).expect("first");
        let mode = std::fs::metadata(&path).expect("stat").permissions().mode();
        assert_eq!(mode & 0o777, 0o600, "narrowed to 0600");
        let start = Instant::now();
        let e = lock_private(&path, Duration::from_millis(200)).expect_err("held");
        assert_eq!(e.kind(), io::ErrorKind::TimedOut);
        assert!(e.to_string().contains(&path.display().to_string()), "{e}");
        assert!(start.elapsed() >= Duration::from_millis(200));
        drop(held);
        lock_private(&path, Duration::from_millis(200)).expect("free again");
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// A waiter sits in the kernel's queue (a blocked entry, `->`, in
    /// /proc/locks on the file's inode), not in a sleep between retries.
    #[test]
    fn a_waiter_queues_in_the_kernel_and_gets_the_lock_when_released() {
        use std::os::unix::fs::MetadataExt;
        let dir = std::env::temp_dir().join(format!("cni-multi-lockq-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("dir");
        let path = dir.join("lock");
        let held = lock_private(&path, DEADLINE).expect("first");
        let inode = std::fs::metadata(&path).expect("stat").ino();
        let waiting = {
            let path = path.clone();
            std::thread::spawn(move || lock_private(&path, DEADLINE).map(drop))
        };
        let blocked = |text: &str| {
            text.lines().any(|l| {
                l.contains("->") && l.contains("FLOCK") && l.contains(&format!(":{inode} "))
            })
        };
        let mut queued = false;
        for _ in 0..500 {
            if blocked(&std::fs::read_to_string("/proc/locks").unwrap_or_default()) {
                queued = true;
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        drop(held);
        let got = waiting.join().expect("waiter");
        let _ = std::fs::remove_dir_all(&dir);
        assert!(queued, "no blocked flock on inode {inode} in /proc/locks");
        got.expect("the waiter got the lock once it was released");
    }
}

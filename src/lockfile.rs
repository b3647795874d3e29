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
#[path = "lockfile_tests.rs"]
mod tests;

//! Exclusive file locks with a deadline: a lock another process holds forever
//! (stuck, or hostile) ends in a clear error naming the file, never a hang.

use crate::files::path_error;
use nix::errno::Errno;
use nix::fcntl::{Flock, FlockArg};
use std::fs::File;
use std::io;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::time::{Duration, Instant};

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

fn lock(mut file: File, path: &Path, deadline: Duration) -> io::Result<Flock<File>> {
    let start = Instant::now();
    let mut pause = Duration::from_millis(1);
    loop {
        match Flock::lock(file, FlockArg::LockExclusiveNonblock) {
            Ok(lock) => return Ok(lock),
            Err((f, Errno::EWOULDBLOCK)) if start.elapsed() < deadline => {
                file = f;
                std::thread::sleep(pause.min(deadline.saturating_sub(start.elapsed())));
                pause = (pause * 2).min(Duration::from_millis(50));
            }
            Err((_, Errno::EWOULDBLOCK)) => {
                return Err(io::Error::new(
                    io::ErrorKind::TimedOut,
                    format!(
                        "timed out after {} s waiting for the lock on {} (another process holds it)",
                        deadline.as_secs(),
                        path.display()
                    ),
                ));
            }
            Err((_, e)) => return Err(path_error(io::Error::from(e), "lock", path)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
}

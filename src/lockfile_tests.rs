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
        text.lines()
            .any(|l| l.contains("->") && l.contains("FLOCK") && l.contains(&format!(":{inode} ")))
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

//! The harness leaves nothing behind: a test's temporary directory goes, with
//! whatever is mounted in it, also when the test panics (`make test` checks
//! the whole run with `tests/leftovers.sh`).

use crate::harness::{TempDir, mounts_under};
use nix::mount::{MsFlags, mount};

#[test]
fn a_temp_dir_unmounts_what_is_mounted_under_it_even_when_the_test_panics() {
    // A private mount namespace for this thread and the thread it starts, so
    // the machine's mount table never sees these mounts.
    nix::sched::unshare(nix::sched::CloneFlags::CLONE_NEWNS).expect("unshare mount ns");
    let private = MsFlags::MS_REC | MsFlags::MS_PRIVATE;
    mount(None::<&str>, "/", None::<&str>, private, None::<&str>).expect("make / private");
    let (tx, rx) = std::sync::mpsc::channel();
    let test = std::thread::spawn(move || {
        let dir = TempDir::new("leftover");
        let inner = dir.0.join("pod");
        std::fs::create_dir(&inner).expect("inner dir");
        // As `cnitool netns add` leaves a directory: a mount point itself,
        // with a mount in it.
        for point in [&dir.0, &inner] {
            mount(
                Some(point),
                point,
                None::<&str>,
                MsFlags::MS_BIND,
                None::<&str>,
            )
            .expect("bind mount");
        }
        assert_eq!(mounts_under(&dir.0).len(), 2);
        let _ = tx.send(dir.0.clone());
        panic!("a test fails with its mounts in place");
    });
    assert!(test.join().is_err(), "the test thread should have panicked");
    let dir = rx.recv().expect("the test's directory");
    assert_eq!(mounts_under(&dir), Vec::<std::path::PathBuf>::new());
    assert!(!dir.exists(), "{} is left", dir.display());
}

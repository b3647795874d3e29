use super::*;

const HOST: &str = "27 1 254:0 / / rw,relatime - ext4 /dev/vda rw\n\
        40 27 0:50 / /run/netns rw shared:5 - tmpfs tmpfs rw\n";
const PRIVATE: &str = "43 42 254:0 / / rw,relatime - ext4 /dev/vda rw\n\
        60 43 0:50 / /run/netns rw - tmpfs tmpfs rw\n\
        61 43 0:51 / /var/run/net\\040ns rw master:7 - tmpfs tmpfs rw\n";

#[test]
fn the_boot_mount_namespace_is_told_by_its_roots_parent() {
    assert!(root_parent_is_rootfs(HOST));
    assert!(!root_parent_is_rootfs(PRIVATE));
    assert!(!root_parent_is_rootfs(""));
}

#[test]
fn propagation_is_read_from_the_mount_holding_the_directory() {
    assert!(receives_mounts(HOST, Path::new("/run/netns")));
    assert!(!receives_mounts(HOST, Path::new("/tmp/pinned")));
    assert!(!receives_mounts(PRIVATE, Path::new("/run/netns")));
    assert!(receives_mounts(PRIVATE, Path::new("/var/run/net ns")));
    assert!(!receives_mounts(PRIVATE, Path::new("/var/run")));
    let slave_root = "43 42 254:0 / / rw master:1 - overlay overlay rw\n";
    assert!(!receives_mounts(slave_root, Path::new("/run/netns")));
}

#[test]
fn only_the_host_trusts_an_unmounted_pin() {
    let dir = Path::new("/nonexistent-dir");
    assert!(Mounts::Host.trusts(Seen::NotNamespace, dir));
    assert!(Mounts::Host.trusts(Seen::Missing, dir));
    let own = Mounts::Own(PRIVATE.to_string());
    assert!(!own.trusts(Seen::NotNamespace, dir));
    assert!(own.trusts(Seen::Namespace, dir));
    assert!(!own.trusts(Seen::Missing, Path::new("/run/netns")));
    assert!(own.trusts(Seen::Missing, Path::new("/var/run/net ns")));
}

#[test]
fn task_paths_and_start_times() {
    assert_eq!(
        task_dir(Path::new("/proc/12/ns/net")),
        Some(PathBuf::from("/proc/12"))
    );
    assert_eq!(
        task_dir(Path::new("/proc/12/task/13/ns/net")),
        Some(PathBuf::from("/proc/12/task/13"))
    );
    for bad in [
        "/proc/self/ns/net",
        "/proc/12/ns/uts",
        "/run/netns/x",
        "/proc/1/../2/ns/net",
    ] {
        assert_eq!(task_dir(Path::new(bad)), None, "{bad}");
    }
    let me = PathBuf::from(format!("/proc/{}/ns/net", std::process::id()));
    assert_eq!(task_started_by(&me, SystemTime::now()), Some(true));
    let long_ago = SystemTime::now() - Duration::from_secs(10 * 365 * 86400);
    assert_eq!(task_started_by(&me, long_ago), Some(false));
    assert_eq!(
        task_started_by(Path::new("/proc/0/ns/net"), SystemTime::now()),
        None
    );
}

#[test]
fn a_namespace_is_nsfs() {
    assert!(is_namespace(Path::new("/proc/self/ns/net")).expect("statfs"));
    assert!(!is_namespace(Path::new("/proc/self/status")).expect("statfs"));
    assert!(!is_namespace(Path::new("/nonexistent/netns")).expect("statfs"));
}

#[test]
fn mountinfo_octal_escapes() {
    assert_eq!(unescape("/a\\040b\\134c"), PathBuf::from("/a b\\c"));
    assert_eq!(unescape("/plain\\9"), PathBuf::from("/plain\\9"));
}

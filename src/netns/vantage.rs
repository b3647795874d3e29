//! What this process can see of the host's namespaces, so one is judged
//! gone only on evidence. A pinned namespace is a bind mount: in a mount
//! namespace of its own (a unit with `PrivateMounts`, a container without
//! mount propagation, `unshare -m`) a process sees the empty file under a
//! mount it does not have, or no file at all, while the pod lives. And a
//! `/proc/<pid>/ns/net` path names whatever process has that PID now.

use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

/// What a netns path shows from here.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Seen {
    /// A network namespace (nsfs).
    Namespace,
    /// No such path.
    Missing,
    /// Something that is not a namespace (the file a bind mount sat on).
    NotNamespace,
}

/// How much of the host's mounts this process sees.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Mounts {
    /// The mount namespace the kernel booted with: what is not mounted here
    /// is mounted nowhere a runtime pins namespaces.
    Host,
    /// Another mount namespace (its mountinfo): a directory shows the host's
    /// mounts only where its mount receives propagation from the host.
    Own(String),
}

impl Mounts {
    /// The initial mount namespace's root sits on the kernel's rootfs, mount
    /// 1, which no other mount namespace has (copies get new IDs, containers
    /// pivot to a root of their own).
    pub fn of_self() -> Mounts {
        let text = std::fs::read_to_string("/proc/self/mountinfo").unwrap_or_default();
        if root_parent_is_rootfs(&text) {
            Mounts::Host
        } else {
            Mounts::Own(text)
        }
    }

    /// Whether "dead" may be read from what a path in `dir` shows. From the
    /// host's mount namespace both missing and unmounted paths are dead; from
    /// another only a missing one, and only in a directory whose mount
    /// receives the host's mounts (a hostPath with HostToContainer
    /// propagation): the file of an unmounted pin may be a mount it missed.
    pub fn trusts(&self, seen: Seen, dir: &Path) -> bool {
        match (self, seen) {
            (_, Seen::Namespace) | (Mounts::Host, _) => true,
            (Mounts::Own(_), Seen::NotNamespace) => false,
            (Mounts::Own(mountinfo), Seen::Missing) => receives_mounts(mountinfo, dir),
        }
    }
}

/// What `path` is from here.
pub fn seen(path: &Path) -> std::io::Result<Seen> {
    use nix::errno::Errno;
    use nix::sys::statfs::{NSFS_MAGIC, statfs};
    match statfs(path) {
        Ok(fs) if fs.filesystem_type() == NSFS_MAGIC => Ok(Seen::Namespace),
        Ok(_) => Ok(Seen::NotNamespace),
        Err(Errno::ENOENT | Errno::ENOTDIR) => Ok(Seen::Missing),
        Err(e) => Err(e.into()),
    }
}

/// Whether `path` is a namespace now; a missing path (or a plain file left
/// where a bind mount was) is not.
pub fn is_namespace(path: &Path) -> std::io::Result<bool> {
    Ok(seen(path)? == Seen::Namespace)
}

/// Whether mountinfo's line for `/` has mount 1 as its parent.
fn root_parent_is_rootfs(mountinfo: &str) -> bool {
    mountinfo.lines().any(|line| {
        let mut f = line.split(' ');
        let (_, parent, _, _, point) = (f.next(), f.next(), f.next(), f.next(), f.next());
        point == Some("/") && parent == Some("1")
    })
}

/// Whether the mount holding `dir` (the longest mount point above it) is a
/// shared mount or a slave of one, so mounts made on the host reach it.
fn receives_mounts(mountinfo: &str, dir: &Path) -> bool {
    let mut best: Option<(usize, bool)> = None;
    // A container's root is its image, whatever its propagation: only a
    // mount of its own at or above the directory (below `/`) can be the host's.
    for line in mountinfo.lines() {
        let fields: Vec<&str> = line.split(' ').collect();
        let Some(point) = fields.get(4).map(|p| unescape(p)) else {
            continue;
        };
        if !dir.starts_with(&point) {
            continue;
        }
        let tags = fields.iter().skip(6).take_while(|f| **f != "-");
        let propagated = tags
            .clone()
            .any(|t| t.starts_with("shared:") || t.starts_with("master:"));
        let depth = point.components().count();
        // A later line for the same point is a mount over the earlier one.
        if best.is_none_or(|(d, _)| depth >= d) {
            best = Some((depth, propagated));
        }
    }
    best.is_some_and(|(depth, p)| p && depth > 1)
}

/// mountinfo escapes space, tab, newline and backslash as octal.
fn unescape(field: &str) -> PathBuf {
    let b = field.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        let octal = b
            .get(i + 1..i + 4)
            .filter(|d| d.iter().all(|c| (b'0'..=b'7').contains(c)));
        match (b[i], octal) {
            (b'\\', Some(d)) => {
                out.push(
                    d.iter()
                        .fold(0u8, |v, c| v.wrapping_mul(8).wrapping_add(c - b'0')),
                );
                i += 4;
            }
            (c, _) => {
                out.push(c);
                i += 1;
            }
        }
    }
    use std::os::unix::ffi::OsStringExt;
    PathBuf::from(std::ffi::OsString::from_vec(out))
}

/// For `/proc/<pid>[/task/<tid>]/ns/net`: whether that task started no later
/// than `by` (the time its attachment was cached). A PID reused since names
/// another process's namespace. None when the path is no such path or the
/// task is gone.
pub fn task_started_by(netns: &Path, by: SystemTime) -> Option<bool> {
    let task = task_dir(netns)?;
    let stat = std::fs::read_to_string(task.join("stat")).ok()?;
    // Field 22 (starttime, clock ticks since boot) counts from after the
    // command's closing parenthesis, which may itself hold spaces.
    let after = stat.rsplit_once(')')?.1;
    let ticks: u64 = after.split_whitespace().nth(19)?.parse().ok()?;
    let hz = nix::unistd::sysconf(nix::unistd::SysconfVar::CLK_TCK)
        .ok()
        .flatten()
        .and_then(|v| u64::try_from(v).ok())
        .filter(|v| *v > 0)?;
    let since_boot = Duration::from_millis(ticks.saturating_mul(1000) / hz);
    let boot = boot_time()?;
    // Clock ticks are coarse: a second of slack, far less than any PID's reuse.
    Some(boot + since_boot <= by + Duration::from_secs(1))
}

/// The process (or task) directory of a `/proc/.../ns/net` path.
fn task_dir(netns: &Path) -> Option<PathBuf> {
    let mut parts = netns.strip_prefix("/proc").ok()?.components();
    let pid = parts.next()?.as_os_str().to_str()?;
    if !pid.bytes().all(|b| b.is_ascii_digit()) || pid.is_empty() {
        return None;
    }
    let mut dir = Path::new("/proc").join(pid);
    let rest: Vec<_> = parts.map(|c| c.as_os_str().to_owned()).collect();
    match rest
        .iter()
        .map(|s| s.to_str())
        .collect::<Vec<_>>()
        .as_slice()
    {
        [Some("ns"), Some("net")] => {}
        [Some("task"), Some(tid), Some("ns"), Some("net")]
            if tid.bytes().all(|b| b.is_ascii_digit()) && !tid.is_empty() =>
        {
            dir = dir.join("task").join(tid);
        }
        _ => return None,
    }
    Some(dir)
}

/// When the system booted, on the wall clock (now less /proc/uptime).
fn boot_time() -> Option<SystemTime> {
    let text = std::fs::read_to_string("/proc/uptime").ok()?;
    let up: f64 = text.split_whitespace().next()?.parse().ok()?;
    SystemTime::now().checked_sub(Duration::try_from_secs_f64(up).ok()?)
}

#[cfg(test)]
#[path = "vantage_tests.rs"]
mod tests;

//! Network namespaces: work runs on the calling thread, which joins the
//! namespace and returns to its own afterwards. (A thread per entry cost a 2 MB
//! stack map and its unmap with a TLB shootdown: more than the netlink work.)

pub mod vantage;

use crate::quote::quoted;
use nix::sched::{CloneFlags, setns};
use std::fmt;
use std::fs::File;
use std::path::{Path, PathBuf};

// NS_GET_USERNS (linux/nsfs.h, Linux 4.9): a descriptor of the user namespace
// that owns a namespace.
nix::ioctl_none!(ns_get_userns, 0xb7, 0x1);

#[derive(Debug)]
pub enum Error {
    /// The path does not exist (the namespace is gone).
    NotFound(PathBuf),
    Open(PathBuf, std::io::Error),
    Enter(PathBuf, nix::Error),
    /// A named namespace (`named`): a name that cannot be a file name.
    InvalidName(String),
    /// `named::delete` of a name that is not there.
    NoSuchName(String, PathBuf),
    /// A mount, unmount or unshare for a named namespace.
    Sys(String, PathBuf, nix::Error),
    /// A file operation (the io::Error comes from fs_err and names the path).
    File(std::io::Error),
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::NotFound(p) => write!(f, "netns {} does not exist", p.display()),
            Error::Open(p, e) => write!(f, "failed to open netns {}: {e}", p.display()),
            Error::Enter(p, nix::Error::EINVAL) => {
                write!(f, "{} is not a network namespace", p.display())
            }
            Error::Enter(p, e) => write!(f, "failed to enter netns {}: {e}", p.display()),
            Error::InvalidName(name) => {
                write!(f, "invalid namespace name {name}", name = quoted(&name))
            }
            Error::NoSuchName(name, dir) => {
                write!(
                    f,
                    "no namespace {name} in {}",
                    dir.display(),
                    name = quoted(&name)
                )
            }
            Error::Sys(op, p, e) => write!(f, "{op} {}: {e}", p.display()),
            Error::File(e) => write!(f, "{e}"),
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Error::NotFound(_) | Error::InvalidName(_) | Error::NoSuchName(..) => None,
            Error::Open(_, e) | Error::File(e) => Some(e),
            Error::Enter(_, e) | Error::Sys(_, _, e) => Some(e),
        }
    }
}

/// An open handle on a network namespace.
pub struct NetNs {
    file: File,
    path: PathBuf,
}

impl NetNs {
    pub fn open(path: impl AsRef<Path>) -> Result<NetNs, Error> {
        let path = path.as_ref().to_path_buf();
        match File::open(&path) {
            Ok(file) => Ok(NetNs { file, path }),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Err(Error::NotFound(path)),
            Err(e) => Err(Error::Open(path, e)),
        }
    }

    /// For DEL: None when the runtime gave no namespace or it is already gone
    /// (nothing of the container can be left in it); any other failure is an
    /// error, so DEL never reports success over a namespace it could not enter.
    pub fn open_for_del(path: &str) -> Result<Option<NetNs>, Error> {
        if path.is_empty() {
            return Ok(None);
        }
        match NetNs::open(path) {
            Ok(ns) => Ok(Some(ns)),
            Err(Error::NotFound(_)) => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// The namespace of the calling thread (the host side, on the main thread).
    pub fn current() -> Result<NetNs, Error> {
        NetNs::open("/proc/thread-self/ns/net")
    }

    /// A new namespace that nothing names: it lives as long as this handle (or
    /// whatever is moved into it holds it), so it goes away on every path. Made
    /// on the calling thread, which returns to its own namespace at once.
    pub fn temporary() -> Result<NetNs, Error> {
        let path = PathBuf::from("/proc/thread-self/ns/net");
        let home = NetNs::current()?;
        nix::sched::unshare(CloneFlags::CLONE_NEWNET)
            .map_err(|e| Error::Sys("unshare a temporary netns for".into(), path.clone(), e))?;
        let _back = Return(home);
        let file = File::open(&path).map_err(|e| Error::Open(path, e))?;
        Ok(NetNs {
            file,
            path: PathBuf::from("(temporary netns)"),
        })
    }

    pub fn fd(&self) -> std::os::fd::RawFd {
        use std::os::fd::AsRawFd;
        self.file.as_raw_fd()
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Whether the namespace belongs to this process's user namespace. One that
    /// belongs to another (a user-namespaced pod's) can be changed by whoever
    /// holds CAP_NET_ADMIN there, who can also make namespaces of its own,
    /// with no right over ours.
    pub fn owner_is_ours(&self) -> Result<bool, Error> {
        use std::os::fd::{FromRawFd, OwnedFd};
        let failed = |op: &str, e| Error::Sys(op.into(), self.path.clone(), e);
        // SAFETY: NS_GET_USERNS reads and writes no memory of ours; it
        // returns a new descriptor or an error.
        let owner = match unsafe { ns_get_userns(self.fd()) } {
            // SAFETY: a descriptor the kernel has just opened for us: nothing
            // else owns it.
            Ok(fd) => unsafe { OwnedFd::from_raw_fd(fd) },
            // The owner is an ancestor of our user namespace: not ours.
            Err(nix::Error::EPERM) => return Ok(false),
            Err(e) => return Err(failed("find the user namespace owning", e)),
        };
        let theirs = nix::sys::stat::fstat(&owner)
            .map_err(|e| failed("stat the user namespace owning", e))?;
        let ours = nix::sys::stat::stat("/proc/self/ns/user")
            .map_err(|e| failed("stat our user namespace, comparing with", e))?;
        Ok((theirs.st_dev, theirs.st_ino) == (ours.st_dev, ours.st_ino))
    }

    /// Runs `f` inside this namespace and returns its value; the calling thread
    /// is back in its own namespace when this returns (or unwinds). Sockets and
    /// /proc/sys/net files opened inside stay bound to this namespace.
    pub fn run<T, F>(&self, f: F) -> Result<T, Error>
    where
        F: FnOnce() -> T,
    {
        let home = NetNs::current()?;
        setns(&self.file, CloneFlags::CLONE_NEWNET)
            .map_err(|e| Error::Enter(self.path.clone(), e))?;
        let _back = Return(home);
        Ok(f())
    }
}

/// Takes the thread back to its namespace when dropped.
struct Return(NetNs);

impl Drop for Return {
    fn drop(&mut self) {
        if let Err(e) = setns(&self.0.file, CloneFlags::CLONE_NEWNET) {
            // Going on would act on the container's namespace as if it were the
            // host's; nothing can be trusted past this point.
            let error = crate::cni::Error::caused_by(
                crate::cni::Code::Internal,
                format!("failed to return to netns {}", self.0.path.display()),
                e,
            );
            println!("{}", error.to_json());
            std::process::exit(1);
        }
    }
}

/// Named namespaces (`ip netns` compatible): a bind mount of the namespace on a
/// file under /run/netns, made without the `ip` binary.
pub mod named {
    use super::Error;
    use nix::mount::{MntFlags, MsFlags, mount, umount2};
    use nix::sched::{CloneFlags, unshare};
    use std::path::{Path, PathBuf};

    pub const DEFAULT_DIR: &str = "/run/netns";

    fn checked(name: &str) -> Result<&str, Error> {
        if crate::cni::env::is_valid_name(name) {
            Ok(name)
        } else {
            Err(Error::InvalidName(name.to_string()))
        }
    }

    /// Makes `dir` a shared mount point (as iproute2 does), so namespaces mounted
    /// under it are visible in mount namespaces that share it.
    fn share(dir: &Path) -> Result<(), Error> {
        fs_err::create_dir_all(dir).map_err(Error::File)?;
        let make_shared = || {
            mount(
                None::<&str>,
                dir,
                None::<&str>,
                MsFlags::MS_SHARED | MsFlags::MS_REC,
                None::<&str>,
            )
        };
        let failed = |e| Error::Sys("make a shared mount of".into(), dir.to_path_buf(), e);
        match make_shared() {
            Ok(()) => Ok(()),
            // Not a mount point yet: bind it onto itself first.
            Err(nix::Error::EINVAL) => mount(
                Some(dir),
                dir,
                None::<&str>,
                MsFlags::MS_BIND | MsFlags::MS_REC,
                None::<&str>,
            )
            .and_then(|_| make_shared())
            .map_err(failed),
            Err(e) => Err(failed(e)),
        }
    }

    /// Creates `<dir>/<name>` holding a new network namespace; returns its path.
    pub fn create(dir: &Path, name: &str) -> Result<PathBuf, Error> {
        let path = dir.join(checked(name)?);
        share(dir)?;
        fs_err::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&path)
            .map_err(Error::File)?;
        // A fresh thread gets the new namespace; the process keeps its own.
        let target = path.clone();
        let made = std::thread::spawn(move || -> Result<(), Error> {
            unshare(CloneFlags::CLONE_NEWNET)
                .map_err(|e| Error::Sys("unshare a netns for".into(), target.clone(), e))?;
            mount(
                Some("/proc/thread-self/ns/net"),
                &target,
                None::<&str>,
                MsFlags::MS_BIND,
                None::<&str>,
            )
            .map_err(|e| Error::Sys("bind mount on".into(), target.clone(), e))
        })
        .join()
        .unwrap_or_else(|_| {
            Err(Error::Sys(
                "create (thread panicked)".into(),
                path.clone(),
                nix::Error::EIO,
            ))
        });
        if let Err(e) = made {
            let _ = fs_err::remove_file(&path);
            return Err(e);
        }
        Ok(path)
    }

    /// Unmounts and removes `<dir>/<name>`.
    pub fn delete(dir: &Path, name: &str) -> Result<(), Error> {
        let path = dir.join(checked(name)?);
        if !path.exists() {
            return Err(Error::NoSuchName(name.to_string(), dir.to_path_buf()));
        }
        match umount2(&path, MntFlags::MNT_DETACH) {
            Ok(()) | Err(nix::Error::EINVAL) => {}
            Err(e) => return Err(Error::Sys("unmount".into(), path, e)),
        }
        fs_err::remove_file(&path).map_err(Error::File)
    }

    /// The names under `dir`, sorted.
    pub fn list(dir: &Path) -> Result<Vec<String>, Error> {
        let entries = match fs_err::read_dir(dir) {
            Ok(e) => e,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(Error::File(e)),
        };
        let mut names: Vec<String> = entries
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        Ok(names)
    }
}

//! Network namespaces: work runs on a throwaway thread that joined the namespace,
//! so the main thread never changes namespace and nothing needs restoring.

use nix::sched::{CloneFlags, setns};
use std::fmt;
use std::fs::File;
use std::path::{Path, PathBuf};

#[derive(Debug)]
pub enum Error {
    /// The path does not exist (the namespace is gone).
    NotFound(PathBuf),
    Open(PathBuf, std::io::Error),
    Enter(PathBuf, nix::Error),
    /// The closure panicked (debug builds only; release aborts).
    Panicked(PathBuf),
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
            Error::Panicked(p) => write!(f, "work in netns {} panicked", p.display()),
        }
    }
}

impl std::error::Error for Error {}

impl From<Error> for crate::cni::Error {
    fn from(e: Error) -> Self {
        crate::cni::Error::internal(e.to_string())
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

    /// The namespace of the calling thread (the host side, on the main thread).
    pub fn current() -> Result<NetNs, Error> {
        NetNs::open("/proc/thread-self/ns/net")
    }

    pub fn fd(&self) -> std::os::fd::RawFd {
        use std::os::fd::AsRawFd;
        self.file.as_raw_fd()
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Runs `f` on a new thread inside this namespace and returns its value.
    pub fn run<T, F>(&self, f: F) -> Result<T, Error>
    where
        F: FnOnce() -> T + Send,
        T: Send,
    {
        std::thread::scope(|s| {
            s.spawn(|| {
                setns(&self.file, CloneFlags::CLONE_NEWNET)
                    .map_err(|e| Error::Enter(self.path.clone(), e))?;
                Ok(f())
            })
            .join()
            .unwrap_or_else(|_| Err(Error::Panicked(self.path.clone())))
        })
    }
}

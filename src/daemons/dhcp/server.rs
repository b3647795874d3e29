//! The daemon's process: its socket (systemd's, or its own with a stale one
//! removed), pidfile, signals, and the accept loop (one thread per call).

use super::flags::Flags;
use super::leases::{Leases, log, panic_text};
use super::state::StateDir;
use crate::dhcp::client::Settings;
use crate::dhcp::protocol::{
    self, DEFAULT_SOCKET, Failure, Kind, MAX_LINE, Reply, decode_call, encode_reply,
};
use anyhow::{Context, Result, bail};
use nix::sys::signal::{SigSet, Signal};
use std::ffi::OsString;
use std::io::{BufReader, Write};
use std::os::fd::{FromRawFd, OwnedFd};
use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::os::unix::net::{UnixListener, UnixStream};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

/// Calls answered at once; more wait in the listen queue or get `busy`.
const MAX_CALLS: usize = 256;
/// How long a connection may take to send its call.
const CALL_READ_TIMEOUT: Duration = Duration::from_secs(10);
/// Stack of a call's thread (an ADD runs the DHCP exchange on it).
const CALL_STACK: usize = 1024 * 1024;

/// The first descriptor a service manager passes (`SD_LISTEN_FDS_START`).
const LISTEN_FDS_START: i32 = 3;

/// A socket this process bound, removed at exit if it is still the same file.
struct OwnSocket {
    path: PathBuf,
    id: (u64, u64),
}

pub fn run(flags: Flags) -> Result<()> {
    // Before anything opens a file: fd 3 is systemd's socket, if any.
    let activated = activated_listener()?;
    close_inherited(activated.as_ref().map(std::os::fd::AsRawFd::as_raw_fd));
    let socket = match &flags.socketpath {
        Some(p) if !p.as_os_str().is_empty() => p.clone(),
        _ => PathBuf::from(DEFAULT_SOCKET),
    };
    let socket = prefixed(&flags.hostprefix, &socket);
    if let Some(pidfile) = &flags.pidfile
        && !pidfile.is_absolute()
    {
        bail!(
            "Error writing pidfile {:?}: path not absolute",
            pidfile.display()
        );
    }
    // SIGTERM and SIGINT go to the waiter below only: blocked in this thread
    // before any other exists, so every thread inherits the mask.
    let mut signals = SigSet::empty();
    signals.add(Signal::SIGTERM);
    signals.add(Signal::SIGINT);
    signals
        .thread_block()
        .context("failed to block SIGTERM and SIGINT")?;

    if activated.is_none() {
        // A daemon already serving this socket is the clearer refusal: ask
        // before taking the state directory's lock.
        refuse_live(&socket)?;
    }
    let default_state = protocol::default_state_dir(&socket);
    let state_dir = flags.statedir.clone().unwrap_or(default_state.clone());
    let state = StateDir::open(&state_dir)
        .with_context(|| format!("failed to open the state directory {}", state_dir.display()))?;
    let (listener, own) = match activated {
        Some(l) => (l, None),
        None => {
            let (l, own) = listen(&socket)?;
            (l, Some(own))
        }
    };
    if state_dir != default_state {
        point_to(&default_state, &state_dir);
    }
    if let Some(pidfile) = &flags.pidfile {
        fs_err::write(pidfile, std::process::id().to_string()).context("Error writing pidfile")?;
    }
    let settings = Settings {
        broadcast: flags.broadcast,
        timeout: flags.timeout,
        resend_max: flags.resendmax,
        resend_timeout: flags.resendtimeout,
    };
    let leases = Leases::new(settings, flags.hostprefix.clone(), state);
    let resumed = leases.resume()?;
    log(format!(
        "listening on {}{}, leases in {} ({resumed} resumed)",
        socket.display(),
        if own.is_none() {
            " (socket from the service manager)"
        } else {
            ""
        },
        state_dir.display()
    ));
    let pidfile = flags.pidfile.clone();
    std::thread::Builder::new()
        .name("signals".into())
        .spawn(move || wait_for_exit(signals, own, pidfile))
        .context("failed to start the signal thread")?;
    serve(listener, leases);
    Ok(())
}

/// Closes every descriptor above stdio the daemon inherited (but systemd's
/// socket): a long-lived process must not keep its parent's locks and pipes
/// (a lock held by whoever started it, a pipe its reader waits on forever).
fn close_inherited(keep: Option<std::os::fd::RawFd>) {
    let Ok(dir) = std::fs::read_dir("/proc/self/fd") else {
        return;
    };
    let inherited: Vec<std::os::fd::RawFd> = dir
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse().ok())
        .filter(|&fd| fd > 2 && Some(fd) != keep)
        .collect();
    for fd in inherited {
        // SAFETY: this runs first in the daemon, on its only thread, before it
        // opens anything: every descriptor above 2 (but `keep`) came from the
        // parent and is owned by nothing in this process. The listing's own
        // descriptor is already closed; closing its number again is EBADF.
        unsafe {
            nix::libc::close(fd);
        }
    }
}

/// `hostprefix` + `path`, as the reference joins them (a plain concatenation).
fn prefixed(hostprefix: &str, path: &Path) -> PathBuf {
    let mut joined = OsString::from(hostprefix);
    joined.push(path.as_os_str());
    PathBuf::from(joined)
}

/// The listener systemd passed (LISTEN_PID is this process, LISTEN_FDS=1),
/// checked to be a listening unix stream socket.
fn activated_listener() -> Result<Option<UnixListener>> {
    let (Ok(pid), Ok(count)) = (std::env::var("LISTEN_PID"), std::env::var("LISTEN_FDS")) else {
        return Ok(None);
    };
    if pid.trim() != std::process::id().to_string() {
        return Ok(None);
    }
    let count: u32 = count
        .trim()
        .parse()
        .with_context(|| format!("LISTEN_FDS={count:?} is not a number"))?;
    match count {
        0 => return Ok(None),
        1 => {}
        n => bail!("Too many ({n}) FDs passed through socket activation"),
    }
    // SAFETY: fcntl(F_GETFD) only reads the flags of a descriptor number;
    // it touches no memory, whatever the number is.
    if unsafe { nix::libc::fcntl(LISTEN_FDS_START, nix::libc::F_GETFD) } < 0 {
        bail!("LISTEN_FDS=1 but no FD found");
    }
    // SAFETY: descriptor 3 is open (checked above) and was handed to this
    // process by its service manager (LISTEN_PID names us); nothing else in
    // the process owns it: this runs once, before the daemon opens any file.
    let fd = unsafe { OwnedFd::from_raw_fd(LISTEN_FDS_START) };
    use nix::sys::socket::{AddressFamily, SockaddrLike, SockaddrStorage, getsockname, sockopt};
    let listening = nix::sys::socket::getsockopt(&fd, sockopt::AcceptConn).unwrap_or(false);
    let stream = nix::sys::socket::getsockopt(&fd, sockopt::SockType)
        .is_ok_and(|t| t == nix::sys::socket::SockType::Stream);
    let unix = getsockname::<SockaddrStorage>(std::os::fd::AsRawFd::as_raw_fd(&fd))
        .is_ok_and(|a| a.family() == Some(AddressFamily::Unix));
    if !(listening && stream && unix) {
        bail!("the FD passed through socket activation is not a listening unix stream socket");
    }
    nix::fcntl::fcntl(
        &fd,
        nix::fcntl::FcntlArg::F_SETFD(nix::fcntl::FdFlag::FD_CLOEXEC),
    )
    .context("failed to set close-on-exec on the activated socket")?;
    Ok(Some(UnixListener::from(fd)))
}

/// Whether a socket file is at `path` that nothing answers on (a daemon that
/// died left it); an error when something does answer (another daemon serves
/// this path) or the path is not a socket.
fn refuse_live(path: &Path) -> Result<bool> {
    match std::fs::symlink_metadata(path) {
        Ok(meta) if !meta.file_type().is_socket() => bail!(
            "{} exists and is not a socket: remove it or choose another -socketpath",
            path.display()
        ),
        Ok(_) => match UnixStream::connect(path) {
            Ok(_) => bail!(
                "another dhcp daemon is listening on {}; stop it first or choose another -socketpath",
                path.display()
            ),
            Err(e) if e.raw_os_error() == Some(nix::libc::ECONNREFUSED) => Ok(true),
            Err(e) => Err(anyhow::Error::new(e)
                .context(format!("failed to probe the socket {}", path.display()))),
        },
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(false),
        Err(e) => Err(anyhow::Error::new(e).context(format!("failed to stat {}", path.display()))),
    }
}

/// Binds the socket (its directory created 0700). A stale socket file is
/// removed first; a live one means another daemon serves this path, and this
/// one refuses to start.
fn listen(path: &Path) -> Result<(UnixListener, OwnSocket)> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        crate::files::create_dir_mode(dir, 0o700)?;
    }
    if refuse_live(path)? {
        fs_err::remove_file(path)?;
        log(format!(
            "removed the stale socket {} (nothing answered on it)",
            path.display()
        ));
    }
    let listener = UnixListener::bind(path)
        .with_context(|| format!("failed to listen on {}", path.display()))?;
    let meta = fs_err::metadata(path)?;
    Ok((
        listener,
        OwnSocket {
            path: path.to_path_buf(),
            id: (meta.dev(), meta.ino()),
        },
    ))
}

/// With `-statedir` elsewhere, `<socket>.leases` points there, so the plugin
/// can tell whether a stopped daemon holds a lease (best effort).
fn point_to(link: &Path, target: &Path) {
    let target = std::path::absolute(target).unwrap_or_else(|_| target.to_path_buf());
    match std::fs::symlink_metadata(link) {
        Ok(meta) if meta.file_type().is_symlink() => {
            if std::fs::read_link(link).is_ok_and(|t| t == target) {
                return;
            }
            let _ = std::fs::remove_file(link);
        }
        Ok(_) => {
            log(format!(
                "{} exists; the plugin cannot find the leases in {} while the daemon is down",
                link.display(),
                target.display()
            ));
            return;
        }
        Err(_) => {}
    }
    if let Err(e) = std::os::unix::fs::symlink(&target, link) {
        log(format!(
            "failed to link {} to {}: {e}",
            link.display(),
            target.display()
        ));
    }
}

/// Waits for SIGTERM or SIGINT, removes the socket (when this process made it)
/// and the pidfile, and exits 0. Leases stay on disk for the next start.
fn wait_for_exit(signals: SigSet, own: Option<OwnSocket>, pidfile: Option<PathBuf>) {
    let signal = loop {
        match signals.wait() {
            Ok(s) => break s,
            Err(nix::errno::Errno::EINTR) => continue,
            Err(e) => {
                log(format!("failed to wait for signals: {e}"));
                return;
            }
        }
    };
    // Clean up first: logging can fail (stderr closed), exiting must not.
    if let Some(own) = own
        && std::fs::metadata(&own.path).is_ok_and(|m| (m.dev(), m.ino()) == own.id)
    {
        let _ = std::fs::remove_file(&own.path);
    }
    if let Some(p) = pidfile {
        let _ = std::fs::remove_file(p);
    }
    log(format!("{signal}: exiting; leases are kept on disk"));
    std::process::exit(0);
}

/// Accepts calls forever, each on its own thread.
fn serve(listener: UnixListener, leases: Arc<Leases>) {
    let active = Arc::new(AtomicUsize::new(0));
    for conn in listener.incoming() {
        let stream = match conn {
            Ok(s) => s,
            Err(e) => {
                log(format!("accept: {e}"));
                // Out of descriptors or memory: give the calls in progress time.
                std::thread::sleep(Duration::from_millis(100));
                continue;
            }
        };
        if active.load(Ordering::Acquire) >= MAX_CALLS {
            refuse(stream, "too many calls in progress");
            continue;
        }
        let counted = Counted::new(&active);
        let leases = Arc::clone(&leases);
        let spawned = std::thread::Builder::new()
            .name("call".into())
            .stack_size(CALL_STACK)
            .spawn(move || {
                let _counted = counted;
                answer(stream, &leases);
            });
        if let Err(e) = spawned {
            log(format!("failed to start a thread for a call: {e}"));
        }
    }
}

/// One call in progress, counted until dropped (even by a panic).
struct Counted(Arc<AtomicUsize>);

impl Counted {
    fn new(active: &Arc<AtomicUsize>) -> Counted {
        active.fetch_add(1, Ordering::AcqRel);
        Counted(Arc::clone(active))
    }
}

impl Drop for Counted {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

fn refuse(mut stream: UnixStream, why: &str) {
    let _ = stream.set_write_timeout(Some(Duration::from_secs(1)));
    let reply = Reply::Failed(Failure::new(Kind::Busy, format!("dhcp daemon: {why}")));
    let _ = stream.write_all(encode_reply(&reply).as_bytes());
}

/// Reads one call, answers it, closes. A panic answering is reported to the
/// caller and does not end the daemon.
fn answer(stream: UnixStream, leases: &Arc<Leases>) {
    let _ = stream.set_read_timeout(Some(CALL_READ_TIMEOUT));
    let _ = stream.set_write_timeout(Some(CALL_READ_TIMEOUT));
    let mut reader = BufReader::new(&stream);
    let line = match protocol::read_line(&mut reader, MAX_LINE) {
        Ok(line) => line,
        // A probe (a daemon checking the socket is alive) sends nothing.
        Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => return,
        Err(e) => {
            log(format!("reading a call: {e}"));
            return;
        }
    };
    let reply = match decode_call(&line) {
        Ok(call) => {
            let op = call.op();
            match catch_unwind(AssertUnwindSafe(|| leases.handle(call))) {
                Ok(reply) => reply,
                Err(payload) => {
                    let text = panic_text(payload.as_ref());
                    log(format!("{op}: panicked: {text}"));
                    Reply::Failed(Failure::new(
                        Kind::Failed,
                        format!("dhcp daemon: internal error in {op}: {text}"),
                    ))
                }
            }
        }
        Err(f) => Reply::Failed(f),
    };
    let mut writer = &stream;
    if let Err(e) = writer.write_all(encode_reply(&reply).as_bytes()) {
        log(format!("sending a reply: {e}"));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stale_socket_is_replaced_and_a_live_one_refused() {
        let dir = std::env::temp_dir().join(format!("cni-multi-dhcpsock-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let path = dir.join("sub").join("d.sock");
        let (live, _) = listen(&path).expect("first");
        let mode = std::os::unix::fs::PermissionsExt::mode(
            &std::fs::metadata(dir.join("sub"))
                .expect("dir")
                .permissions(),
        );
        assert_eq!(mode & 0o777, 0o700);
        let e = listen(&path).err().expect("live socket");
        assert!(e.to_string().contains("another dhcp daemon"), "{e}");
        drop(live);
        // A daemon that died leaves its socket file with nothing listening.
        // Other tests of this binary fork, and a child may briefly hold the
        // dropped listener, so the stale file is made by a socket that is
        // bound but never listens: connecting to it is refused either way.
        std::fs::remove_file(&path).expect("rm live");
        let stale = nix::sys::socket::socket(
            nix::sys::socket::AddressFamily::Unix,
            nix::sys::socket::SockType::Stream,
            nix::sys::socket::SockFlag::SOCK_CLOEXEC,
            None,
        )
        .expect("socket");
        nix::sys::socket::bind(
            std::os::fd::AsRawFd::as_raw_fd(&stale),
            &nix::sys::socket::UnixAddr::new(&path).expect("addr"),
        )
        .expect("bind");
        drop(stale);
        assert!(path.exists());
        let (_again, own) = listen(&path).expect("stale socket replaced");
        assert_eq!(own.path, path);
        std::fs::remove_file(&path).expect("rm");
        std::fs::write(&path, "x").expect("plain file");
        let e = listen(&path).err().expect("not a socket");
        assert!(e.to_string().contains("is not a socket"), "{e}");
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn the_host_prefix_is_put_before_the_path() {
        assert_eq!(
            prefixed("/host", Path::new("/run/cni/dhcp.sock")),
            Path::new("/host/run/cni/dhcp.sock")
        );
        assert_eq!(
            prefixed("", Path::new("/run/cni/dhcp.sock")),
            Path::new("/run/cni/dhcp.sock")
        );
    }
}

//! The daemon's process: its socket (systemd's, or its own with a stale one
//! removed), pidfile, signals, and the accept loop (one thread per call).
//!
//! The socket is the daemon's only door, and what comes through it runs as
//! root (enters namespaces, brings links up, sends DHCP): its file is 0600
//! from the moment it exists, a peer that is not root is refused before
//! anything is read, and a call has a deadline for being sent and one for its
//! reply to be taken, so slow clients cannot hold the calls' slots.

use super::flags::Flags;
use super::leases::{Leases, log, panic_text};
use super::state::StateDir;
use crate::dhcp::client::Settings;
use crate::dhcp::protocol::{
    self, DEFAULT_SOCKET, Failure, Kind, MAX_LINE, Reply, decode_call, encode_reply,
};
use crate::quote::quoted;
use anyhow::{Context, Result, bail};
use nix::sys::signal::{SigSet, Signal};
use std::ffi::OsString;
use std::io::{self, BufReader, Read, Write};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::os::unix::net::{UnixListener, UnixStream};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// Calls answered at once; more wait in the listen queue or get `busy`.
const MAX_CALLS: usize = 256;
/// How long a connection may take to send its whole call, from its accept
/// (not per read: a client dribbling a byte at a time is cut off as well).
/// A call is a few KB that the plugin writes at once.
const CALL_READ_DEADLINE: Duration = Duration::from_secs(10);
/// How long the caller may take to read the whole reply, once it is ready.
/// A call thus lasts at most these two plus its own work, which the DHCP
/// exchange's `-timeout` bounds.
const REPLY_WRITE_DEADLINE: Duration = Duration::from_secs(10);
/// The mode of the daemon's own socket file: root's only.
const SOCKET_MODE: u32 = 0o600;
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
            "Error writing pidfile {}: path not absolute",
            quoted(&pidfile.display())
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
    if state_dir != default_state {
        point_to(&default_state, &state_dir)?;
    }
    let (listener, own) = match activated {
        Some(l) => (l, None),
        None => {
            let (l, own) = listen(&socket)?;
            (l, Some(own))
        }
    };
    if let Some(pidfile) = &flags.pidfile {
        write_pidfile(pidfile).context("Error writing pidfile")?;
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
        .with_context(|| format!("LISTEN_FDS={count} is not a number", count = quoted(&count)))?;
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
    let listener =
        bind_private(path).with_context(|| format!("failed to listen on {}", path.display()))?;
    let meta = fs_err::metadata(path)?;
    Ok((
        listener,
        OwnSocket {
            path: path.to_path_buf(),
            id: (meta.dev(), meta.ino()),
        },
    ))
}

/// The pidfile, 0644 whatever the umask (it is root's: a pid written into it
/// by someone else would be the process its reader signals).
fn write_pidfile(path: &Path) -> io::Result<()> {
    use fs_err::os::unix::fs::OpenOptionsExt;
    use std::os::unix::fs::PermissionsExt;
    let mut file = fs_err::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o644)
        // Never through a symlink planted where the pidfile goes.
        .custom_flags(nix::fcntl::OFlag::O_NOFOLLOW.bits())
        .open(path)?;
    // On the descriptor: a file left by an earlier run keeps its mode otherwise.
    file.file()
        .set_permissions(std::fs::Permissions::from_mode(0o644))?;
    file.write_all(std::process::id().to_string().as_bytes())
}

/// A listening socket bound at `path`, its file created with mode 0600 whatever
/// the umask. On Linux, bind(2) creates the file with the mode of the socket's
/// own inode (less the umask), and fchmod(2) on the descriptor before bind
/// sets that mode: the file never exists with a wider mode. The alternatives
/// are worse: chmod by path after bind leaves a window (and follows whatever
/// is at the path by then), and umask(2) is process-wide, so it would change
/// what other threads create meanwhile.
fn bind_private(path: &Path) -> io::Result<UnixListener> {
    use nix::sys::socket::{
        AddressFamily, Backlog, SockFlag, SockType, UnixAddr, bind, listen, socket,
    };
    let fd = socket(
        AddressFamily::Unix,
        SockType::Stream,
        SockFlag::SOCK_CLOEXEC,
        None,
    )?;
    nix::sys::stat::fchmod(&fd, nix::sys::stat::Mode::from_bits_truncate(SOCKET_MODE))?;
    bind(fd.as_raw_fd(), &UnixAddr::new(path)?)?;
    listen(&fd, Backlog::MAXCONN)?;
    Ok(UnixListener::from(fd))
}

/// With `-statedir` elsewhere, `<socket>.leases` points there: through it the
/// plugin tells, while the daemon is down, whether a lease may still be held.
/// A daemon that cannot leave it there would hide its leases from DEL, so it
/// does not start (before its socket exists).
fn point_to(link: &Path, target: &Path) -> Result<()> {
    let target = std::path::absolute(target)
        .with_context(|| format!("failed to make {} absolute", target.display()))?;
    match std::fs::symlink_metadata(link) {
        Ok(meta) if meta.file_type().is_symlink() => {
            if std::fs::read_link(link).is_ok_and(|t| t == target) {
                return Ok(());
            }
            fs_err::remove_file(link)?;
        }
        // The state directory itself, by another name.
        Ok(meta)
            if fs_err::metadata(&target)
                .is_ok_and(|t| (t.dev(), t.ino()) == (meta.dev(), meta.ino())) =>
        {
            return Ok(());
        }
        Ok(_) => bail!(
            "{} exists and is not a link to the state directory {}: the plugin could not \
             find this daemon's leases while it is down. Move any lease files in it to {} \
             and remove it, or run without -statedir",
            link.display(),
            target.display(),
            target.display()
        ),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => {
            return Err(anyhow::Error::new(e).context(format!("failed to stat {}", link.display())));
        }
    }
    if let Some(dir) = link.parent().filter(|d| !d.as_os_str().is_empty()) {
        crate::files::create_dir_mode(dir, 0o700)?;
    }
    std::os::unix::fs::symlink(&target, link).with_context(|| {
        format!(
            "failed to link {} to the state directory {} (the plugin finds the leases \
             through it while the daemon is down)",
            link.display(),
            target.display()
        )
    })
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
        let accepted = Instant::now();
        if let Err(refusal) = root_peer(&stream) {
            log(refusal.to_string());
            refuse(stream, refusal);
            continue;
        }
        if active.load(Ordering::Acquire) >= MAX_CALLS {
            refuse(
                stream,
                Failure::new(Kind::Busy, "dhcp daemon: too many calls in progress"),
            );
            continue;
        }
        let counted = Counted::new(&active);
        let leases = Arc::clone(&leases);
        let spawned = std::thread::Builder::new()
            .name("call".into())
            .stack_size(CALL_STACK)
            .spawn(move || {
                let _counted = counted;
                answer(stream, accepted, &leases);
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

/// Whether the peer is root (SO_PEERCRED: its credentials when it connected);
/// the reason to refuse it otherwise. Only root may make the daemon act, as
/// only root may run the plugin that calls it.
fn root_peer(stream: &UnixStream) -> Result<(), Failure> {
    use nix::sys::socket::{getsockopt, sockopt::PeerCredentials};
    let why = match getsockopt(stream, PeerCredentials) {
        Ok(cred) if cred.uid() == 0 => return Ok(()),
        Ok(cred) => format!(
            "pid {} runs as uid {}; only root may call this daemon",
            cred.pid(),
            cred.uid()
        ),
        Err(errno) => format!("cannot tell who the peer is (SO_PEERCRED: {errno})"),
    };
    Err(Failure::new(Kind::Failed, format!("refused: {why}")))
}

/// Answers a connection with a failure and closes it, without waiting: the
/// accept loop calls it, and a fresh socket's send buffer takes a short reply.
fn refuse(stream: UnixStream, failure: Failure) {
    if stream.set_nonblocking(true).is_ok() {
        let _ = (&stream).write_all(encode_reply(&Reply::Failed(failure)).as_bytes());
    }
}

/// One side of a connection bound to a deadline for all of its reads or
/// writes together (the socket's own timeouts are per call of read(2)).
struct Deadline<'a> {
    stream: &'a UnixStream,
    at: Instant,
}

impl Deadline<'_> {
    /// The time left, as a socket timeout; an error once it has passed.
    fn left(&self) -> io::Result<Option<Duration>> {
        let left = self.at.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(io::Error::new(io::ErrorKind::TimedOut, "deadline passed"));
        }
        Ok(Some(left))
    }
}

impl Read for Deadline<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.stream.set_read_timeout(self.left()?)?;
        (&mut &*self.stream).read(buf)
    }
}

impl Write for Deadline<'_> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.stream.set_write_timeout(self.left()?)?;
        (&mut &*self.stream).write(buf)
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

fn timed_out(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
    )
}

/// Reads one call, answers it, closes. A panic answering is reported to the
/// caller and does not end the daemon.
fn answer(stream: UnixStream, accepted: Instant, leases: &Arc<Leases>) {
    let mut reader = BufReader::new(Deadline {
        stream: &stream,
        at: accepted + CALL_READ_DEADLINE,
    });
    let read = protocol::read_line(&mut reader, MAX_LINE);
    drop(reader);
    let line = match read {
        Ok(line) => line,
        // A probe (a daemon checking the socket is alive) sends nothing.
        Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => return,
        Err(e) if timed_out(&e) => {
            let why = format!(
                "the call was not sent within {} s",
                CALL_READ_DEADLINE.as_secs()
            );
            log(format!("cut off a connection: {why}"));
            refuse(
                stream,
                Failure::new(Kind::BadCall, format!("dhcp daemon: {why}")),
            );
            return;
        }
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
    let mut writer = Deadline {
        stream: &stream,
        at: Instant::now() + REPLY_WRITE_DEADLINE,
    };
    if let Err(e) = writer.write_all(encode_reply(&reply).as_bytes()) {
        log(format!("sending a reply: {e}"));
    }
}

#[cfg(test)]
#[path = "server_tests.rs"]
mod tests;

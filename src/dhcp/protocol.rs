//! The plugin <-> daemon protocol: one JSON object per line over the daemon's
//! unix socket, one call and one reply per connection.
//!
//! A call: `{"version":1,"op":"allocate","attachment":{...},"request":{...}}`;
//! `op` is `allocate`, `release`, `check` (attachment + request), `gc`
//! (`network` + `valid`) or `status`. A reply: `{"version":1}` (done),
//! `{"version":1,"lease":{...}}`, or
//! `{"version":1,"error":{"kind":"noAnswer","message":"..."}}`. The plugin maps
//! the kind to a CNI code; this layer knows none. A peer that speaks another
//! version gets an `unsupportedVersion` error naming both.
//!
//! This is not the Go daemon's gob RPC: plugin and daemon of one binary talk
//! to each other, so a live switch restarts the daemon with the new binary.

use crate::dhcp::client::Request;
use crate::dhcp::lease::Lease;
use serde::{Deserialize, Serialize};
use std::fmt;
use std::io::{self, BufRead, Read, Write};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// The protocol version this binary speaks.
pub const VERSION: u32 = 1;

/// Longest line either side reads (a call or a reply is a few KB).
pub const MAX_LINE: u64 = 1 << 20;

/// The daemon's socket when neither side is told otherwise.
pub const DEFAULT_SOCKET: &str = "/run/cni/dhcp.sock";

/// Which lease: the reference's client-id parts, kept apart.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Attachment {
    #[serde(rename = "containerID")]
    pub container_id: String,
    pub network: String,
    pub ifname: String,
}

impl fmt::Display for Attachment {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}/{}", self.container_id, self.network, self.ifname)
    }
}

/// An attachment GC must keep (`cni.dev/valid-attachments` of one network);
/// an empty `ifname` keeps every interface of the container.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Keep {
    #[serde(rename = "containerID")]
    pub container_id: String,
    #[serde(default)]
    pub ifname: String,
}

/// What the plugin asks the daemon.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "lowercase")]
pub enum Call {
    /// A lease for the attachment: the one held, else a new one (ADD).
    Allocate {
        attachment: Attachment,
        request: Request,
    },
    /// Stop keeping the lease and send DHCPRELEASE (DEL); unknown => done.
    Release {
        attachment: Attachment,
        request: Request,
    },
    /// The lease is held and its address is on the interface (CHECK).
    Check {
        attachment: Attachment,
        request: Request,
    },
    /// Release every lease of `network` whose attachment is not in `valid`.
    Gc { network: String, valid: Vec<Keep> },
    /// Whether the daemon answers (STATUS).
    Status,
}

impl Call {
    pub fn op(&self) -> &'static str {
        match self {
            Call::Allocate { .. } => "allocate",
            Call::Release { .. } => "release",
            Call::Check { .. } => "check",
            Call::Gc { .. } => "gc",
            Call::Status => "status",
        }
    }
}

/// Why a call failed, as the daemon classifies it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// An option name that is neither known nor a code (the plugin's code 7).
    UnknownOption,
    /// A provide value that cannot be sent (code 7).
    InvalidOption,
    /// The server did not answer within the daemon's timeout.
    NoAnswer,
    /// The server said NAK.
    Nak,
    /// The ACK lacks what the result needs.
    Incomplete,
    /// CHECK: the daemon holds no lease for the attachment.
    NotHeld,
    /// CHECK: the lease is held but its address is not on the interface.
    AddressMissing,
    /// A call this daemon cannot read (malformed, bad attachment).
    BadCall,
    /// The peer speaks another protocol version.
    UnsupportedVersion,
    /// The daemon has too many calls in progress; try again later.
    Busy,
    /// Anything else (socket, netns, netlink, state files).
    Failed,
}

impl Kind {
    const NAMES: [(Kind, &'static str); 11] = [
        (Kind::UnknownOption, "unknownOption"),
        (Kind::InvalidOption, "invalidOption"),
        (Kind::NoAnswer, "noAnswer"),
        (Kind::Nak, "nak"),
        (Kind::Incomplete, "incomplete"),
        (Kind::NotHeld, "notHeld"),
        (Kind::AddressMissing, "addressMissing"),
        (Kind::BadCall, "badCall"),
        (Kind::UnsupportedVersion, "unsupportedVersion"),
        (Kind::Busy, "busy"),
        (Kind::Failed, "failed"),
    ];

    pub fn as_str(self) -> &'static str {
        Kind::NAMES
            .iter()
            .find(|(k, _)| *k == self)
            .map_or("failed", |(_, n)| n)
    }

    /// A kind from the wire; one this binary does not know is `Failed`, so a
    /// newer daemon's new kinds still reach the user with their message.
    pub fn parse(s: &str) -> Kind {
        Kind::NAMES
            .iter()
            .find(|(_, n)| *n == s)
            .map_or(Kind::Failed, |(k, _)| *k)
    }

    /// How a layer error of the DHCP client is reported.
    pub fn of(e: &crate::dhcp::error::Error) -> Kind {
        use crate::dhcp::error::Error as E;
        match e {
            E::UnknownOption(_) => Kind::UnknownOption,
            E::InvalidOption(_) => Kind::InvalidOption,
            E::NoAnswer { .. } => Kind::NoAnswer,
            E::Nak { .. } => Kind::Nak,
            E::Incomplete(_) => Kind::Incomplete,
            E::Io { .. } | E::Netlink(_) | E::Netns(_) => Kind::Failed,
        }
    }
}

impl Serialize for Kind {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for Kind {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Kind, D::Error> {
        Ok(Kind::parse(&String::deserialize(d)?))
    }
}

/// A failed call: what kind of failure and the daemon's message.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Failure {
    pub kind: Kind,
    pub message: String,
}

impl Failure {
    pub fn new(kind: Kind, message: impl Into<String>) -> Failure {
        Failure {
            kind,
            message: message.into(),
        }
    }
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Failure {}

/// What the daemon answers: done, a lease, or a failure.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reply {
    Done,
    Lease(Box<Lease>),
    Failed(Failure),
}

/// The reply as it is on the wire.
#[derive(Serialize, Deserialize)]
struct WireReply {
    version: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    lease: Option<Lease>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    error: Option<Failure>,
}

/// A call as one line: the call's object with `version` first.
pub fn encode_call(call: &Call) -> String {
    // A derived Serialize of an internally tagged enum gives `{"op":...}`,
    // never empty; anything else would be a bug, sent as a call without a body.
    let body = serde_json::to_string(call).unwrap_or_default();
    match body.strip_prefix('{') {
        Some(rest) if rest != "}" => format!("{{\"version\":{VERSION},{rest}\n"),
        _ => format!("{{\"version\":{VERSION}}}\n"),
    }
}

/// Reads a call: the version first (another version is refused with a message
/// naming both), then the rest.
pub fn decode_call(line: &[u8]) -> Result<Call, Failure> {
    let doc = crate::cni::json::parse(line)
        .map_err(|e| Failure::new(Kind::BadCall, format!("malformed call: {e}")))?;
    check_version(doc.field("version"), "call")?;
    doc.decode()
        .map_err(|e| Failure::new(Kind::BadCall, format!("malformed call: {e}")))
}

/// A reply as one line.
pub fn encode_reply(reply: &Reply) -> String {
    let wire = match reply {
        Reply::Done => WireReply {
            version: VERSION,
            lease: None,
            error: None,
        },
        Reply::Lease(lease) => WireReply {
            version: VERSION,
            lease: Some(lease.as_ref().clone()),
            error: None,
        },
        Reply::Failed(f) => WireReply {
            version: VERSION,
            lease: None,
            error: Some(f.clone()),
        },
    };
    let mut line = serde_json::to_string(&wire).unwrap_or_else(|e| {
        // Only a non-string map key can fail here; say so rather than send nothing.
        let failure = Failure::new(Kind::Failed, format!("cannot encode the reply: {e}"));
        format!(
            "{{\"version\":{VERSION},\"error\":{}}}",
            serde_json::to_string(&failure).unwrap_or_default()
        )
    });
    line.push('\n');
    line
}

/// Reads a reply; a reply of another version or a malformed one is a failure.
pub fn decode_reply(line: &[u8]) -> Result<Reply, Failure> {
    let doc = crate::cni::json::parse(line)
        .map_err(|e| Failure::new(Kind::BadCall, format!("malformed reply: {e}")))?;
    check_version(doc.field("version"), "reply")?;
    let wire: WireReply = doc
        .decode()
        .map_err(|e| Failure::new(Kind::BadCall, format!("malformed reply: {e}")))?;
    Ok(match (wire.error, wire.lease) {
        (Some(f), _) => Reply::Failed(f),
        (None, Some(lease)) => Reply::Lease(Box::new(lease)),
        (None, None) => Reply::Done,
    })
}

fn check_version(field: Option<&crate::cni::json::Json>, what: &str) -> Result<(), Failure> {
    let version = field.map(|v| v.to_value());
    match version.as_ref().and_then(serde_json::Value::as_u64) {
        Some(v) if v == u64::from(VERSION) => Ok(()),
        Some(v) => Err(Failure::new(
            Kind::UnsupportedVersion,
            format!(
                "dhcp {what} of protocol version {v}; this binary speaks version {VERSION} \
                 (run the plugin and the daemon from the same cni-multi)"
            ),
        )),
        None => Err(Failure::new(
            Kind::BadCall,
            format!("malformed {what}: no protocol version"),
        )),
    }
}

/// One line (without its newline) of at most `limit` bytes; an empty input is
/// an UnexpectedEof, a longer line InvalidData.
pub fn read_line(reader: &mut impl BufRead, limit: u64) -> io::Result<Vec<u8>> {
    let mut line = Vec::new();
    reader.take(limit + 1).read_until(b'\n', &mut line)?;
    if line.last() == Some(&b'\n') {
        line.pop();
    } else if line.len() as u64 > limit {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!("line longer than {limit} bytes"),
        ));
    } else if line.is_empty() {
        return Err(io::Error::new(
            io::ErrorKind::UnexpectedEof,
            "connection closed before a line was sent",
        ));
    }
    Ok(line)
}

/// The name of an attachment's state file in the daemon's state directory:
/// a digest (the parts are free text to the file system), so a call can never
/// name a path outside the directory. The plugin uses it too, to tell whether
/// a stopped daemon still holds a lease.
pub fn state_file_name(attachment: &Attachment) -> String {
    let key = format!(
        "{}\0{}\0{}",
        attachment.container_id, attachment.network, attachment.ifname
    );
    let hex = crate::digest::sha512_hex(key.as_bytes());
    format!("{}.json", &hex[..32])
}

/// The lock file a daemon holds in its state directory while it runs: the
/// plugin takes a directory without one for something else than lease state.
pub const STATE_LOCK: &str = "lock";

/// Where a daemon keeps its leases when not told otherwise: beside its socket,
/// `<socket>.leases/`, so each daemon (one per socket) has its own. Told
/// otherwise (`-statedir`), it links this path there or does not start.
pub fn default_state_dir(socket: &Path) -> PathBuf {
    let mut name = socket.file_name().unwrap_or_default().to_os_string();
    name.push(".leases");
    socket.with_file_name(name)
}

/// How an exchange with the daemon failed, before or after it was reached.
#[derive(Debug)]
pub enum ExchangeError {
    /// Nothing listens on the socket (absent, refused): the daemon is not running.
    Unreachable { socket: PathBuf, source: io::Error },
    /// The daemon's listen queue stayed full until the connect deadline.
    Busy { socket: PathBuf, waited: Duration },
    /// Sending the call or reading the reply failed (or timed out).
    Io {
        socket: PathBuf,
        op: &'static str,
        source: io::Error,
    },
    /// The reply could not be read as one.
    BadReply { socket: PathBuf, failure: Failure },
}

impl fmt::Display for ExchangeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ExchangeError::Unreachable { socket, source } => write!(
                f,
                "the dhcp daemon is not reachable on {} ({source}): start it with \
                 'dhcp daemon' (or its systemd socket unit) and try again",
                socket.display()
            ),
            ExchangeError::Busy { socket, waited } => write!(
                f,
                "the dhcp daemon on {} did not accept the connection within {} s (busy)",
                socket.display(),
                waited.as_secs()
            ),
            ExchangeError::Io { socket, op, source } => write!(
                f,
                "failed to {op} the dhcp daemon on {}: {source}",
                socket.display()
            ),
            ExchangeError::BadReply { socket, failure } => {
                write!(f, "dhcp daemon on {}: {failure}", socket.display())
            }
        }
    }
}

impl std::error::Error for ExchangeError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            ExchangeError::Unreachable { source, .. } | ExchangeError::Io { source, .. } => {
                Some(source)
            }
            ExchangeError::BadReply { failure, .. } => Some(failure),
            ExchangeError::Busy { .. } => None,
        }
    }
}

/// Time limits of one exchange.
#[derive(Debug, Clone, Copy)]
pub struct Deadlines {
    /// For the connection to be accepted into the listen queue.
    pub connect: Duration,
    /// For the whole reply after the call is sent.
    pub reply: Duration,
}

/// Sends one call to the daemon on `socket` and reads its reply.
pub fn exchange(socket: &Path, call: &Call, limits: Deadlines) -> Result<Reply, ExchangeError> {
    let stream = connect(socket, limits.connect)?;
    let io_error = |op, source| ExchangeError::Io {
        socket: socket.to_path_buf(),
        op,
        source,
    };
    stream
        .set_write_timeout(Some(limits.connect))
        .and_then(|()| stream.set_read_timeout(Some(limits.reply)))
        .map_err(|e| io_error("configure the connection to", e))?;
    let sent = (&stream).write_all(encode_call(call).as_bytes());
    // A daemon that refuses a connection (busy, not root) answers at once and
    // closes, maybe before the call is written: its answer is still there to
    // read. Any other failure to send is the error.
    if let Err(e) = sent {
        if !matches!(
            e.kind(),
            io::ErrorKind::BrokenPipe | io::ErrorKind::ConnectionReset
        ) {
            return Err(io_error("send the call to", e));
        }
        let mut reader = io::BufReader::new(stream);
        return match read_line(&mut reader, MAX_LINE) {
            Ok(line) => decode_reply(&line).map_err(|failure| ExchangeError::BadReply {
                socket: socket.to_path_buf(),
                failure,
            }),
            Err(_) => Err(io_error("send the call to", e)),
        };
    }
    let mut reader = io::BufReader::new(stream);
    let line = read_line(&mut reader, MAX_LINE).map_err(|e| match e.kind() {
        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut => io_error(
            "read the reply of",
            io::Error::new(
                io::ErrorKind::TimedOut,
                format!("no reply within {} s", limits.reply.as_secs()),
            ),
        ),
        _ => io_error("read the reply of", e),
    })?;
    if line.starts_with(b"HTTP/") {
        // The Go daemon's net/rpc over HTTP refusing a line it cannot parse.
        return Err(ExchangeError::BadReply {
            socket: socket.to_path_buf(),
            failure: Failure::new(
                Kind::UnsupportedVersion,
                "it answered in HTTP: this is the reference's (Go) dhcp daemon, which \
                 cni-multi's plugin cannot talk to; restart it as 'cni-multi dhcp daemon'",
            ),
        });
    }
    decode_reply(&line).map_err(|failure| ExchangeError::BadReply {
        socket: socket.to_path_buf(),
        failure,
    })
}

/// Connects without blocking on a full listen queue: a non-blocking connect
/// that is retried until `deadline`, then a blocking stream.
pub fn connect(socket: &Path, deadline: Duration) -> Result<UnixStream, ExchangeError> {
    use nix::errno::Errno;
    use nix::sys::socket::{AddressFamily, SockFlag, SockType, UnixAddr, socket as make_socket};
    let unreachable = |source: io::Error| ExchangeError::Unreachable {
        socket: socket.to_path_buf(),
        source,
    };
    let addr = UnixAddr::new(socket).map_err(|e| unreachable(io::Error::from(e)))?;
    let start = Instant::now();
    let mut pause = Duration::from_millis(1);
    loop {
        let fd = make_socket(
            AddressFamily::Unix,
            SockType::Stream,
            SockFlag::SOCK_CLOEXEC | SockFlag::SOCK_NONBLOCK,
            None,
        )
        .map_err(|e| ExchangeError::Io {
            socket: socket.to_path_buf(),
            op: "open a socket for",
            source: io::Error::from(e),
        })?;
        match nix::sys::socket::connect(std::os::fd::AsRawFd::as_raw_fd(&fd), &addr) {
            Ok(()) => {
                let stream = UnixStream::from(fd);
                stream
                    .set_nonblocking(false)
                    .map_err(|e| ExchangeError::Io {
                        socket: socket.to_path_buf(),
                        op: "configure the connection to",
                        source: e,
                    })?;
                return Ok(stream);
            }
            // A unix socket's listen queue is full: the daemon is alive but busy.
            Err(Errno::EAGAIN) if start.elapsed() < deadline => {
                std::thread::sleep(pause);
                pause = (pause * 2).min(Duration::from_millis(100));
            }
            Err(Errno::EAGAIN) => {
                return Err(ExchangeError::Busy {
                    socket: socket.to_path_buf(),
                    waited: deadline,
                });
            }
            Err(e) => return Err(unreachable(io::Error::from(e))),
        }
    }
}

#[cfg(test)]
#[path = "protocol_tests.rs"]
mod tests;

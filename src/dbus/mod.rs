//! A small blocking D-Bus client for the system bus: connect to the unix
//! socket `DBUS_SYSTEM_BUS_ADDRESS` names (a path or an abstract name, the
//! first of a list that answers; else the well-known path),
//! authenticate with SASL EXTERNAL, say Hello, then call methods whose
//! arguments are strings and read their replies. Every read and write of a
//! call has a deadline, so a wedged bus or service ends in an error, never a
//! hang. Messages that are not the awaited reply (signals such as
//! NameAcquired) are skipped. Signals asked for with a match rule are
//! awaited, without a deadline, one at a time.

mod address;
pub mod wire;

pub use address::{Endpoint, Unusable, Why, endpoints};

use crate::quote::quoted;
use std::io::{self, Read, Write};
use std::os::unix::net::UnixStream;
use std::time::{Duration, Instant};
use std::{fmt, path::Path};
use wire::{Call, Message, Value};

/// Where the system bus listens when the environment does not say.
pub const DEFAULT_SYSTEM_BUS: &str = "/run/dbus/system_bus_socket";

/// How long a call may wait for its reply: libdbus's default.
pub const TIMEOUT: Duration = Duration::from_secs(25);

const BUS_NAME: &str = "org.freedesktop.DBus";
const BUS_PATH: &str = "/org/freedesktop/DBus";

/// What went wrong talking to the bus, with the cause kept.
#[derive(Debug)]
pub enum Error {
    /// The bus address names no socket this client can use (why), and what
    /// connecting to the usable ones gave, if any.
    Address {
        address: String,
        unusable: Vec<Unusable>,
        refused: Option<Box<Error>>,
    },
    /// The bus socket could not be connected to.
    Connect {
        endpoint: Endpoint,
        source: io::Error,
    },
    /// Reading or writing the connection failed.
    Io { op: &'static str, source: io::Error },
    /// The bus closed the connection.
    Closed,
    /// No reply within the deadline.
    Timeout { what: String, after: Duration },
    /// The bus refused our credentials (its reply line).
    Auth { reply: String },
    /// A message that breaks the protocol (or one we cannot send).
    Malformed(String),
    /// The peer answered with an error: its name and message.
    Remote { name: String, message: String },
    /// A reply of another shape than the method returns (what it held).
    UnexpectedReply { what: String, got: String },
}

pub type Result<T> = std::result::Result<T, Error>;

impl Error {
    /// An error reply with this name.
    pub fn is_remote(&self, name: &str) -> bool {
        matches!(self, Error::Remote { name: n, .. } if n == name)
    }

    /// The bus is not there at all (no socket, nobody listening): nothing
    /// can be registered with any service on it. An address this client
    /// cannot use says nothing of the kind.
    pub fn is_unreachable(&self) -> bool {
        match self {
            Error::Connect { source, .. } => matches!(
                source.kind(),
                io::ErrorKind::NotFound | io::ErrorKind::ConnectionRefused
            ),
            _ => false,
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Address {
                address,
                unusable,
                refused,
            } => {
                write!(
                    f,
                    "unusable bus address {address}: ",
                    address = quoted(&address)
                )?;
                if unusable.is_empty() {
                    f.write_str("no address in it")?;
                }
                for (i, u) in unusable.iter().enumerate() {
                    write!(f, "{}{u}", if i == 0 { "" } else { "; " })?;
                }
                match refused {
                    Some(e) => write!(f, "; {e}"),
                    None => Ok(()),
                }
            }
            Error::Connect { endpoint, source } => {
                write!(f, "cannot connect to the bus at {endpoint}: {source}")
            }
            Error::Io { op, source } => write!(f, "failed to {op} the bus: {source}"),
            Error::Closed => f.write_str("the bus closed the connection"),
            Error::Timeout { what, after } => {
                write!(f, "no reply to {what} within {}s", after.as_secs())
            }
            Error::Auth { reply } => write!(
                f,
                "the bus refused authentication: {reply}",
                reply = quoted(&reply)
            ),
            Error::Malformed(detail) => write!(f, "malformed D-Bus message: {detail}"),
            // As godbus prints an error reply: its message, else its name.
            Error::Remote { name, message } => {
                if message.is_empty() {
                    f.write_str(name)
                } else {
                    f.write_str(message)
                }
            }
            Error::UnexpectedReply { what, got } => {
                write!(f, "unexpected reply to {what}: [{got}]")
            }
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Error::Connect { source, .. } | Error::Io { source, .. } => Some(source),
            Error::Address {
                refused: Some(e), ..
            } => Some(e.as_ref()),
            _ => None,
        }
    }
}

/// What waiting for a signal gave.
#[derive(Debug)]
pub enum Next {
    Signal(Message),
    /// None came before the deadline.
    Quiet,
    /// The bus closed the connection: it is gone, and so are our matches.
    Closed,
}

/// A connection to a message bus, authenticated and named.
pub struct Conn {
    stream: UnixStream,
    /// Bytes read but not yet consumed.
    buf: Vec<u8>,
    serial: u32,
    timeout: Duration,
}

impl Conn {
    /// The system bus: `DBUS_SYSTEM_BUS_ADDRESS` when set, else the default socket.
    pub fn system() -> Result<Conn> {
        match std::env::var("DBUS_SYSTEM_BUS_ADDRESS") {
            Ok(address) if !address.is_empty() => Conn::open(&address, TIMEOUT),
            _ => Conn::open_path(Path::new(DEFAULT_SYSTEM_BUS), TIMEOUT),
        }
    }

    /// The first socket of `address` that accepts a connection, as libdbus
    /// tries a list; authentication and Hello run on that one only. When none
    /// does, the bus is unreachable only if every entry could be tried: an
    /// entry this client cannot use might have been the bus.
    pub fn open(address: &str, timeout: Duration) -> Result<Conn> {
        let mut unusable = Vec::new();
        let mut refused = None;
        for entry in endpoints(address) {
            match entry {
                Ok(endpoint) => match endpoint.connect() {
                    Ok(stream) => return Conn::start(stream, timeout),
                    Err(source) => refused = Some(Error::Connect { endpoint, source }),
                },
                Err(why) => unusable.push(why),
            }
        }
        match refused {
            Some(e) if unusable.is_empty() => Err(e),
            refused => Err(Error::Address {
                address: address.to_string(),
                unusable,
                refused: refused.map(Box::new),
            }),
        }
    }

    pub fn open_path(path: &Path, timeout: Duration) -> Result<Conn> {
        let endpoint = Endpoint::Path(path.to_path_buf());
        match endpoint.connect() {
            Ok(stream) => Conn::start(stream, timeout),
            Err(source) => Err(Error::Connect { endpoint, source }),
        }
    }

    /// Authenticates on a connected socket and says Hello.
    fn start(stream: UnixStream, timeout: Duration) -> Result<Conn> {
        let mut conn = Conn {
            stream,
            buf: Vec::new(),
            serial: 0,
            timeout,
        };
        let deadline = Instant::now() + timeout;
        conn.authenticate(deadline)?;
        conn.call(&Call {
            destination: BUS_NAME,
            path: BUS_PATH,
            interface: BUS_NAME,
            member: "Hello",
            args: &[],
        })?;
        Ok(conn)
    }

    /// SASL EXTERNAL: the bus checks the uid we claim against the socket's
    /// peer credentials. The uid goes as hex of its decimal digits.
    fn authenticate(&mut self, deadline: Instant) -> Result<()> {
        let uid = nix::unistd::geteuid().as_raw().to_string();
        let hex: String = uid.bytes().map(|b| format!("{b:02x}")).collect();
        self.send(format!("\0AUTH EXTERNAL {hex}\r\n").as_bytes(), deadline)?;
        let reply = self.line(deadline, "authentication")?;
        if !reply.starts_with("OK ") {
            return Err(Error::Auth { reply });
        }
        self.send(b"BEGIN\r\n", deadline)
    }

    /// Calls a method and returns the reply's values; an error reply is
    /// `Error::Remote`.
    pub fn call(&mut self, call: &Call) -> Result<Vec<Value>> {
        self.serial = self.serial.wrapping_add(1).max(1);
        let serial = self.serial;
        let bytes = wire::method_call(serial, call)?;
        let deadline = Instant::now() + self.timeout;
        self.send(&bytes, deadline)?;
        let what = format!("{}.{}", call.interface, call.member);
        loop {
            let msg = self.message(Some(deadline), &what)?;
            if msg.reply_serial != Some(serial) {
                continue; // a signal, or a call to us: not ours to answer
            }
            match msg.kind {
                wire::METHOD_RETURN => return msg.args(),
                wire::ERROR => {
                    let message = match msg.args()?.into_iter().next() {
                        Some(Value::Str(s)) => s,
                        _ => String::new(),
                    };
                    return Err(Error::Remote {
                        name: msg.error_name.unwrap_or_default(),
                        message,
                    });
                }
                _ => continue,
            }
        }
    }

    /// A call whose reply is one boolean.
    pub fn call_bool(&mut self, call: &Call) -> Result<bool> {
        match self.call(call)?.as_slice() {
            [Value::Bool(b)] => Ok(*b),
            other => Err(unexpected(call, other)),
        }
    }

    /// A call whose reply is one string.
    pub fn call_string(&mut self, call: &Call) -> Result<String> {
        match self.call(call)?.as_slice() {
            [Value::Str(s)] => Ok(s.clone()),
            other => Err(unexpected(call, other)),
        }
    }

    /// A call whose reply is one array of strings.
    pub fn call_strings(&mut self, call: &Call) -> Result<Vec<String>> {
        let reply = self.call(call)?;
        if let [Value::Array(items)] = reply.as_slice() {
            let strings: Option<Vec<String>> = items
                .iter()
                .map(|v| match v {
                    Value::Str(s) => Some(s.clone()),
                    _ => None,
                })
                .collect();
            if let Some(strings) = strings {
                return Ok(strings);
            }
        }
        Err(unexpected(call, &reply))
    }

    /// Whether some connection owns `name` on this bus.
    pub fn name_has_owner(&mut self, name: &str) -> Result<bool> {
        self.call_bool(&Call {
            destination: BUS_NAME,
            path: BUS_PATH,
            interface: BUS_NAME,
            member: "NameHasOwner",
            args: &[name],
        })
    }

    /// The unique name of the connection that owns `name` now.
    pub fn name_owner(&mut self, name: &str) -> Result<String> {
        self.call_string(&Call {
            destination: BUS_NAME,
            path: BUS_PATH,
            interface: BUS_NAME,
            member: "GetNameOwner",
            args: &[name],
        })
    }

    /// Asks the bus to route us the signals `rule` matches (a match rule
    /// such as `type='signal',interface='…',member='…'`).
    pub fn add_match(&mut self, rule: &str) -> Result<()> {
        self.call(&Call {
            destination: BUS_NAME,
            path: BUS_PATH,
            interface: BUS_NAME,
            member: "AddMatch",
            args: &[rule],
        })
        .map(drop)
    }

    /// Waits, without a deadline, for the next signal `member` of
    /// `interface` (a match rule must have asked for it); every other
    /// message is skipped. None when the bus closed the connection: the bus
    /// is gone, and so are our matches.
    pub fn next_signal(&mut self, interface: &str, member: &str) -> Result<Option<Message>> {
        match self.next_signal_by(interface, member, None)? {
            Next::Signal(msg) => Ok(Some(msg)),
            Next::Quiet | Next::Closed => Ok(None),
        }
    }

    /// As `next_signal`, waiting until `deadline` at most.
    pub fn next_signal_by(
        &mut self,
        interface: &str,
        member: &str,
        deadline: Option<Instant>,
    ) -> Result<Next> {
        let what = format!("the signal {interface}.{member}");
        loop {
            match self.message(deadline, &what) {
                Ok(msg) if msg.is_signal(interface, member) => return Ok(Next::Signal(msg)),
                Ok(_) => continue,
                Err(Error::Timeout { .. }) => return Ok(Next::Quiet),
                Err(Error::Closed) => return Ok(Next::Closed),
                Err(Error::Io { source, .. })
                    if source.kind() == io::ErrorKind::ConnectionReset =>
                {
                    return Ok(Next::Closed);
                }
                Err(e) => return Err(e),
            }
        }
    }

    fn remaining(deadline: Instant, what: &str, timeout: Duration) -> Result<Duration> {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(Error::Timeout {
                what: what.to_string(),
                after: timeout,
            });
        }
        Ok(left)
    }

    fn send(&mut self, bytes: &[u8], deadline: Instant) -> Result<()> {
        let left = Self::remaining(deadline, "a write", self.timeout)?;
        self.stream
            .set_write_timeout(Some(left))
            .map_err(|source| Error::Io {
                op: "set a timeout on",
                source,
            })?;
        self.stream
            .write_all(bytes)
            .map_err(|source| match source.kind() {
                io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut => Error::Timeout {
                    what: "a write".into(),
                    after: self.timeout,
                },
                _ => Error::Io {
                    op: "write to",
                    source,
                },
            })
    }

    /// Reads more bytes into `buf`, waiting until `deadline` at most (no
    /// deadline: as long as it takes).
    fn fill(&mut self, deadline: Option<Instant>, what: &str) -> Result<()> {
        let left = match deadline {
            Some(d) => Some(Self::remaining(d, what, self.timeout)?),
            None => None,
        };
        self.stream
            .set_read_timeout(left)
            .map_err(|source| Error::Io {
                op: "set a timeout on",
                source,
            })?;
        let mut chunk = [0u8; 4096];
        loop {
            match self.stream.read(&mut chunk) {
                Ok(0) => return Err(Error::Closed),
                Ok(n) => {
                    self.buf.extend_from_slice(&chunk[..n]);
                    return Ok(());
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e)
                    if matches!(
                        e.kind(),
                        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
                    ) =>
                {
                    return Err(Error::Timeout {
                        what: what.to_string(),
                        after: self.timeout,
                    });
                }
                Err(source) => {
                    return Err(Error::Io {
                        op: "read from",
                        source,
                    });
                }
            }
        }
    }

    /// One `\r\n`-terminated line of the authentication exchange.
    fn line(&mut self, deadline: Instant, what: &str) -> Result<String> {
        loop {
            if let Some(at) = self.buf.windows(2).position(|w| w == b"\r\n") {
                let line: Vec<u8> = self.buf.drain(..at + 2).take(at).collect();
                return Ok(String::from_utf8_lossy(&line).into_owned());
            }
            if self.buf.len() > 4096 {
                return Err(Error::Malformed("authentication line too long".into()));
            }
            self.fill(Some(deadline), what)?;
        }
    }

    /// The next whole message (no deadline: however long it takes).
    fn message(&mut self, deadline: Option<Instant>, what: &str) -> Result<Message> {
        while self.buf.len() < wire::FIXED_HEADER {
            self.fill(deadline, what)?;
        }
        let mut fixed = [0u8; wire::FIXED_HEADER];
        fixed.copy_from_slice(&self.buf[..wire::FIXED_HEADER]);
        let len = wire::message_len(&fixed)?;
        while self.buf.len() < len {
            self.fill(deadline, what)?;
        }
        let bytes: Vec<u8> = self.buf.drain(..len).collect();
        wire::parse(&bytes)
    }
}

fn unexpected(call: &Call, got: &[Value]) -> Error {
    Error::UnexpectedReply {
        what: format!("{}.{}", call.interface, call.member),
        got: got
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join(", "),
    }
}

#[cfg(test)]
mod tests;

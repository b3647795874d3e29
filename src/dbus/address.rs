//! Bus addresses (`DBUS_SYSTEM_BUS_ADDRESS`): the entries of an address list
//! parsed as libdbus and godbus parse them, each a socket to connect to or
//! why it cannot be used.

use crate::quote::quoted;
use std::ffi::OsString;
use std::fmt;
use std::io;
use std::os::linux::net::SocketAddrExt;
use std::os::unix::ffi::OsStringExt;
use std::os::unix::net::{SocketAddr, UnixStream};
use std::path::PathBuf;

/// A socket of a bus address this client connects to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Endpoint {
    /// `unix:path=`: a socket file.
    Path(PathBuf),
    /// `unix:abstract=`: a name in the network namespace's abstract socket
    /// space (without the leading NUL).
    Abstract(Vec<u8>),
}

impl fmt::Display for Endpoint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Endpoint::Path(p) => write!(f, "unix:path={}", p.display()),
            Endpoint::Abstract(name) => {
                write!(f, "unix:abstract={}", String::from_utf8_lossy(name))
            }
        }
    }
}

impl Endpoint {
    pub(super) fn connect(&self) -> io::Result<UnixStream> {
        match self {
            Endpoint::Path(p) => UnixStream::connect(p),
            Endpoint::Abstract(name) => {
                UnixStream::connect_addr(&SocketAddr::from_abstract_name(name)?)
            }
        }
    }
}

/// The entries of a D-Bus address list (`unix:path=/x,guid=…;unix:abstract=y`),
/// in order, each a socket to try or why it cannot be used. As libdbus and
/// godbus: keys are `key=value` with %-escaped values, unknown keys (guid) are
/// ignored, a unix address has exactly one of `path` and `abstract`; the
/// listen-only forms (`tmpdir`, `dir`, `runtime`) and other transports (tcp,
/// which the system bus's EXTERNAL authentication does not run over) are not
/// usable here.
pub fn endpoints(address: &str) -> Vec<std::result::Result<Endpoint, Unusable>> {
    address
        .split(';')
        .filter(|one| !one.is_empty())
        .map(endpoint)
        .collect()
}

/// An entry of a bus address this client cannot connect to, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unusable {
    pub entry: String,
    pub why: Why,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Why {
    NoTransport,
    NotKeyValue(String),
    KeyTwice(String),
    BadEscape(String),
    Transport(String),
    PathAndAbstract,
    NoSocket,
}

impl fmt::Display for Unusable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: ", quoted(&self.entry))?;
        match &self.why {
            Why::NoTransport => f.write_str("names no transport"),
            Why::NotKeyValue(kv) => write!(f, "{kv} is not key=value", kv = quoted(&kv)),
            Why::KeyTwice(key) => write!(f, "{key} given twice"),
            Why::BadEscape(key) => write!(f, "bad %-escape in {key}"),
            Why::Transport(t) => write!(f, "transport {t} is not supported", t = quoted(&t)),
            Why::PathAndAbstract => f.write_str("both path and abstract"),
            Why::NoSocket => f.write_str("no path or abstract to connect to"),
        }
    }
}

fn endpoint(one: &str) -> std::result::Result<Endpoint, Unusable> {
    let unusable = |why| Unusable {
        entry: one.to_string(),
        why,
    };
    let Some((transport, params)) = one.split_once(':') else {
        return Err(unusable(Why::NoTransport));
    };
    let mut keys: Vec<(&str, Vec<u8>)> = Vec::new();
    for kv in params.split(',').filter(|kv| !kv.is_empty()) {
        let Some((key, value)) = kv.split_once('=') else {
            return Err(unusable(Why::NotKeyValue(kv.to_string())));
        };
        if keys.iter().any(|(k, _)| *k == key) {
            return Err(unusable(Why::KeyTwice(key.to_string())));
        }
        let value = unescape(value).ok_or_else(|| unusable(Why::BadEscape(key.to_string())))?;
        keys.push((key, value));
    }
    if transport != "unix" {
        return Err(unusable(Why::Transport(transport.to_string())));
    }
    let get = |name: &str| {
        keys.iter()
            .find(|(k, _)| *k == name)
            .map(|(_, v)| v.clone())
    };
    match (get("path"), get("abstract")) {
        (Some(p), None) if !p.is_empty() => {
            Ok(Endpoint::Path(PathBuf::from(OsString::from_vec(p))))
        }
        (None, Some(name)) if !name.is_empty() => Ok(Endpoint::Abstract(name)),
        (Some(_), Some(_)) => Err(unusable(Why::PathAndAbstract)),
        _ => Err(unusable(Why::NoSocket)),
    }
}

/// `%XX` decoding of an address value; None for a broken escape.
fn unescape(v: &str) -> Option<Vec<u8>> {
    let b = v.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' {
            let hex = std::str::from_utf8(b.get(i + 1..i + 3)?).ok()?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    Some(out)
}

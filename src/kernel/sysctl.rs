//! sysctls under /proc/sys/net, read and written from the calling thread, so
//! from inside a container namespace inside `NetNs::run`. (The forwarding
//! switches are read over netlink instead, `Socket::forwarding`.)

use crate::quote::quoted;
use std::path::PathBuf;

/// A sysctl that could not be named, read or written.
#[derive(Debug)]
pub enum Error {
    /// Not a `net.*` key, or one whose components would climb out of it.
    InvalidKey(String),
    Set {
        key: String,
        value: String,
        source: std::io::Error,
    },
    Get {
        key: String,
        source: std::io::Error,
    },
}

impl std::fmt::Display for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Error::InvalidKey(key) => write!(f, "invalid net sysctl key {key}", key = quoted(&key)),
            Error::Set { key, value, source } => write!(f, "failed to set {key}={value}: {source}"),
            Error::Get { key, source } => write!(f, "failed to read {key}: {source}"),
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Error::InvalidKey(_) => None,
            Error::Set { source, .. } | Error::Get { source, .. } => Some(source),
        }
    }
}

/// `net.ipv4.conf.eth0.arp_notify` → `/proc/sys/net/ipv4/conf/eth0/arp_notify`.
/// A key with `/` separators keeps dots inside components (`net/ipv4/conf/br0.100/…`),
/// as sysctl(8) does. Only `net.*` keys whose components cannot climb out.
pub fn path(key: &str) -> Result<PathBuf, Error> {
    let separator = if key.contains('/') { '/' } else { '.' };
    let parts: Vec<&str> = key.split(separator).collect();
    let escapes = parts
        .iter()
        .any(|p| p.is_empty() || *p == ".." || p.contains('\0'));
    if parts.first() != Some(&"net") || parts.len() < 2 || escapes {
        return Err(Error::InvalidKey(key.to_string()));
    }
    Ok(PathBuf::from("/proc/sys").join(parts.join("/")))
}

/// Writes a sysctl. (The path is the key's: the message names the key.)
pub fn set(key: &str, value: &str) -> Result<(), Error> {
    let p = path(key)?;
    std::fs::write(&p, value).map_err(|source| Error::Set {
        key: key.to_string(),
        value: value.to_string(),
        source,
    })
}

pub fn get(key: &str) -> Result<String, Error> {
    let p = path(key)?;
    std::fs::read_to_string(&p)
        .map(|s| s.trim().to_string())
        .map_err(|source| Error::Get {
            key: key.to_string(),
            source,
        })
}

/// `net/<family>/conf/<ifname>/<name>`: an interface name may contain dots, so
/// the key uses `/` separators that keep it one component.
pub fn conf_key(family: &str, ifname: &str, name: &str) -> String {
    format!("net/{family}/conf/{ifname}/{name}")
}

#[cfg(test)]
#[path = "sysctl_tests.rs"]
mod tests;

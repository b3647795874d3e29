//! The CNI_* environment: the per-verb required table and the name checks the
//! reference's skel performs before any plugin code runs.

use crate::cni::error::{CniResult, Code, Error};
use std::path::PathBuf;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Command {
    Add,
    Del,
    Check,
    Gc,
    Status,
    Version,
}

impl Command {
    pub fn parse(s: &str) -> Option<Command> {
        Some(match s {
            "ADD" => Command::Add,
            "DEL" => Command::Del,
            "CHECK" => Command::Check,
            "GC" => Command::Gc,
            "STATUS" => Command::Status,
            "VERSION" => Command::Version,
            _ => return None,
        })
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Command::Add => "ADD",
            Command::Del => "DEL",
            Command::Check => "CHECK",
            Command::Gc => "GC",
            Command::Status => "STATUS",
            Command::Version => "VERSION",
        }
    }

    /// Verbs that act on one attachment (container ID + ifname).
    pub fn has_attachment(self) -> bool {
        matches!(self, Command::Add | Command::Del | Command::Check)
    }
}

/// Everything the runtime passes through the environment, validated.
#[derive(Debug, Clone, Default)]
pub struct CmdArgs {
    pub container_id: String,
    /// Empty when the runtime gave none (allowed on DEL).
    pub netns: String,
    pub ifname: String,
    pub args: String,
    pub path: Vec<PathBuf>,
    pub netns_override: bool,
}

/// The variables in the reference's fixed order, with the verbs that require them.
const VARS: [(&str, &[&str]); 6] = [
    (
        "CNI_COMMAND",
        &["ADD", "CHECK", "DEL", "GC", "STATUS", "VERSION"],
    ),
    ("CNI_CONTAINERID", &["ADD", "CHECK", "DEL"]),
    ("CNI_NETNS", &["ADD", "CHECK"]),
    ("CNI_IFNAME", &["ADD", "CHECK", "DEL"]),
    ("CNI_ARGS", &[]),
    ("CNI_PATH", &["ADD", "CHECK", "DEL", "GC", "STATUS"]),
];

/// Reads the command and its arguments. An empty value counts as missing.
pub fn read(getenv: &dyn Fn(&str) -> Option<String>) -> CniResult<(String, CmdArgs)> {
    let get = |k: &str| getenv(k).unwrap_or_default();
    let cmd = get("CNI_COMMAND");
    let missing: Vec<&str> = VARS
        .iter()
        .filter(|(name, required)| {
            get(name).is_empty() && (*name == "CNI_COMMAND" || required.contains(&cmd.as_str()))
        })
        .map(|(name, _)| *name)
        .collect();
    if !missing.is_empty() {
        return Err(Error::invalid_env(format!(
            "required env variables [{}] missing",
            missing.join(",")
        )));
    }
    let path = get("CNI_PATH");
    let args = CmdArgs {
        container_id: get("CNI_CONTAINERID"),
        netns: get("CNI_NETNS"),
        ifname: get("CNI_IFNAME"),
        args: get("CNI_ARGS"),
        path: split_path(&path),
        netns_override: matches!(
            get("CNI_NETNS_OVERRIDE").to_lowercase().as_str(),
            "1" | "true"
        ),
    };
    Ok((cmd, args))
}

pub fn split_path(path: &str) -> Vec<PathBuf> {
    path.split(':')
        .filter(|p| !p.is_empty())
        .map(PathBuf::from)
        .collect()
}

/// `^[a-zA-Z0-9][a-zA-Z0-9_.\-]*$`: the rule for container IDs and network names.
/// It also keeps both out of any path traversal (`..`, `/`, NUL).
pub fn is_valid_name(s: &str) -> bool {
    let mut chars = s.chars();
    match chars.next() {
        Some(c) if c.is_ascii_alphanumeric() => {}
        _ => return false,
    }
    chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-'))
}

/// A container ID as a state file's name holds it: the ID, or its token
/// when the name would be too long with it (`files::id_token`).
pub fn is_id_or_token(s: &str) -> bool {
    is_valid_name(s) || crate::files::is_id_token(s)
}

/// Longest container ID accepted: far above what runtimes use (64 hex
/// digits), and bounded so that IDs reaching netlink attributes never overflow
/// an attribute's u16 length.
pub const MAX_NAME_LEN: usize = 1024;

pub fn validate_container_id(id: &str) -> CniResult<()> {
    if id.is_empty() {
        return Err(Error::new(Code::UnknownContainer, "missing containerID"));
    }
    if id.len() > MAX_NAME_LEN {
        return Err(Error::invalid_env(format!(
            "containerID is longer than {MAX_NAME_LEN} bytes"
        )));
    }
    if !is_valid_name(id) {
        return Err(Error::invalid_env("invalid characters in containerID").with_details(id));
    }
    Ok(())
}

pub fn validate_network_name(name: &str) -> CniResult<()> {
    if name.is_empty() {
        return Err(Error::invalid_config("missing network name"));
    }
    // A path component (the host-local store, caches): NAME_MAX.
    if name.len() > 255 {
        return Err(Error::invalid_config(
            "network name is longer than 255 bytes",
        ));
    }
    if !is_valid_name(name) {
        return Err(
            Error::invalid_config("invalid characters found in network name").with_details(name),
        );
    }
    Ok(())
}

/// What is wrong with a link name by the kernel's rules (`dev_valid_name`:
/// 1-15 bytes, not `.`/`..`, no `/`, `:` or whitespace), plus no control
/// character at all: names end up in rule text, aliases and file names.
pub fn link_name_problem(name: &str) -> Option<&'static str> {
    if name.is_empty() {
        Some("is empty")
    } else if name.len() > 15 {
        Some("is longer than 15 bytes")
    } else if name == "." || name == ".." {
        Some("is . or ..")
    } else if name
        .chars()
        .any(|c| c == '/' || c == ':' || c.is_whitespace() || c.is_control())
    {
        Some("contains /, :, whitespace or a control character")
    } else {
        None
    }
}

/// Linux interface names: 1-15 bytes, not `.`/`..`, no `/`, `:` or whitespace.
pub fn validate_ifname(name: &str) -> CniResult<()> {
    const MAX: usize = 15;
    if name.is_empty() {
        return Err(Error::invalid_env("interface name is empty"));
    }
    if name.len() > MAX {
        return Err(
            Error::invalid_env("interface name is too long").with_details(format!(
                "interface name should be less than {} characters",
                MAX + 1
            )),
        );
    }
    if name == "." || name == ".." {
        return Err(Error::invalid_env("interface name is . or .."));
    }
    if name
        .chars()
        .any(|c| c == '/' || c == ':' || c == '\0' || c.is_whitespace())
    {
        return Err(Error::invalid_env(
            "interface name contains / or : or whitespace characters",
        ));
    }
    Ok(())
}

#[cfg(test)]
#[path = "env_tests.rs"]
mod tests;

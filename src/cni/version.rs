//! Spec versions: parsing, comparison, the supported set and the VERSION reply.

use crate::cni::error::{Code, Error};
use crate::quote::quoted;
use std::cmp::Ordering;

/// The newest spec version; VERSION always reports it as `cniVersion`.
pub const CURRENT: &str = "1.1.0";

/// Every spec version cni-multi speaks, oldest first.
pub const SUPPORTED: [&str; 7] = [
    "0.1.0", "0.2.0", "0.3.0", "0.3.1", "0.4.0", "1.0.0", "1.1.0",
];

/// The commit this binary was built from (`build.rs`), or `unknown`.
pub const COMMIT: &str = env!("CNI_MULTI_COMMIT");

/// `-V`: the version and the commit (clap prints the program name first).
pub const BUILD: &str = concat!(
    env!("CARGO_PKG_VERSION"),
    " (commit ",
    env!("CNI_MULTI_COMMIT"),
    ")"
);

/// `--version`: the build, then the spec versions and the reference releases
/// whose behaviour it matches (docs/differences.md compares against these).
pub const LONG: &str = concat!(
    env!("CARGO_PKG_VERSION"),
    " (commit ",
    env!("CNI_MULTI_COMMIT"),
    ")\n",
    "CNI spec versions 0.1.0 to 1.1.0\n",
    "matches containernetworking/plugins v1.9.1, containernetworking/cni v1.3.0 (libcni, cnitool),\n",
    "flannel-io/cni-plugin v1.9.1-flannel1, k8snetworkplumbingwg/multus-cni v4.3.0"
);

/// The result layouts: each spec version prints one of these.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Family {
    /// 0.1.0 and 0.2.0: `ip4`/`ip6`.
    V020,
    /// 0.3.0, 0.3.1 and 0.4.0: `interfaces`/`ips` with `version`.
    V040,
    /// 1.0.0 and 1.1.0: `ips` without `version`, keys sorted.
    V100,
}

impl Family {
    /// The family of a supported version string (`""` counts as 0.1.0).
    pub fn of(version: &str) -> Option<Family> {
        match version {
            "" | "0.1.0" | "0.2.0" => Some(Family::V020),
            "0.3.0" | "0.3.1" | "0.4.0" => Some(Family::V040),
            "1.0.0" | "1.1.0" => Some(Family::V100),
            _ => None,
        }
    }

    pub fn versions(self) -> &'static [&'static str] {
        match self {
            Family::V020 => &SUPPORTED[0..2],
            Family::V040 => &SUPPORTED[2..5],
            Family::V100 => &SUPPORTED[5..7],
        }
    }
}

/// A version string that is not `major[.minor[.micro]]` (the reference's text).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ParseError {
    TooManyParts(String),
    BadPart { name: &'static str, part: String },
}

impl std::fmt::Display for ParseError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ParseError::TooManyParts(v) => {
                write!(f, "invalid version {v}: too many parts", v = quoted(&v))
            }
            ParseError::BadPart { name, part } => {
                write!(
                    f,
                    "failed to convert {name} version part {part}: invalid syntax",
                    part = quoted(&part)
                )
            }
        }
    }
}

impl std::error::Error for ParseError {}

/// Parses `major[.minor[.micro]]`; `""` is 0.1.0, as in the reference.
pub fn parse(version: &str) -> Result<(u64, u64, u64), ParseError> {
    if version.is_empty() {
        return Ok((0, 1, 0));
    }
    let parts: Vec<&str> = version.split('.').collect();
    if parts.len() >= 4 {
        return Err(ParseError::TooManyParts(version.to_string()));
    }
    let names = ["major", "minor", "micro"];
    let mut nums = [0u64; 3];
    for (i, part) in parts.iter().enumerate() {
        nums[i] = part.parse().map_err(|_| ParseError::BadPart {
            name: names[i],
            part: part.to_string(),
        })?;
    }
    Ok((nums[0], nums[1], nums[2]))
}

pub fn compare(a: &str, b: &str) -> Result<Ordering, ParseError> {
    Ok(parse(a)?.cmp(&parse(b)?))
}

/// `a >= b`, with a parse failure reported as a decode error (code 6).
pub fn at_least(a: &str, b: &str) -> Result<bool, Error> {
    compare(a, b)
        .map(|o| o != Ordering::Less)
        .map_err(|e| Error::new(Code::Decode, e.to_string()).with_source(e))
}

/// The config's version as the reference reads it: absent means 0.1.0.
pub fn effective(config_version: &str) -> &str {
    if config_version.is_empty() {
        "0.1.0"
    } else {
        config_version
    }
}

/// The skel version gate: the config's version must be one we support, exactly.
pub fn check_supported(config_version: &str) -> Result<(), Error> {
    let v = effective(config_version);
    if SUPPORTED.contains(&v) {
        return Ok(());
    }
    Err(
        Error::new(Code::IncompatibleVersion, "incompatible CNI versions").with_details(format!(
            "config is {v}, plugin supports {}",
            go_quoted_list(&SUPPORTED),
            v = quoted(&v)
        )),
    )
}

/// Go's `%q` of a string slice: `["a" "b"]`.
pub fn go_quoted_list<S: AsRef<str>>(items: &[S]) -> String {
    let quoted: Vec<String> = items
        .iter()
        .map(|s| format!("{}", quoted(&s.as_ref())))
        .collect();
    format!("[{}]", quoted.join(" "))
}

/// The VERSION reply: one compact line and a newline.
pub fn version_reply() -> String {
    let reply = serde_json::json!({ "cniVersion": CURRENT, "supportedVersions": SUPPORTED });
    format!("{reply}\n")
}

#[cfg(test)]
#[path = "version_tests.rs"]
mod tests;

//! The netfilter layer every plugin shares: backend choice, the reference's
//! chain names, hashes and comments, and one lock so that the read-modify-write
//! of shared chains by concurrent plugin runs cannot interleave.

pub mod apply;
mod error;
pub mod firewall;
pub mod flannel;
#[cfg(test)]
mod golden_tests;
pub mod iptables;
pub mod macspoof;
pub mod masq;
pub mod nft;
pub mod portmap;
pub mod xtnft;

pub use crate::netlink::addr::Family;
pub use apply::{Apply, Kernel};
pub use error::{Error, Result};
pub use iptables::Flavour;

use crate::digest::sha512_hex;
use nix::fcntl::Flock;
use std::fs::File;
use std::path::Path;

/// Which netfilter implementation rules go to; with iptables, which
/// flavour's tools (a plugin's are the ones PATH names, [`Backend::IPTABLES`];
/// the doctor also reads and removes the other flavour's rules).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    Iptables(Flavour),
    Nftables,
}

impl std::fmt::Display for Backend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl Backend {
    /// iptables with the tools PATH names: what a config's `iptables` means.
    pub const IPTABLES: Backend = Backend::Iptables(Flavour::Default);

    /// Its config value.
    pub fn name(self) -> &'static str {
        match self {
            Backend::Iptables(_) => "iptables",
            Backend::Nftables => "nftables",
        }
    }

    /// A `backend`/`ipMasqBackend` config value.
    pub fn parse(s: &str) -> Result<Backend> {
        match s {
            "iptables" => Ok(Backend::IPTABLES),
            "nftables" => Ok(Backend::Nftables),
            other => Err(Error::InvalidConfig(format!(
                "unknown backend {other} (iptables or nftables)",
                other = crate::quote::quoted(&other)
            ))),
        }
    }

    /// Whether rules can be written (and so may exist) here: iptables'
    /// tools are installed and its `nat` table is not another nftables
    /// user's, or nf_tables answers.
    pub fn usable(self) -> bool {
        match self {
            Backend::Iptables(flavour) => {
                flavour.usable(Family::V4) && !flavour.nat_foreign(Family::V4)
            }
            Backend::Nftables => crate::netlink::nfnl::available(),
        }
    }

    /// The reference's rule: iptables unless its tools are missing and nf_tables
    /// answers (which needs no userland here: rules go over netlink).
    pub fn detect() -> Result<Backend> {
        Choice::Detect.backend(&Kernel)
    }

    /// The backends a DEL removes rules from: the configured one; without
    /// one, each usable here. Detection at ADD may have chosen the other (its
    /// tools installed or removed since, or the key dropped from the config),
    /// and re-detecting one would leave that one's rules while DEL succeeds.
    pub fn for_del(configured: Option<Backend>) -> Vec<Backend> {
        Choice::from(configured).for_del(&Kernel)
    }

    /// Where an ADD or CHECK that failed on `chosen` with `err` goes next:
    /// nftables, when iptables was only detected (no backend configured),
    /// turned out unusable although installed, and nf_tables answers.
    pub fn instead(configured: Option<Backend>, chosen: Backend, err: &Error) -> Option<Backend> {
        Choice::from(configured).instead(&Kernel, chosen, err)
    }

    /// The configured backend, else the detected one.
    pub fn choose(configured: Option<&str>) -> Result<Backend> {
        Choice::parse(configured)?.backend(&Kernel)
    }
}

/// What a config's backend key says: a backend, or (unset or empty) none, so
/// that ADD detects one and DEL cleans every one usable. Decoded once, with
/// the config; the host is asked (through an [`Apply`]) only when an
/// operation needs to know.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Choice {
    Detect,
    Configured(Backend),
}

impl From<Option<Backend>> for Choice {
    fn from(configured: Option<Backend>) -> Choice {
        configured.map_or(Choice::Detect, Choice::Configured)
    }
}

impl Choice {
    /// A backend key's value: unset or empty is [`Choice::Detect`].
    pub fn parse(value: Option<&str>) -> Result<Choice> {
        match value.filter(|s| !s.is_empty()) {
            Some(s) => Backend::parse(s).map(Choice::Configured),
            None => Ok(Choice::Detect),
        }
    }

    /// The backend an ADD writes to: the configured one, else the
    /// reference's rule (iptables unless its tools are missing and nf_tables
    /// answers).
    pub fn backend(self, nf: &dyn Apply) -> Result<Backend> {
        match self {
            Choice::Configured(b) => Ok(b),
            Choice::Detect => [Backend::IPTABLES, Backend::Nftables]
                .into_iter()
                .find(|&b| nf.usable(b))
                .ok_or(Error::NoBackend),
        }
    }

    /// The backends a DEL or GC removes rules from (see [`Backend::for_del`]).
    pub fn for_del(self, nf: &dyn Apply) -> Vec<Backend> {
        match self {
            Choice::Configured(b) => vec![b],
            Choice::Detect => [Backend::IPTABLES, Backend::Nftables]
                .into_iter()
                .filter(|&b| nf.usable(b))
                .collect(),
        }
    }

    /// Where an ADD or CHECK that failed on `chosen` goes next (see
    /// [`Backend::instead`]).
    pub fn instead(self, nf: &dyn Apply, chosen: Backend, err: &Error) -> Option<Backend> {
        (self == Choice::Detect
            && matches!(chosen, Backend::Iptables(_))
            && err.iptables_unusable()
            && nf.usable(Backend::Nftables))
        .then_some(Backend::Nftables)
    }
}

/// The addresses of `ips` in `family`, with the family: what per-family rule
/// batches iterate over (families without addresses are skipped).
pub fn by_family(ips: &[ipnet::IpNet]) -> Vec<(Family, Vec<&ipnet::IpNet>)> {
    [Family::V4, Family::V6]
        .into_iter()
        .map(|f| {
            (
                f,
                ips.iter()
                    .filter(|ip| Family::of(ip.addr()) == f)
                    .collect::<Vec<_>>(),
            )
        })
        .filter(|(_, mine)| !mine.is_empty())
        .collect()
}

/// Runs `f` for each item on its own thread and returns the first error (in
/// the items' order). The families' tables are independent and a commit that
/// deletes waits for an RCU grace period (10-20 ms here, mostly idle): the
/// IPv4 and IPv6 restores of one operation overlap instead of queueing.
pub fn each_parallel<T: Sync>(items: &[T], f: impl Fn(&T) -> Result<()> + Sync) -> Result<()> {
    if let [only] = items {
        return f(only);
    }
    std::thread::scope(|scope| {
        let f = &f;
        let running: Vec<_> = items.iter().map(|i| scope.spawn(move || f(i))).collect();
        let mut first = Ok(());
        for thread in running {
            // A panic stays a panic, as if the work had run here.
            let outcome = thread
                .join()
                .unwrap_or_else(|payload| std::panic::resume_unwind(payload));
            if first.is_ok() {
                first = outcome;
            }
        }
        first
    })
}

/// An attachment GC keeps, as the runtime lists it in `cni.dev/valid-attachments`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Kept {
    pub container_id: String,
    pub ifname: String,
}

impl Kept {
    /// The containers of `keep`, for rules that name no interface.
    pub fn containers(keep: &[Kept]) -> Vec<String> {
        keep.iter().map(|k| k.container_id.clone()).collect()
    }
}

/// `CNI-` + `prefix` + the SHA-512 hex of `network + container_id`, cut to the
/// reference's 28 characters (`CNI-` 24 hex, `CNI-DN-` 21 hex).
pub fn chain_name(prefix: &str, network: &str, container_id: &str) -> String {
    const MAX: usize = 28;
    let hash = sha512_hex(format!("{network}{container_id}").as_bytes());
    let keep = MAX - "CNI-".len() - prefix.len();
    format!("CNI-{prefix}{}", &hash[..keep])
}

/// Go's `%q` of a name (names are validated, so only quotes and backslashes matter).
pub fn go_quote(s: &str) -> String {
    let mut out = String::from("\"");
    for c in s.chars() {
        if c == '"' || c == '\\' {
            out.push('\\');
        }
        out.push(c);
    }
    out.push('"');
    out
}

/// `name: "<net>" id: "<cid>"`, the reference's rule comment.
pub fn attachment_comment(network: &str, container_id: &str) -> String {
    format!("name: {} id: {}", go_quote(network), go_quote(container_id))
}

/// The comment of nftables rules that name only their container (portmap's
/// and the firewall's): the ID, as the reference's, while it fits a rule's
/// userdata (256 bytes with its TLV header and NUL); past that the ID's token
/// (`files::id_token`), so that no two containers share a comment.
pub fn container_comment(container_id: &str) -> String {
    const MAX: usize = 256 - 2 - 1;
    if container_id.len() <= MAX {
        container_id.to_string()
    } else {
        crate::files::id_token(container_id)
    }
}

/// Serialises netfilter changes of cni-multi processes on this machine.
pub struct Lock(#[allow(dead_code)] Flock<File>);

pub const LOCK_PATH: &str = "/run/cni-multi.netfilter.lock";

pub fn lock() -> Result<Lock> {
    let path = Path::new(LOCK_PATH);
    crate::lockfile::lock_private(path, crate::lockfile::DEADLINE)
        .map(Lock)
        .map_err(|source| Error::Lock {
            path: path.to_path_buf(),
            source,
        })
}

#[cfg(test)]
mod tests;

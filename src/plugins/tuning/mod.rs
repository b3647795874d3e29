//! tuning (chained): net.* sysctls inside the container and link attributes of
//! CNI_IFNAME (mac, mtu, promisc, allmulti, txQLen), with the reference's backup
//! of the original attributes, restored on DEL. Its output is prevResult.

pub mod pattern;

use crate::attach;
use crate::cni::config::Attachment;
use crate::cni::error::Context;
use crate::cni::result::NetResult;
use crate::cni::{CniResult, Code, Error, Invocation, Plugin};
use crate::kernel::sysctl;
use crate::netlink::Socket;
use crate::netlink::link::{Change, Link, parse_mac};
use crate::netns::NetNs;
use crate::quote::quoted;
use pattern::Pattern;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

pub struct Tuning;

pub(crate) const DEFAULT_DATA_DIR: &str = "/run/cni/tuning";
const ALLOWLIST: &str = "/etc/cni/tuning/allowlist.conf";

#[derive(Debug, Default, Deserialize)]
#[serde(rename = "TuningConf", rename_all = "camelCase", default)]
pub(crate) struct Keys {
    sysctl: BTreeMap<String, String>,
    mac: String,
    promisc: bool,
    mtu: i64,
    allmulti: Option<bool>,
    tx_qlen: Option<i64>,
    data_dir: String,
}

/// `args.cni` overrides (sysctl merged, the rest replacing).
#[derive(Debug, Default, Deserialize)]
#[serde(rename = "IPAMArgs", rename_all = "camelCase", default)]
pub(crate) struct ArgsKeys {
    sysctl: Option<BTreeMap<String, String>>,
    mac: Option<String>,
    promisc: Option<bool>,
    mtu: Option<i64>,
    allmulti: Option<bool>,
    tx_qlen: Option<i64>,
}

/// The original attributes, in the reference's backup format, plus the
/// network's name (which the reference's decoder ignores): the file name holds
/// only the container ID and interface, and GC must tell its network's backups
/// from another network's sharing the directory. A backup whose name holds the
/// token of a long ID (`files::state_name`) also names its attachment.
#[derive(Debug, Default, Clone, PartialEq, Serialize, Deserialize)]
struct Backup {
    #[serde(default, skip_serializing_if = "String::is_empty")]
    mac: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    promisc: Option<bool>,
    #[serde(default, skip_serializing_if = "is_zero")]
    mtu: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    allmulti: Option<bool>,
    #[serde(rename = "txQLen", default, skip_serializing_if = "Option::is_none")]
    tx_qlen: Option<u32>,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    network: String,
    #[serde(
        rename = "containerID",
        default,
        skip_serializing_if = "String::is_empty"
    )]
    container_id: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    ifname: String,
}

fn is_zero(v: &u32) -> bool {
    *v == 0
}

/// Everything to apply, validated.
#[derive(Debug)]
struct Conf {
    /// (sysctl key as configured, path-style key under /proc/sys, value)
    sysctls: Vec<(String, String, String)>,
    mac: Option<[u8; 6]>,
    mac_text: String,
    promisc: bool,
    mtu: Option<u32>,
    allmulti: Option<bool>,
    tx_qlen: Option<u32>,
    data_dir: PathBuf,
}

impl Conf {
    fn changes_link(&self) -> bool {
        self.mac.is_some()
            || self.promisc
            || self.mtu.is_some()
            || self.allmulti.is_some()
            || self.tx_qlen.is_some()
    }
}

/// `net.ipv4.conf.IFNAME.x` → `net/ipv4/conf/<ifname>/x`, which must stay under net.
fn sysctl_key(key: &str, ifname: &str) -> CniResult<String> {
    let path = key.replace('.', "/").replacen("IFNAME", ifname, 1);
    let escapes = path
        .split('/')
        .any(|p| p.is_empty() || p == ".." || p == ".");
    if !path.starts_with("net/") || escapes || path.contains('\0') {
        return Err(Error::invalid_config(format!(
            "invalid net sysctl key: {key}",
            key = quoted(&key)
        )));
    }
    sysctl::path(&path).map_err(|e| Error::invalid_config(e.to_string()).with_source(e))?;
    Ok(path)
}

impl Conf {
    fn load(inv: &Invocation) -> CniResult<Conf> {
        let k: Keys = inv.conf.plugin_keys()?;
        let args: ArgsKeys = inv.conf.args_cni_all()?;
        let mut sysctls = k.sysctl;
        sysctls.extend(args.sysctl.unwrap_or_default());
        // MAC: config, then CNI_ARGS MAC, runtimeConfig.mac, args.cni.mac (last wins).
        let mut mac = k.mac;
        if let Some(m) = inv.cni_args.get("MAC") {
            mac = m.to_string();
        }
        if let Some(m) = inv.conf.runtime_config::<String>("mac")? {
            mac = m;
        }
        if let Some(m) = args.mac {
            mac = m;
        }
        let mac_bytes = if mac.is_empty() {
            None
        } else {
            Some(parse_mac(&mac).ok_or_else(|| {
                Error::invalid_config(format!("invalid MAC address {mac}", mac = quoted(&mac)))
            })?)
        };
        let mtu = args.mtu.unwrap_or(k.mtu);
        let mtu =
            u32::try_from(mtu).map_err(|_| Error::invalid_config(format!("invalid MTU {mtu}")))?;
        let tx_qlen = args
            .tx_qlen
            .or(k.tx_qlen)
            .map(|q| {
                u32::try_from(q).map_err(|_| Error::invalid_config(format!("invalid txQLen {q}")))
            })
            .transpose()?;
        let ifname = inv.env.ifname.as_str();
        let sysctls = sysctls
            .into_iter()
            .map(|(key, value)| {
                let path = sysctl_key(&key, ifname)?;
                Ok((key, path, value))
            })
            .collect::<CniResult<Vec<_>>>()?;
        Ok(Conf {
            sysctls,
            mac: mac_bytes,
            mac_text: mac,
            promisc: args.promisc.unwrap_or(k.promisc),
            mtu: (mtu > 0).then_some(mtu),
            allmulti: args.allmulti.or(k.allmulti),
            tx_qlen,
            data_dir: data_dir(&k.data_dir)?,
        })
    }
}

fn data_dir(value: &str) -> CniResult<PathBuf> {
    crate::cni::config::path_setting(Some(value), DEFAULT_DATA_DIR, "dataDir")
}

/// ADD only, as the reference: with an allowlist file, every sysctl key must
/// match one of its lines. A key with `IFNAME` may match as written or with
/// the interface name put in (the reference tries only the former).
fn check_allowlist(conf: &Conf, ifname: &str) -> CniResult<()> {
    let Some(lines) = read_allowlist()? else {
        return Ok(());
    };
    for (key, _, _) in &conf.sysctls {
        if !allowed(&lines, key, ifname)? {
            // The reference's words and code (a plain error, 999); Go's %+v
            // of the lines is `[a b]`.
            let listed: Vec<&str> = lines.iter().map(|(_, l)| l.as_str()).collect();
            return Err(Error::internal(format!(
                "Sysctl {key} is not allowed. Only the following sysctls are allowed: [{}]",
                listed.join(" ")
            )));
        }
    }
    Ok(())
}

/// The allowlist's pattern lines with their line numbers, when the file exists
/// (blank lines and `#` comments skipped).
fn read_allowlist() -> CniResult<Option<Vec<(usize, String)>>> {
    let text = match crate::files::read_string_limited(ALLOWLIST, crate::files::MAX_FILE) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e).with_context(|| format!("failed to read {ALLOWLIST}")),
    };
    Ok(Some(allowlist_lines(&text)))
}

fn allowlist_lines(text: &str) -> Vec<(usize, String)> {
    text.lines()
        .enumerate()
        .map(|(i, l)| (i + 1, l.trim()))
        .filter(|(_, l)| !l.is_empty() && !l.starts_with('#'))
        .map(|(n, l)| (n, l.to_string()))
        .collect()
}

/// Lines are tried in order and compiled when reached, as the reference's
/// `regexp.MatchString` loop does: a line that does not parse is an error
/// naming it, unless an earlier line already allowed the key.
fn allowed(lines: &[(usize, String)], key: &str, ifname: &str) -> CniResult<bool> {
    let with_ifname = key.replacen("IFNAME", ifname, 1);
    for (n, line) in lines {
        let p = Pattern::compile(line).map_err(|e| {
            Error::caused_by(Code::InvalidConfig, format!("{ALLOWLIST} line {n}"), e)
        })?;
        if p.is_match(key) || p.is_match(&with_ifname) {
            return Ok(true);
        }
    }
    Ok(false)
}

fn backup_name(inv: &Invocation) -> String {
    backup_file(&inv.env.container_id, &inv.env.ifname)
}

/// `<containerID>_<ifname>.json`, the reference's name (`files::state_name`).
pub(crate) fn backup_file(container_id: &str, ifname: &str) -> String {
    crate::files::state_name("", container_id, &format!("_{ifname}.json"))
}

/// Whether `name` is a backup of `container_id` on some interface: named
/// `<containerID>_` or by the ID's token, or saying so inside (`backup`).
fn of_container(name: &str, backup: Option<&Backup>, container_id: &str) -> bool {
    name.starts_with(&format!("{container_id}_"))
        || name.starts_with(&format!("{}_", crate::files::id_token(container_id)))
        || backup.is_some_and(|b| b.container_id == container_id)
}

/// The backups in `dir` that GC removes: written for `network` (said in the
/// backup; one without a network, as the reference writes, is never taken)
/// and whose file name is no valid attachment's. An attachment without an
/// interface keeps every backup of its container. A `_` in an ID can make two
/// attachments' names alike: such a backup is kept, never wrongly taken.
/// Stale backups cannot be restored (their link went with its namespace).
fn stale_backups(dir: &Path, network: &str, valid: &[Attachment]) -> Vec<PathBuf> {
    let names = crate::files::files_with(dir, &["json"]).unwrap_or_default();
    names
        .into_iter()
        .filter(|path| {
            let name = path
                .file_name()
                .map(|n| n.to_string_lossy())
                .unwrap_or_default();
            let backup = read_backup(path);
            !valid.iter().any(|a| match a.ifname.as_str() {
                "" => of_container(&name, backup.as_ref(), &a.container_id),
                ifname => name == backup_file(&a.container_id, ifname),
            })
        })
        .filter(|path| backup_network(path).as_deref() == Some(network))
        .collect()
}

/// The network a backup names; None when it names none or cannot be read
/// (a symlink is never followed).
pub(crate) fn backup_network(path: &Path) -> Option<String> {
    let backup = read_backup(path)?;
    (!backup.network.is_empty()).then_some(backup.network)
}

/// The whole container ID a backup under a bounded name holds, when its name
/// is that ID's (the name alone gives only the token).
pub(crate) fn backup_container(path: &Path) -> Option<String> {
    let backup = read_backup(path)?;
    let name = path.file_name()?.to_str()?;
    let id = backup.container_id;
    (!id.is_empty() && name == backup_file(&id, &backup.ifname)).then_some(id)
}

/// A backup's content; None when it cannot be read or decoded.
fn read_backup(path: &Path) -> Option<Backup> {
    let bytes = match crate::files::read_state_limited(path, crate::files::MAX_FILE) {
        Ok(bytes) => bytes,
        Err(e) => {
            if e.kind() != std::io::ErrorKind::NotFound {
                eprintln!("tuning: GC leaves {}: {e}", path.display());
            }
            return None;
        }
    };
    crate::cni::json::from_slice::<Backup>(&bytes).ok()
}

/// Whether a file is a backup tuning (ours or the reference's) wrote: named
/// `<containerID>_<ifname>.json` and a JSON object of backup keys only. Any
/// other file in a `dataDir` (an admin's notes) is nobody's backup.
pub(crate) fn is_backup(path: &Path) -> bool {
    const KEYS: [&str; 8] = [
        "mac",
        "promisc",
        "mtu",
        "allmulti",
        "txQLen",
        "network",
        "containerID",
        "ifname",
    ];
    let named = path
        .file_name()
        .and_then(|n| n.to_str())
        .and_then(|n| n.strip_suffix(".json"))
        .and_then(|stem| stem.rsplit_once('_'))
        .is_some_and(|(id, ifname)| {
            crate::cni::env::is_id_or_token(id) && crate::cni::env::validate_ifname(ifname).is_ok()
        });
    let Ok(bytes) = crate::files::read_state_limited(path, 64 << 10) else {
        return false;
    };
    let own_keys = match crate::cni::json::from_slice::<serde_json::Value>(&bytes) {
        Ok(serde_json::Value::Object(m)) => m
            .keys()
            .all(|k| KEYS.iter().any(|known| known.eq_ignore_ascii_case(k))),
        _ => false,
    };
    named && own_keys && crate::cni::json::from_slice::<Backup>(&bytes).is_ok()
}

fn prev(inv: &Invocation) -> CniResult<NetResult> {
    inv.conf
        .container_prev_result()?
        .ok_or_else(|| Error::invalid_config("must be called as chained plugin"))
}

impl Plugin for Tuning {
    /// The sysctl allowlist is the node's, not the config's: ADD reads it.
    fn validate(&self, inv: &Invocation) -> CniResult<()> {
        Conf::load(inv).map(drop)
    }

    fn add(&self, inv: &Invocation) -> CniResult<NetResult> {
        let conf = Conf::load(inv)?;
        check_allowlist(&conf, &inv.env.ifname)?;
        let mut result = prev(inv)?;
        let ns = attach::open_netns(&inv.env.netns)?;
        let ifname = inv.env.ifname.as_str();
        let original = ns.run(|| -> CniResult<Link> {
            for (key, path, value) in &conf.sysctls {
                sysctl::set(path, value).with_context(|| format!("sysctl {key}"))?;
            }
            Ok(Socket::open()?.link_by_name(ifname)?)
        })??;
        if conf.changes_link() {
            write_backup(&conf, inv, &original)?;
            ns.run(|| apply(&conf, &original))??;
        }
        if conf.mac.is_some() {
            for itf in result
                .interfaces
                .iter_mut()
                .filter(|i| i.name == ifname && i.sandbox == inv.env.netns)
            {
                itf.mac = conf.mac_text.clone();
            }
        }
        Ok(result)
    }

    /// Restores the backed-up attributes. It needs only `dataDir`: what ADD
    /// would refuse (a sysctl outside the allowlist, a bad MAC or MTU) does
    /// not keep the backup from coming back. Every attribute is tried, as the
    /// reference; when one cannot be restored DEL says so on stderr, naming
    /// each, keeps the backup and succeeds, as the reference (a failing DEL
    /// would hold the pod in Terminating for a link attribute). A namespace
    /// or link that is gone has nothing left to restore.
    fn del(&self, inv: &Invocation) -> CniResult<()> {
        let dir = match inv
            .conf
            .plugin_keys::<Keys>()
            .and_then(|k| data_dir(&k.data_dir))
        {
            Ok(dir) => dir,
            Err(e) => {
                eprintln!("tuning: nothing restored: {e}");
                return Ok(());
            }
        };
        let path = dir.join(backup_name(inv));
        let text = match crate::files::read_state_string_limited(&path, crate::files::MAX_FILE) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
            Err(e) => {
                return Err(e).with_context(|| format!("failed to read {}", path.display()));
            }
        };
        match crate::cni::json::from_str::<Backup>(&text) {
            Ok(backup) => {
                if let Some(ns) = NetNs::open_for_del(&inv.env.netns)? {
                    let ifname = inv.env.ifname.clone();
                    if let Err(e) = ns.run(move || restore(&ifname, &backup))? {
                        eprintln!("tuning: {e}; the backup {} stays", path.display());
                        return Ok(());
                    }
                }
            }
            // Nothing in it can ever be restored: retrying would not help.
            Err(e) => eprintln!("tuning: unreadable backup {} removed: {e}", path.display()),
        }
        crate::files::remove_state(&path)
            .with_context(|| format!("failed to remove {}", path.display()))
    }

    /// Removes this network's backups of attachments not in the valid list
    /// (the reference has no GC); without that list nothing is known to be stale.
    fn gc(&self, inv: &Invocation) -> CniResult<()> {
        let Some(valid) = inv.conf.valid_attachments()? else {
            return Ok(());
        };
        let dir = data_dir(&inv.conf.plugin_keys::<Keys>()?.data_dir)?;
        for path in stale_backups(&dir, inv.conf.name(), &valid) {
            crate::files::remove_state(&path)
                .with_context(|| format!("failed to remove {}", path.display()))?;
        }
        Ok(())
    }

    fn check(&self, inv: &Invocation) -> CniResult<()> {
        let conf = Conf::load(inv)?;
        prev(inv)?;
        let ns = attach::open_netns(&inv.env.netns)?;
        let ifname = inv.env.ifname.clone();
        ns.run(move || -> CniResult<()> {
            for (key, path, value) in &conf.sysctls {
                let now = sysctl::get(path)?;
                if now != value.trim() {
                    return Err(Error::internal(format!(
                        "Error: Tuning configured value of {key} is {value}, current value is {now}"
                    )));
                }
            }
            let link = Socket::open()?.link_by_name(&ifname)?;
            let mismatch = |what: &str| {
                Err(Error::internal(format!(
                    "Error: Tuning configured {what} of {ifname} does not match"
                )))
            };
            if let Some(mac) = conf.mac
                && link.mac != mac
            {
                return mismatch("MAC");
            }
            if conf.promisc && !link.is_promisc() {
                return mismatch("promiscuous mode");
            }
            if conf.mtu.is_some_and(|m| m != link.mtu) {
                return mismatch("MTU");
            }
            if conf.allmulti.is_some_and(|a| a != link.is_allmulti()) {
                return mismatch("allmulticast mode");
            }
            if conf.tx_qlen.is_some_and(|q| q != link.txqlen) {
                return mismatch("transmit queue length");
            }
            Ok(())
        })?
    }
}

/// Saves the attributes about to change (`<dataDir>/<id>_<ifname>.json`, 1-space JSON).
fn write_backup(conf: &Conf, inv: &Invocation, original: &Link) -> CniResult<()> {
    let mut backup = Backup {
        mac: if conf.mac.is_some() {
            original.mac_string()
        } else {
            String::new()
        },
        promisc: conf.promisc.then(|| original.is_promisc()),
        mtu: if conf.mtu.is_some() { original.mtu } else { 0 },
        allmulti: conf.allmulti.map(|_| original.is_allmulti()),
        tx_qlen: conf.tx_qlen.map(|_| original.txqlen),
        network: inv.conf.name().to_string(),
        ..Backup::default()
    };
    let name = backup_name(inv);
    if name != format!("{}_{}.json", inv.env.container_id, inv.env.ifname) {
        backup.container_id = inv.env.container_id.clone();
        backup.ifname = inv.env.ifname.clone();
    }
    let path = conf.data_dir.join(name);
    // An earlier ADD's backup holds the true originals: keep it.
    if path.exists() {
        return Ok(());
    }
    let mut text = Vec::new();
    let formatter = serde_json::ser::PrettyFormatter::with_indent(b" ");
    let mut ser = serde_json::Serializer::with_formatter(&mut text, formatter);
    backup
        .serialize(&mut ser)
        .map_err(|e| Error::caused_by(Code::Internal, "failed to encode backup", e))?;
    crate::files::write_private_atomic(&path, &text).map_err(Error::from)
}

fn apply(conf: &Conf, link: &Link) -> CniResult<()> {
    let mut sock = Socket::open()?;
    if let Some(mac) = conf.mac {
        sock.set_link(link, Change::Mac(mac))
            .context("failed to set MAC")?;
    }
    if conf.promisc {
        sock.set_link(link, Change::Promisc(true))
            .context("failed to set promiscuous mode")?;
    }
    if let Some(mtu) = conf.mtu {
        sock.set_link(link, Change::Mtu(mtu))
            .context("failed to set MTU")?;
    }
    if let Some(on) = conf.allmulti {
        sock.set_link(link, Change::AllMulti(on))
            .context("failed to set allmulticast mode")?;
    }
    if let Some(q) = conf.tx_qlen {
        sock.set_link(link, Change::TxQueueLen(q))
            .context("failed to set transmit queue length")?;
    }
    Ok(())
}

/// Tries every backed-up attribute (in the reference's order); the error
/// names each one that failed.
fn restore(ifname: &str, b: &Backup) -> CniResult<()> {
    let mut sock = Socket::open()?;
    let link = match sock.link_by_name(ifname) {
        Ok(link) => link,
        Err(e) if e.is_not_found() => return Ok(()),
        Err(e) => return Err(e.into()),
    };
    let mut changes = Vec::new();
    if b.mtu > 0 {
        changes.push(("MTU", Change::Mtu(b.mtu)));
    }
    match parse_mac(&b.mac) {
        Some(mac) => changes.push(("MAC address", Change::Mac(mac))),
        None if !b.mac.is_empty() => eprintln!("tuning: backed-up MAC {} skipped", quoted(&b.mac)),
        None => {}
    }
    if let Some(p) = b.promisc {
        changes.push(("promiscuous mode", Change::Promisc(p)));
    }
    if let Some(a) = b.allmulti {
        changes.push(("all-multicast mode", Change::AllMulti(a)));
    }
    if let Some(q) = b.tx_qlen {
        changes.push(("transmit queue length", Change::TxQueueLen(q)));
    }
    let mut failed = Vec::new();
    let mut first = None;
    for (what, change) in changes {
        if let Err(e) = sock.set_link(&link, change) {
            failed.push(format!("failed to restore {what}: {e}"));
            first.get_or_insert(e);
        }
    }
    match first {
        None => Ok(()),
        Some(cause) => Err(Error::internal(failed.join("; ")).with_source(cause)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sysctl_keys_stay_in_net() {
        assert_eq!(
            sysctl_key("net.ipv4.conf.IFNAME.arp_notify", "eth0.5")
                .ok()
                .as_deref(),
            Some("net/ipv4/conf/eth0.5/arp_notify")
        );
        assert_eq!(
            sysctl_key("net.core.somaxconn", "eth0").ok().as_deref(),
            Some("net/core/somaxconn")
        );
        for bad in [
            "kernel.panic",
            "net..x",
            "net/../kernel/panic",
            "net",
            "vm.net.x",
        ] {
            assert_eq!(sysctl_key(bad, "eth0").map_err(|e| e.code), Err(7), "{bad}");
        }
    }

    #[test]
    fn allowlist_lines_are_tried_in_order_and_a_bad_one_names_its_line() {
        let lines = allowlist_lines(
            "# comment\n\n  ^net\\.core\\.(somaxconn|rmem_max)$ \n(unclosed\n^net\\.ipv4\\.conf\\.eth0\\.\\w+$\n",
        );
        assert_eq!(lines.len(), 3);
        assert_eq!(lines[0].0, 3);
        // An earlier line allows the key: the bad line is never reached (as the reference).
        assert_eq!(allowed(&lines, "net.core.somaxconn", "eth0"), Ok(true));
        // Reached: an error naming the file and line, code 7, keeping the cause.
        let e = allowed(&lines, "net.ipv4.conf.IFNAME.arp_notify", "eth0").expect_err("bad line");
        assert_eq!(e.code, 7);
        assert!(
            e.msg.starts_with(&format!(
                "{ALLOWLIST} line 4: invalid pattern \"(unclosed\""
            )),
            "{e}"
        );
        assert!(std::error::Error::source(&e).is_some());
        let good = allowlist_lines("^net\\.ipv4\\.conf\\.eth0\\.\\w+$\nsomaxconn");
        // IFNAME may match as written or with the interface name put in.
        assert_eq!(
            allowed(&good, "net.ipv4.conf.IFNAME.arp_notify", "eth0"),
            Ok(true)
        );
        assert_eq!(
            allowed(&good, "net.ipv4.conf.IFNAME.arp_notify", "eth1"),
            Ok(false)
        );
        // Unanchored patterns match anywhere, as Go's MatchString.
        assert_eq!(allowed(&good, "net.core.somaxconn", "eth0"), Ok(true));
        assert_eq!(allowed(&good, "net.core.rmem_max", "eth0"), Ok(false));
    }

    #[test]
    fn backups_use_the_reference_layout() {
        let b = Backup {
            mac: "aa:bb:cc:dd:ee:ff".into(),
            promisc: Some(false),
            mtu: 1500,
            allmulti: None,
            tx_qlen: Some(1000),
            network: "net".into(),
            ..Backup::default()
        };
        let mut text = Vec::new();
        let mut ser = serde_json::Serializer::with_formatter(
            &mut text,
            serde_json::ser::PrettyFormatter::with_indent(b" "),
        );
        b.serialize(&mut ser).expect("encode");
        assert_eq!(
            String::from_utf8_lossy(&text),
            "{\n \"mac\": \"aa:bb:cc:dd:ee:ff\",\n \"promisc\": false,\n \"mtu\": 1500,\n \"txQLen\": 1000,\n \"network\": \"net\"\n}"
        );
    }
}

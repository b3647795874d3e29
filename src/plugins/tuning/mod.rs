//! tuning (chained): net.* sysctls inside the container and link attributes of
//! CNI_IFNAME (mac, mtu, promisc, allmulti, txQLen), with the reference's backup
//! of the original attributes, restored on DEL (`backup.rs`), and the node's
//! sysctl allowlist (`allowlist.rs`). Its output is prevResult.

mod allowlist;
pub(crate) mod backup;
pub mod pattern;

use crate::attach;
use crate::cni::error::Context;
use crate::cni::result::NetResult;
use crate::cni::{CniResult, Error, Invocation, Plugin};
use crate::kernel::sysctl;
use crate::netlink::Socket;
use crate::netlink::link::{Change, Link, parse_mac};
use crate::netns::NetNs;
use crate::quote::quoted;
use allowlist::check_allowlist;
use backup::{Backup, backup_name, restore, stale_backups, write_backup};
use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::PathBuf;

pub struct Tuning;

pub(crate) const DEFAULT_DATA_DIR: &str = "/run/cni/tuning";

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

#[cfg(test)]
mod tests;

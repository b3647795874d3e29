//! Attachments whose cache entry names no netns (libcni before 1.2, as
//! containerd 1.6 and 1.7 and Debian's libcni write them), judged from what
//! the host shows: a host veth the cached result lists lives while its peer's
//! namespace does, and a namespace that holds an address of the result is
//! the pod's. Alive with that namespace (so a repair can enter it), dead only
//! on positive evidence: a host interface of the result is gone and no
//! namespace, every one of them read, holds any of its addresses. Else
//! unknown, never judged.

use super::namespaces;
use super::node::{Cached, State, result_ips};
use crate::netlink::Socket;
use crate::netns::NetNs;
use anyhow::Result;
use serde_json::Value;
use std::collections::BTreeSet;
use std::net::IpAddr;
use std::os::unix::fs::MetadataExt;
use std::path::PathBuf;

/// A namespace of the node: where, its ID here, its addresses.
struct Namespace {
    path: PathBuf,
    nsid: Option<i32>,
    ips: Vec<IpAddr>,
}

pub fn judge(attachments: &mut [Cached]) -> Result<()> {
    let pending: Vec<usize> = (0..attachments.len())
        .filter(|&i| {
            let a = &attachments[i];
            a.state == State::Unknown && a.entry.netns.is_empty()
        })
        .collect();
    if pending.is_empty() {
        return Ok(());
    }
    let mut sock = Socket::open()?;
    let links = sock.links()?;
    let (spaces, complete) = namespaces_of_node(&mut sock);
    for i in pending {
        let a = &mut attachments[i];
        let Some(result) = a.entry.result.as_ref() else {
            continue;
        };
        let hosts = host_interfaces(result);
        let ips = result_ips(result);
        let by_veth = hosts.iter().find_map(|(name, mac)| {
            let l = links.iter().find(|l| &l.name == name && l.kind == "veth")?;
            if mac.as_ref().is_some_and(|m| *m != l.mac) {
                return None;
            }
            let id = l.link_netnsid?;
            spaces.iter().find(|s| s.nsid == Some(id))
        });
        let by_address = || {
            spaces
                .iter()
                .find(|s| s.ips.iter().any(|ip| ips.contains(ip)))
        };
        if let Some(space) = by_veth.or_else(by_address) {
            a.state = State::Alive;
            a.netns = space.path.to_string_lossy().into_owned();
            continue;
        }
        let host_gone = hosts
            .iter()
            .any(|(name, _)| !links.iter().any(|l| &l.name == name));
        if complete && host_gone && !ips.is_empty() {
            a.state = State::Dead;
        }
    }
    Ok(())
}

/// The result's interfaces outside any sandbox, with their MAC when given.
fn host_interfaces(result: &Value) -> Vec<(String, Option<Vec<u8>>)> {
    let Some(Value::Array(ifaces)) = result.get("interfaces") else {
        return Vec::new();
    };
    ifaces
        .iter()
        .filter(|i| {
            i.get("sandbox")
                .and_then(Value::as_str)
                .is_none_or(str::is_empty)
        })
        .filter_map(|i| {
            let name = i.get("name")?.as_str()?.to_string();
            let mac = i.get("mac").and_then(Value::as_str).and_then(parse_mac);
            Some((name, mac))
        })
        .collect()
}

fn parse_mac(text: &str) -> Option<Vec<u8>> {
    let bytes: Option<Vec<u8>> = text
        .split(':')
        .map(|b| u8::from_str_radix(b, 16).ok())
        .collect();
    bytes.filter(|b| b.len() == 6)
}

/// Every namespace a task or bind mount holds but the doctor's own, and
/// whether each could be read.
fn namespaces_of_node(sock: &mut Socket) -> (Vec<Namespace>, bool) {
    let own = std::fs::metadata("/proc/thread-self/ns/net")
        .map(|m| (m.dev(), m.ino()))
        .ok();
    let mut seen = BTreeSet::new();
    let mut out = Vec::new();
    let mut complete = true;
    for path in namespaces::candidates() {
        let Ok(meta) = std::fs::metadata(&path) else {
            continue;
        };
        let id = (meta.dev(), meta.ino());
        if Some(id) == own || !seen.insert(id) {
            continue;
        }
        let read = (|| -> Result<Option<Namespace>> {
            let ns = match NetNs::open(&path) {
                Ok(ns) => ns,
                Err(crate::netns::Error::NotFound(_)) => return Ok(None),
                Err(e) => return Err(e.into()),
            };
            let nsid = sock.netns_id(ns.fd())?;
            let ips = namespaces::addresses_in(&path)?;
            Ok(Some(Namespace {
                path: path.clone(),
                nsid,
                ips,
            }))
        })();
        match read {
            Ok(Some(space)) => out.push(space),
            Ok(None) => {}
            Err(_) if path.starts_with("/proc") && !path.exists() => {}
            Err(e) => {
                eprintln!(
                    "cnitool doctor: cannot read the namespace {}, attachments without a netns \
                     are not judged dead: {e:#}",
                    path.display()
                );
                complete = false;
            }
        }
    }
    (out, complete)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn host_interfaces_of_a_bridge_result() {
        let r = serde_json::json!({"interfaces": [
            {"name": "cni0", "mac": "0a:58:0a:f4:00:01"},
            {"name": "veth1234", "mac": "aa:bb:cc:dd:ee:ff", "sandbox": ""},
            {"name": "eth0", "mac": "0a:58:0a:f4:00:05", "sandbox": "/var/run/netns/x"}
        ]});
        let got = host_interfaces(&r);
        assert_eq!(got.len(), 2);
        assert_eq!(got[1].0, "veth1234");
        assert_eq!(got[1].1, Some(vec![0xaa, 0xbb, 0xcc, 0xdd, 0xee, 0xff]));
        assert_eq!(parse_mac("zz:00"), None);
    }
}

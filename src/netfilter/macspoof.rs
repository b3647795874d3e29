//! bridge's `macspoofchk`: frames entering the bridge from a container's host
//! veth pass only with the container's own source MAC. The reference's layout
//! (`pkg/link/spoofcheck.go`): table `bridge nat`, base chain `PREROUTING`
//! (filter, prerouting, priority -300, policy accept) holding one
//! `iifname "<veth>" jump cni-br-iface-<id>` per attachment; that chain jumps
//! to `cni-br-iface-<id>-mac`, which returns for `ether saddr <mac>` and drops
//! the rest. `<id>` is `<containerID>-<ifname>`, every rule is commented
//! `macspoofchk-<id>`.
//!
//! The reference needs two `nft` runs to set up (a chain can only be flushed
//! once it exists); one nf_tables transaction can make a chain and flush it,
//! so here setup is one transaction, and so is teardown.
//!
//! Teardown looks the attachment's chains up by name and reads its iface
//! chain (one rule), never PREROUTING or the table's chain list, whose size
//! grows with every attachment: an ADD (ours, and the reference's second
//! `nft` run alike) adds the PREROUTING jump right before the iface chain's
//! rule, so the kernel gives the jump the handle before that rule's; the
//! iface chain's use count says whether other jumps to it exist (a repeated
//! ADD's), and only then is PREROUTING read.

use super::nft::{self, HOOK_PREROUTING, NFPROTO_BRIDGE, Tx};
use super::{Error, Result, lock};
use crate::netlink::nfnl::NfSocket;

pub const TABLE: &str = "nat";
pub const PREROUTING: &str = "PREROUTING";
const PRIORITY: i32 = -300;
const CHAIN_PREFIX: &str = "cni-br-iface-";
const MAC_SUFFIX: &str = "-mac";
const COMMENT_PREFIX: &str = "macspoofchk-";
/// The longest nf_tables object name (NFT_NAME_MAXLEN less its NUL).
const MAX_NAME: usize = 255;

/// The chains and comment of one attachment.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Names {
    iface_chain: String,
    mac_chain: String,
    comment: String,
}

impl Names {
    /// None when the chain names would pass the kernel's limit (container IDs
    /// may be up to 1024 bytes): such an attachment can have no chains.
    fn of(container_id: &str, ifname: &str) -> Option<Names> {
        Names::of_id(&format!("{container_id}-{ifname}"))
    }

    fn of_id(id: &str) -> Option<Names> {
        let iface_chain = format!("{CHAIN_PREFIX}{id}");
        let mac_chain = format!("{iface_chain}{MAC_SUFFIX}");
        (mac_chain.len() <= MAX_NAME).then(|| Names {
            iface_chain,
            mac_chain,
            comment: format!("{COMMENT_PREFIX}{id}"),
        })
    }
}

/// What a setup found in the table before writing.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct Found {
    /// The base chain is there: it is not declared again.
    prerouting: bool,
    /// The attachment's chains are there (a repeated ADD): declared and
    /// flushed, as the reference does on every ADD; else made exclusively.
    chains: bool,
}

/// The rules of an ADD, in the reference's order. Declaring a chain that
/// exists or flushing one costs the commit an RCU grace period (about as
/// long as a whole ADD), so only what is missing is made.
fn setup_tx(names: &Names, host_iface: &str, mac: [u8; 6], found: Found) -> Tx {
    let f = NFPROTO_BRIDGE;
    let comment = Some(names.comment.as_str());
    let mut tx = Tx::new();
    if !found.prerouting {
        tx.plain_table(f, TABLE);
        tx.accepting_base_chain(f, TABLE, PREROUTING, ("filter", HOOK_PREROUTING, PRIORITY));
    }
    if found.chains {
        tx.chain(f, TABLE, &names.iface_chain, None);
        tx.chain(f, TABLE, &names.mac_chain, None);
        tx.flush(f, TABLE, &names.iface_chain);
        tx.flush(f, TABLE, &names.mac_chain);
    } else {
        tx.new_chain(f, TABLE, &names.iface_chain);
        tx.new_chain(f, TABLE, &names.mac_chain);
    }
    let mut jump = nft::match_iifname(host_iface);
    jump.push(nft::jump(&names.iface_chain));
    tx.rule(f, TABLE, PREROUTING, &jump, comment);
    let to_mac = [nft::jump(&names.mac_chain)];
    tx.rule(f, TABLE, &names.iface_chain, &to_mac, comment);
    let mut own_mac = nft::match_ether_saddr(mac);
    own_mac.push(nft::ret());
    tx.rule(f, TABLE, &names.mac_chain, &own_mac, comment);
    tx.rule(f, TABLE, &names.mac_chain, &[nft::drop()], comment);
    tx
}

/// Installs the check for the container end with `mac` whose host end is
/// `host_iface`. Until `keep()`, dropping the returned guard removes it again
/// (a later step of ADD failed).
pub fn setup(container_id: &str, ifname: &str, host_iface: &str, mac: [u8; 6]) -> Result<Guard> {
    let names = Names::of(container_id, ifname).ok_or_else(|| {
        Error::InvalidConfig(format!(
            "macspoofchk: container ID and interface name make a chain name longer than \
             {MAX_NAME} bytes"
        ))
    })?;
    let _lock = lock()?;
    nft::commit_fresh(|sock| {
        let f = NFPROTO_BRIDGE;
        let found = Found {
            prerouting: nft::chain_info(sock, f, TABLE, PREROUTING)?.is_some(),
            chains: nft::chain_info(sock, f, TABLE, &names.iface_chain)?.is_some()
                || nft::chain_info(sock, f, TABLE, &names.mac_chain)?.is_some(),
        };
        Ok(Some(setup_tx(&names, host_iface, mac, found)))
    })?;
    Ok(Guard { names: Some(names) })
}

/// Removes a setup unless kept.
#[must_use]
pub struct Guard {
    names: Option<Names>,
}

impl Guard {
    pub fn keep(mut self) {
        self.names = None;
    }
}

impl Drop for Guard {
    fn drop(&mut self) {
        if let Some(names) = self.names.take() {
            // The ADD is failing already; its error is the one to report.
            let _ = lock().and_then(|_lock| remove_by_name(&names));
        }
    }
}

/// Adds to `tx` the removal of the attachments' PREROUTING rules (by comment,
/// or jumping to their chain) and of both their chains, where present.
fn removal(tx: &mut Tx, names: &[Names], rules: &[nft::DumpedRule], chains: &[String]) {
    let f = NFPROTO_BRIDGE;
    for r in rules.iter().filter(|r| {
        names
            .iter()
            .any(|n| r.comment == n.comment || r.jumps.contains(&n.iface_chain))
    }) {
        tx.delete_rule(f, TABLE, PREROUTING, r.handle);
    }
    for n in names {
        // Emptied first: kernels before recursive chain deletion refuse a
        // chain with rules, and the iface chain's jump holds the mac chain.
        for chain in [&n.iface_chain, &n.mac_chain] {
            if chains.contains(chain) {
                tx.flush(f, TABLE, chain);
            }
        }
        for chain in [&n.iface_chain, &n.mac_chain] {
            if chains.contains(chain) {
                tx.delete_chain(f, TABLE, chain);
            }
        }
    }
}

/// Removes one attachment's PREROUTING jumps and chains, found by name.
fn remove_by_name(names: &Names) -> Result<()> {
    nft::commit_fresh(|sock| {
        let f = NFPROTO_BRIDGE;
        let iface = nft::chain_info(sock, f, TABLE, &names.iface_chain)?;
        let mac = nft::chain_info(sock, f, TABLE, &names.mac_chain)?;
        let chains: Vec<String> = [(&iface, &names.iface_chain), (&mac, &names.mac_chain)]
            .into_iter()
            .filter(|(info, _)| info.is_some())
            .map(|(_, name)| name.clone())
            .collect();
        if chains.is_empty() {
            return Ok(None);
        }
        let mut jumps = Vec::new();
        if let Some(info) = iface {
            let own = nft::rules(sock, f, TABLE, &names.iface_chain)?;
            let referrers = (info.uses as usize).saturating_sub(own.len());
            let theirs = |r: &nft::DumpedRule| r.jumps.contains(&names.iface_chain);
            let before = own.first().and_then(|r| r.handle.checked_sub(1));
            if let Some(handle) = before.filter(|_| referrers > 0) {
                jumps.extend(nft::rule_at(sock, f, TABLE, PREROUTING, handle)?.filter(theirs));
            }
            if jumps.len() < referrers {
                jumps = nft::rules(sock, f, TABLE, PREROUTING)?;
            }
        }
        let mut tx = Tx::new();
        removal(&mut tx, std::slice::from_ref(names), &jumps, &chains);
        Ok(Some(tx))
    })
}

/// The PREROUTING rules and the chain names of the table (none when missing).
fn state(sock: &mut NfSocket) -> Result<(Vec<nft::DumpedRule>, Vec<String>)> {
    let rules = nft::rules(sock, NFPROTO_BRIDGE, TABLE, PREROUTING)?;
    let chains = nft::chains(sock, NFPROTO_BRIDGE, TABLE)?;
    Ok((rules, chains))
}

/// DEL: removes the attachment's rules and chains; already gone is success.
pub fn teardown(container_id: &str, ifname: &str) -> Result<()> {
    let Some(names) = Names::of(container_id, ifname) else {
        return Ok(());
    };
    let _lock = lock()?;
    remove_by_name(&names)
}

/// GC: removes the attachments whose ID (`<containerID>-<ifname>`) is not in
/// `valid`. The rules do not name their network, so `owned` decides from the
/// host interface of an attachment's PREROUTING rule whether this network may
/// remove it (e.g.: a port of its bridge, or gone); chains that no PREROUTING
/// rule jumps to filter nothing and go when their ID is not valid.
pub fn gc(valid: &[(&str, &str)], mut owned: impl FnMut(&str) -> bool) -> Result<()> {
    let valid: Vec<Names> = valid
        .iter()
        .filter_map(|(cid, ifname)| Names::of(cid, ifname))
        .collect();
    let is_valid = |n: &Names| valid.iter().any(|v| v.iface_chain == n.iface_chain);
    let _lock = lock()?;
    let mut sock = nft::open()?;
    let (rules, chains) = state(&mut sock)?;
    let mut stale: Vec<Names> = Vec::new();
    let mut attached: Vec<&str> = Vec::new();
    for r in &rules {
        let Some(names) = r
            .comment
            .strip_prefix(COMMENT_PREFIX)
            .and_then(Names::of_id)
        else {
            continue;
        };
        attached.extend(r.jumps.iter().map(String::as_str));
        let mine = r.iifname.as_deref().is_none_or(&mut owned);
        if !is_valid(&names) && mine && !stale.contains(&names) {
            stale.push(names);
        }
    }
    // Chains without a PREROUTING jump: a pair whose mac chain is there too.
    for chain in &chains {
        let Some(names) = chain.strip_prefix(CHAIN_PREFIX).and_then(Names::of_id) else {
            continue;
        };
        let orphan = !attached.contains(&chain.as_str()) && chains.contains(&names.mac_chain);
        if orphan && !is_valid(&names) && !stale.contains(&names) {
            stale.push(names);
        }
    }
    if stale.is_empty() {
        return Ok(());
    }
    let mut tx = Tx::new();
    removal(&mut tx, &stale, &rules, &chains);
    tx.commit(&mut sock)
}

/// One attachment's chains as found in `bridge nat`.
#[derive(Debug, Clone, PartialEq)]
pub struct Checked {
    /// `<containerID>-<ifname>`.
    pub id: String,
    /// Its `cni-br-iface-<id>` chain.
    pub chain: String,
    /// The host interface its PREROUTING jump matches (None: no jump).
    pub iifname: Option<String>,
}

/// Every attachment's chains from the PREROUTING rules and chain names of
/// `bridge nat`: a commented jump, or a chain pair no rule jumps to.
pub fn checked(rules: &[nft::DumpedRule], chains: &[String]) -> Vec<Checked> {
    let mut out: Vec<Checked> = Vec::new();
    for r in rules {
        let Some(id) = r.comment.strip_prefix(COMMENT_PREFIX) else {
            continue;
        };
        let Some(names) = Names::of_id(id) else {
            continue;
        };
        if !out.iter().any(|c| c.chain == names.iface_chain) {
            out.push(Checked {
                id: id.to_string(),
                chain: names.iface_chain,
                iifname: r.iifname.clone(),
            });
        }
    }
    for chain in chains {
        let Some(id) = chain.strip_prefix(CHAIN_PREFIX) else {
            continue;
        };
        let Some(names) = Names::of_id(id) else {
            continue;
        };
        if chains.contains(&names.mac_chain) && !out.iter().any(|c| &c.chain == chain) {
            out.push(Checked {
                id: id.to_string(),
                chain: chain.clone(),
                iifname: None,
            });
        }
    }
    out
}

/// What [`checked`] finds on this node (read only: no lock; none without
/// nf_tables or the table).
pub fn read() -> Result<Vec<Checked>> {
    if !crate::netlink::nfnl::available() {
        return Ok(Vec::new());
    }
    let mut sock = nft::open()?;
    let (rules, chains) = state(&mut sock)?;
    Ok(checked(&rules, &chains))
}

/// Removes the chains and PREROUTING rules of one attachment by its ID
/// (`<containerID>-<ifname>`), as DEL does; already gone is success.
pub fn teardown_id(id: &str) -> Result<()> {
    let Some(names) = Names::of_id(id) else {
        return Ok(());
    };
    let _lock = lock()?;
    remove_by_name(&names)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::netlink::nfnl::{NLM_F_APPEND, NLM_F_CREATE};

    fn hex(bytes: &[u8]) -> String {
        bytes.iter().map(|b| format!("{b:02x}")).collect()
    }

    #[test]
    fn checked_reads_jumps_and_orphan_pairs() {
        let rule = |comment: &str, iif: &str, jump: &str| nft::DumpedRule {
            handle: 1,
            comment: comment.into(),
            jumps: vec![jump.into()],
            iifname: Some(iif.into()),
            saddr: None,
        };
        let rules = [
            rule("macspoofchk-a-eth0", "veth1", "cni-br-iface-a-eth0"),
            rule("other", "veth2", "elsewhere"),
        ];
        let chains: Vec<String> = [
            "cni-br-iface-a-eth0",
            "cni-br-iface-a-eth0-mac",
            "cni-br-iface-b-net1",
            "cni-br-iface-b-net1-mac",
            "cni-br-iface-c-eth0",
        ]
        .iter()
        .map(|c| c.to_string())
        .collect();
        let got = checked(&rules, &chains);
        let want = |id: &str, iif: Option<&str>| Checked {
            id: id.into(),
            chain: format!("cni-br-iface-{id}"),
            iifname: iif.map(String::from),
        };
        assert_eq!(
            got,
            vec![want("a-eth0", Some("veth1")), want("b-net1", None)]
        );
    }

    #[test]
    fn names_follow_the_reference() {
        let n = Names::of("abc", "eth0").expect("names");
        assert_eq!(n.iface_chain, "cni-br-iface-abc-eth0");
        assert_eq!(n.mac_chain, "cni-br-iface-abc-eth0-mac");
        assert_eq!(n.comment, "macspoofchk-abc-eth0");
        // A 64-hex container ID fits; a kilobyte one cannot be a chain name.
        assert!(Names::of(&"f".repeat(64), "eth0").is_some());
        assert!(Names::of(&"f".repeat(1024), "eth0").is_none());
        let longest = MAX_NAME - "cni-br-iface-".len() - "-mac".len() - "-eth0".len();
        assert!(Names::of(&"f".repeat(longest), "eth0").is_some());
        assert!(Names::of(&"f".repeat(longest + 1), "eth0").is_none());
    }

    /// The attributes of each message are byte for byte what nft 1.0.6 sends
    /// (`nft --debug=mnl -f`, NLM_F flags aside) for the reference's ADD of
    /// container `abc`, ifname `eth0`, host veth `veth1234`, MAC 0a:58:0a:01:02:03.
    #[test]
    fn setup_sends_what_nft_sends() {
        let names = Names::of("abc", "eth0").expect("names");
        // As the reference, which declares everything on every ADD.
        let declared = Found {
            prerouting: false,
            chains: true,
        };
        let tx = setup_tx(
            &names,
            "veth1234",
            [0x0a, 0x58, 0x0a, 0x01, 0x02, 0x03],
            declared,
        );
        let expected: [(u16, u16, &str); 10] = [
            // add table bridge nat
            (0, NLM_F_CREATE, "080001006e6174000800020000000000"),
            // add chain bridge nat PREROUTING { type filter hook prerouting priority -300; policy accept; }
            (
                3,
                NLM_F_CREATE,
                "080001006e6174000f000300505245524f5554494e4700000b00070066696c74657200000800050000000001\
             14000480080001000000000008000200fffffed4",
            ),
            // add chain bridge nat cni-br-iface-abc-eth0
            (
                3,
                NLM_F_CREATE,
                "080001006e6174001a000300636e692d62722d69666163652d6162632d65746830000000",
            ),
            // add chain bridge nat cni-br-iface-abc-eth0-mac
            (
                3,
                NLM_F_CREATE,
                "080001006e6174001e000300636e692d62722d69666163652d6162632d657468302d6d6163000000",
            ),
            // flush chain bridge nat cni-br-iface-abc-eth0
            (
                8,
                0,
                "080001006e6174001a000200636e692d62722d69666163652d6162632d65746830000000",
            ),
            // flush chain bridge nat cni-br-iface-abc-eth0-mac
            (
                8,
                0,
                "080001006e6174001e000200636e692d62722d69666163652d6162632d657468302d6d6163000000",
            ),
            // add rule bridge nat PREROUTING iifname "veth1234" jump cni-br-iface-abc-eth0 comment …
            (
                6,
                NLM_F_CREATE | NLM_F_APPEND,
                "080001006e6174000f000200505245524f5554494e470000ac00048024000180090001006d65746100000000\
             14000280080002000000000608000100000000013800018008000100636d70002c0002800800010000000001\
             08000200000000001800038014000100766574683132333400000000000000004c0001800e000100696d6d65\
             64696174650000003800028008000100000000002c0002802800028008000100fffffffd1a000200636e692d\
             62722d69666163652d6162632d657468300000001b00070000156d616373706f6f6663686b2d6162632d6574\
             68300000",
            ),
            // add rule bridge nat cni-br-iface-abc-eth0 jump cni-br-iface-abc-eth0-mac comment …
            (
                6,
                NLM_F_CREATE | NLM_F_APPEND,
                "080001006e6174001a000200636e692d62722d69666163652d6162632d657468300000005400048050000180\
             0e000100696d6d6564696174650000003c0002800800010000000000300002802c00028008000100fffffffd\
             1e000200636e692d62722d69666163652d6162632d657468302d6d61630000001b00070000156d616373706f\
             6f6663686b2d6162632d657468300000",
            ),
            // add rule bridge nat cni-br-iface-abc-eth0-mac ether saddr 0a:58:0a:01:02:03 return comment …
            (
                6,
                NLM_F_CREATE | NLM_F_APPEND,
                "080001006e6174001e000200636e692d62722d69666163652d6162632d657468302d6d616300000098000480\
             340001800c0001007061796c6f61640024000280080001000000000108000200000000000800030000000006\
             08000400000000063000018008000100636d7000240002800800010000000001080002000000000010000380\
             0a0001000a580a0102030000300001800e000100696d6d6564696174650000001c0002800800010000000000\
             100002800c00028008000100fffffffb1b00070000156d616373706f6f6663686b2d6162632d657468300000",
            ),
            // add rule bridge nat cni-br-iface-abc-eth0-mac drop comment …
            (
                6,
                NLM_F_CREATE | NLM_F_APPEND,
                "080001006e6174001e000200636e692d62722d69666163652d6162632d657468302d6d616300000034000480\
             300001800e000100696d6d6564696174650000001c0002800800010000000000100002800c00028008000100\
             000000001b00070000156d616373706f6f6663686b2d6162632d657468300000",
            ),
        ];
        let got: Vec<(u16, u16, String)> = tx
            .messages()
            .iter()
            .map(|m| {
                assert_eq!(m.family, NFPROTO_BRIDGE);
                (m.kind, m.flags, hex(&m.attrs))
            })
            .collect();
        let got_declared = got.clone();
        assert_eq!(got.len(), expected.len());
        for (i, (g, (kind, flags, attrs))) in got.iter().zip(expected).enumerate() {
            assert_eq!(g, &(kind, flags, attrs.to_string()), "message {i}");
        }
        // A new attachment on a node that has the base chain: its chains are
        // made (exclusively), nothing is declared again or flushed, and the
        // rules are the same.
        let fresh = Found {
            prerouting: true,
            chains: false,
        };
        let tx = setup_tx(
            &names,
            "veth1234",
            [0x0a, 0x58, 0x0a, 0x01, 0x02, 0x03],
            fresh,
        );
        let got: Vec<(u16, u16, String)> = tx
            .messages()
            .iter()
            .map(|m| (m.kind, m.flags, hex(&m.attrs)))
            .collect();
        let exclusive = NLM_F_CREATE | crate::netlink::nfnl::NLM_F_EXCL;
        let kinds: Vec<(u16, u16)> = got.iter().map(|(k, f, _)| (*k, *f)).collect();
        assert_eq!(kinds[..2], [(3, exclusive), (3, exclusive)]);
        assert_eq!(got[2..], got_declared[6..]);
    }

    fn rule(handle: u64, comment: &str, jump: &str, iifname: &str) -> nft::DumpedRule {
        nft::DumpedRule {
            handle,
            comment: comment.into(),
            jumps: vec![jump.into()],
            iifname: Some(iifname.into()),
            saddr: None,
        }
    }

    #[test]
    fn teardown_takes_rules_by_comment_or_jump_then_both_chains() {
        let mine = Names::of("abc", "eth0").expect("names");
        let rules = [
            rule(4, "macspoofchk-abc-eth0", "cni-br-iface-abc-eth0", "veth1"),
            rule(
                5,
                "macspoofchk-other-eth0",
                "cni-br-iface-other-eth0",
                "veth2",
            ),
            rule(6, "", "cni-br-iface-abc-eth0", "veth1"),
        ];
        let chains: Vec<String> = [
            "PREROUTING",
            "cni-br-iface-abc-eth0",
            "cni-br-iface-abc-eth0-mac",
            "cni-br-iface-other-eth0",
        ]
        .map(String::from)
        .to_vec();
        let mut tx = Tx::new();
        removal(&mut tx, &[mine], &rules, &chains);
        let what: Vec<&str> = tx.messages().iter().map(|m| m.what.as_str()).collect();
        assert_eq!(
            what,
            [
                "delete rule 4 of nat PREROUTING",
                "delete rule 6 of nat PREROUTING",
                "flush chain nat cni-br-iface-abc-eth0",
                "flush chain nat cni-br-iface-abc-eth0-mac",
                "delete chain nat cni-br-iface-abc-eth0",
                "delete chain nat cni-br-iface-abc-eth0-mac",
            ]
        );
        // Already gone: nothing to send.
        let mut tx = Tx::new();
        let gone = Names::of("abc", "eth0").expect("names");
        removal(&mut tx, &[gone], &[], &["PREROUTING".to_string()]);
        assert!(tx.is_empty());
    }
}

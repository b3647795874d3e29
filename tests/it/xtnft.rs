//! iptables-nft's rules over netlink (`src/netfilter/xtnft/`), byte for byte
//! against iptables-nft itself: for each rule shape a plugin writes, in both
//! families, the plugin's restore text (what the legacy path runs) goes
//! through `iptables-nft-restore` in one namespace and our netlink batch
//! writes the same plan in another; both namespaces' tables are then read
//! back over netlink and compared attribute for attribute (chains with their
//! hooks, priorities, policies and use counts; each rule's expressions and
//! userdata in chain order; handles and counter values aside). Deletes are
//! crossed: iptables' delete-by-spec removes what we wrote, our delete by
//! handle removes what iptables wrote, and the tables end equal.

use crate::harness;

use cni_multi::netfilter::Family;
use cni_multi::netlink::nfnl::NfSocket;
use cni_multi::netlink::wire::{self, Body};
use harness::{Netns, enter_test_host, in_netns};
use std::fmt::Write as _;
use std::io::Write as _;
use std::process::{Command, Stdio};

// linux/netfilter/nf_tables.h
const NFT_MSG_GETCHAIN: u16 = 4;
const NFT_MSG_GETRULE: u16 = 7;

fn nfproto(family: Family) -> u8 {
    match family {
        Family::V4 => 2,
        Family::V6 => 10,
    }
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// An attribute list as text: `type=hex`, with the nests of the
/// expressions compared here (`nested`: NFTA_DATA_* nests) indented.
fn attrs_text(out: &mut String, bytes: &[u8], depth: usize, nested: &dyn Fn(u16) -> bool) {
    for (ty, payload) in wire::attrs(bytes) {
        let pad = "  ".repeat(depth);
        if nested(ty) {
            let _ = writeln!(out, "{pad}{ty}:");
            // A value (leaf), or a verdict: a nest of leaves (code, chain).
            let verdict = |t: u16| t == 2;
            let leaves = |_: u16| false;
            let inner: &dyn Fn(u16) -> bool = if depth < 4 { &verdict } else { &leaves };
            attrs_text(out, payload, depth + 1, inner);
        } else {
            let _ = writeln!(out, "{pad}{ty}={}", hex(payload));
        }
    }
}

/// One family's `table` of the calling thread's namespace, read over
/// netlink: its chains (in the table's order, which is the order they were
/// made in) with their attributes but the handle,
/// each with its rules' expressions and userdata in order.
fn snapshot(family: Family, table: &str) -> String {
    let mut sock = NfSocket::open().expect("nfnetlink");
    let f = nfproto(family);
    let attrs = Body::default().str(1, table);
    let chains = sock.dump(NFT_MSG_GETCHAIN, f, attrs).unwrap_or_default();
    let chains: Vec<Vec<u8>> = chains
        .into_iter()
        .filter(|c| wire::find(c, 1).map(wire::as_str).as_deref() == Some(table))
        .collect();
    let rules = sock
        .dump(NFT_MSG_GETRULE, f, Body::default().str(1, table))
        .unwrap_or_default();
    let mut out = String::new();
    for chain in chains {
        let name = wire::find(&chain, 3).map(wire::as_str).unwrap_or_default();
        let _ = writeln!(out, "chain {name}");
        for (ty, payload) in wire::attrs(&chain) {
            // NFTA_CHAIN_TABLE, _HANDLE, _NAME, _COUNTERS: names and ids.
            if matches!(ty, 1 | 2 | 3 | 8) {
                continue;
            }
            let _ = writeln!(out, "  {ty}={}", hex(payload));
        }
        for rule in rules
            .iter()
            .filter(|r| wire::find(r, 2).map(wire::as_str).as_deref() == Some(name.as_str()))
        {
            let _ = writeln!(out, "  rule");
            for (ty, payload) in wire::attrs(rule) {
                match ty {
                    // NFTA_RULE_EXPRESSIONS
                    4 => {
                        for (_, e) in wire::attrs(payload) {
                            let ename = wire::find(e, 1).map(wire::as_str).unwrap_or_default();
                            let _ = writeln!(out, "    {ename}");
                            if ename == "counter" {
                                continue;
                            }
                            let data = wire::find(e, 2).unwrap_or_default();
                            let nested = |t: u16| {
                                matches!(
                                    (ename.as_str(), t),
                                    ("cmp", 3) | ("bitwise", 4 | 5) | ("immediate", 2)
                                )
                            };
                            attrs_text(&mut out, data, 3, &nested);
                        }
                    }
                    // Table, chain, handle, position: names and ids.
                    1 | 2 | 3 | 6 => {}
                    other => {
                        let _ = writeln!(out, "    attr {other}={}", hex(payload));
                    }
                }
            }
        }
    }
    out
}

/// `snapshot` in the namespace at `path`.
fn snapshot_in(path: &str, family: Family, table: &'static str) -> String {
    in_netns(Some(path), move || snapshot(family, table))
}

/// Feeds `input` to `<iptables|ip6tables>-nft-restore --noflush` in `netns`.
fn nft_restore(netns: &str, family: Family, input: &str) {
    let tool = match family {
        Family::V4 => "iptables-nft-restore",
        Family::V6 => "ip6tables-nft-restore",
    };
    let mut child = Command::new("nsenter")
        .args([&format!("--net={netns}"), tool, "--noflush", "--wait"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("restore");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(input.as_bytes())
        .expect("write");
    let out = child.wait_with_output().expect("wait");
    assert!(
        out.status.success(),
        "{tool} failed: {}\n{input}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// `<iptables|ip6tables>-nft-save -t table` in `netns`.
fn nft_save(netns: &str, family: Family, table: &str) -> String {
    let tool = match family {
        Family::V4 => "iptables-nft-save",
        Family::V6 => "ip6tables-nft-save",
    };
    let out = Command::new("nsenter")
        .args([&format!("--net={netns}"), tool, "-t", table])
        .output()
        .expect("save");
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter(|l| !l.starts_with('#'))
        .collect::<Vec<_>>()
        .join("\n")
}

/// Runs `ours` in namespace `b` (panicking on its error).
fn ours(b: &Netns, f: impl FnOnce() -> cni_multi::netfilter::Result<()> + Send + 'static) {
    in_netns(Some(b.path()), f).unwrap_or_else(|e| panic!("netlink path: {e}"));
}

/// The two namespaces' tables are the same, over netlink and as iptables-save prints them.
fn assert_same(a: &Netns, b: &Netns, family: Family, table: &'static str, what: &str) {
    let (ta, tb) = (
        snapshot_in(a.path(), family, table),
        snapshot_in(b.path(), family, table),
    );
    assert!(!ta.is_empty(), "{what}: nothing written");
    assert_eq!(
        ta, tb,
        "{what} ({family:?}): iptables-nft (left) and ours (right) differ"
    );
    assert_eq!(
        nft_save(a.path(), family, table),
        nft_save(b.path(), family, table),
        "{what} ({family:?})"
    );
}

mod masq {
    use super::*;
    use cni_multi::netfilter::iptables::Saved;
    use cni_multi::netfilter::masq::{Plan, iptables as ipt, xtnft};

    fn plan(id: &str, addresses: &[&str]) -> Plan {
        let ips: Vec<ipnet::IpNet> = addresses.iter().map(|a| a.parse().expect("net")).collect();
        Plan::new("masq-net", id, "eth0", &ips)
    }

    /// ADD by iptables-nft-restore (the legacy path's text) in `a`, by our
    /// batch in `b`; with `saved`, the text is the one built from `a`'s
    /// table as saved (a repeated ADD), else from an empty one.
    fn add_both(a: &Netns, b: &Netns, p: &Plan, family: Family) {
        let saved = Saved::parse(&nft_save(a.path(), family, "nat"));
        let text = ipt::add_batch(p, family, &saved).render().expect("render");
        nft_restore(a.path(), family, &text);
        let (p, f) = (p.clone(), family);
        ours(b, move || xtnft::add(&p, f));
    }

    #[test]
    fn ipmasq_rules_are_iptables_nfts_bytes_in_both_families_and_deletes_cross() {
        enter_test_host();
        for (family, first, second) in [
            (
                Family::V4,
                vec!["10.31.0.5/24"],
                vec!["10.31.0.6/24", "10.32.7.6/12"],
            ),
            (
                Family::V6,
                vec!["fd31::5/64"],
                vec!["fd31::6/64", "fd32::7:6/60"],
            ),
        ] {
            let (a, b) = (Netns::new(), Netns::new());
            // The first attachment on an empty table: table, POSTROUTING
            // and the container's chain made; then a second one with two
            // addresses (one network's prefix ends inside a byte).
            let p1 = plan("ctr-1", &first);
            add_both(&a, &b, &p1, family);
            assert_same(&a, &b, family, "nat", "first ADD");
            let p2 = plan("ctr-2", &second);
            add_both(&a, &b, &p2, family);
            assert_same(&a, &b, family, "nat", "second ADD");
            // A repeated ADD rewrites the chain and adds no second jump.
            add_both(&a, &b, &p2, family);
            assert_same(&a, &b, family, "nat", "repeated ADD");
            // Crossed deletes: ours of iptables' rules in `a`, iptables'
            // delete-by-spec (the reference's DEL) of ours in `b`.
            for p in [&p1, &p2] {
                let (p, f) = (p.clone(), family);
                let text = ipt::quick_del(
                    &p,
                    f,
                    &p.addresses
                        .iter()
                        .map(|ip| {
                            (
                                ip.addr(),
                                cni_multi::netfilter::attachment_comment(
                                    &p.network,
                                    &p.container_id,
                                ),
                            )
                        })
                        .collect::<Vec<_>>(),
                )
                .render()
                .expect("render");
                nft_restore(b.path(), f, &text);
                ours(&a, move || xtnft::del(&p, f));
            }
            assert_same(&a, &b, family, "nat", "after both DELs");
            let left = nft_save(a.path(), family, "nat");
            assert!(!left.contains("CNI-"), "{left}");
        }
    }
}

mod portmap {
    use super::*;
    use cni_multi::netfilter::iptables::Saved;
    use cni_multi::netfilter::portmap::{Mapping, Plan, Target, iptables as ipt, xtnft};

    fn mapping(host_port: u16, container_port: u16, protocol: &str, host_ip: &str) -> Mapping {
        Mapping {
            host_port,
            container_port,
            protocol: protocol.into(),
            host_ip: (!host_ip.is_empty()).then(|| host_ip.parse().expect("ip")),
        }
    }

    fn plan(id: &str, address: &str, mappings: Vec<Mapping>) -> Plan {
        let mut p = Plan::named("pm-net", id);
        p.mappings = mappings;
        p.targets = vec![Target {
            address: address.parse().expect("net"),
        }];
        p
    }

    /// ADD by iptables-nft-restore of the legacy path's text (built from
    /// `a`'s table as saved) in `a`, by our batch in `b`.
    fn add_both(a: &Netns, b: &Netns, p: &Plan) {
        let target = p.targets[0].clone();
        let family = Family::of(target.address.addr());
        let saved = Saved::parse(&nft_save(a.path(), family, "nat"));
        let batch = ipt::add_batch(p, family, &target, &saved);
        nft_restore(a.path(), family, &batch.render().expect("render"));
        let p = p.clone();
        ours(b, move || xtnft::add(&p, family, &target));
    }

    /// Crossed DELs: iptables' delete-by-spec of ours in `b` (the DEL the
    /// legacy path writes from the mappings), ours of iptables' in `a`.
    fn del_both(a: &Netns, b: &Netns, p: &Plan) {
        let family = Family::of(p.targets[0].address.addr());
        let text = ipt::known_del_batch(p, family).render().expect("render");
        nft_restore(b.path(), family, &text);
        let p = p.clone();
        ours(a, move || xtnft::del(&p, family));
    }

    fn cases(family: Family) -> Vec<(&'static str, Plan)> {
        let (ip, other_ip, host_ip, other_host) = match family {
            Family::V4 => ("10.40.0.5/24", "10.40.0.6/24", "192.0.2.1", "2001:db8::1"),
            Family::V6 => ("fd40::5/64", "fd40::6/64", "2001:db8::1", "192.0.2.1"),
        };
        let mut cases = vec![
            (
                "tcp and udp, a hostIP of each family (first on an empty table)",
                plan(
                    "ctr-1",
                    ip,
                    vec![
                        mapping(8080, 80, "tcp", ""),
                        mapping(5353, 53, "udp", ""),
                        mapping(8443, 443, "tcp", host_ip),
                        mapping(9443, 443, "tcp", other_host),
                    ],
                ),
            ),
            (
                "sctp, and 17 tcp ports (two multiport rules)",
                plan(
                    "ctr-2",
                    other_ip,
                    (0..17)
                        .map(|i| mapping(9000 + i, 80, "tcp", ""))
                        .chain([mapping(7777, 77, "sctp", "")])
                        .collect(),
                ),
            ),
        ];
        let mut masq_all = plan("ctr-3", ip, vec![mapping(8081, 81, "tcp", "")]);
        masq_all.masq_all = true;
        cases.push(("masqAll", masq_all));
        let mut no_snat = plan("ctr-4", ip, vec![mapping(8082, 82, "udp", "")]);
        no_snat.snat = false;
        cases.push(("snat off", no_snat));
        let mut external = plan("ctr-5", ip, vec![mapping(8083, 83, "tcp", "")]);
        external.external_mark_chain = Some("MY-MARK".into());
        cases.push(("externalSetMarkChain", external));
        let mut bit = plan("ctr-6", ip, vec![mapping(8084, 84, "tcp", "")]);
        bit.mark_bit = 5;
        cases.push(("another markMasqBit", bit));
        cases
    }

    #[test]
    fn portmap_rules_are_iptables_nfts_bytes_in_both_families_and_deletes_cross() {
        enter_test_host();
        for family in [Family::V4, Family::V6] {
            let (a, b) = (Netns::new(), Netns::new());
            for ns in [&a, &b] {
                nft_restore(ns.path(), family, "*nat\n-N MY-MARK\nCOMMIT\n");
            }
            let cases = cases(family);
            for (what, p) in &cases {
                add_both(&a, &b, p);
                assert_same(&a, &b, family, "nat", what);
            }
            // A repeated ADD (other mappings): the old entries go, the chain is rewritten.
            let (_, first) = &cases[0];
            let mut again = first.clone();
            again.mappings.truncate(1);
            add_both(&a, &b, &again);
            assert_same(&a, &b, family, "nat", "repeated ADD");
            for (what, p) in cases.iter().skip(1).rev() {
                del_both(&a, &b, p);
                assert_same(&a, &b, family, "nat", &format!("DEL of {what}"));
            }
            del_both(&a, &b, &again);
            assert_same(&a, &b, family, "nat", "the last DEL");
            let left = nft_save(a.path(), family, "nat");
            assert!(!left.contains("CNI-DN-"), "{left}");
        }
    }
}

mod firewall {
    use super::*;
    use cni_multi::netfilter::firewall::{IngressPolicy, Plan, iptables as ipt, xtnft};
    use cni_multi::netfilter::iptables::Saved;
    use ipnet::IpNet;

    fn plan(id: &str, addresses: &[&str], policy: IngressPolicy, bridge: &str) -> Plan {
        Plan {
            container_id: id.into(),
            addresses: addresses.iter().map(|a| a.parse().expect("net")).collect(),
            admin_chain: "CNI-ADMIN".into(),
            policy,
            bridge: bridge.into(),
            zone: String::new(),
        }
    }

    fn mine(p: &Plan, family: Family) -> Vec<IpNet> {
        p.addresses
            .iter()
            .filter(|ip| Family::of(ip.addr()) == family)
            .copied()
            .collect()
    }

    fn add_both(a: &Netns, b: &Netns, p: &Plan, family: Family) {
        let saved = Saved::parse(&nft_save(a.path(), family, "filter"));
        let addrs = mine(p, family);
        let refs: Vec<&IpNet> = addrs.iter().collect();
        let text = ipt::add_batch(p, family, &refs, &saved)
            .render()
            .expect("render");
        nft_restore(a.path(), family, &text);
        let p = p.clone();
        ours(b, move || {
            let refs: Vec<&IpNet> = addrs.iter().collect();
            xtnft::add(&p, family, &refs)
        });
    }

    fn check_in(ns: &Netns, p: &Plan, family: Family) -> cni_multi::netfilter::Result<()> {
        let (p, addrs) = (p.clone(), mine(p, family));
        in_netns(Some(ns.path()), move || {
            let refs: Vec<&IpNet> = addrs.iter().collect();
            xtnft::check(&p, family, &refs, &[])
        })
    }

    #[test]
    fn firewall_rules_are_iptables_nfts_bytes_in_both_families_and_deletes_cross() {
        enter_test_host();
        for (family, ips) in [
            (Family::V4, ["10.50.0.5/24", "10.50.0.6/24", "10.51.0.7/24"]),
            (Family::V6, ["fd50::5/64", "fd50::6/64", "fd51::7/64"]),
        ] {
            let (a, b) = (Netns::new(), Netns::new());
            let plans = [
                (
                    "open, on an empty table",
                    plan("c1", &ips[..1], IngressPolicy::Open, ""),
                ),
                (
                    "same-bridge",
                    plan("c2", &ips[1..2], IngressPolicy::SameBridge, "cni-fw0"),
                ),
                (
                    "isolated, another bridge",
                    plan("c3", &ips[2..], IngressPolicy::Isolated, "cni-fw1"),
                ),
                // The first bridge isolated now: its leave rule is there
                // (with the other policy's comment), its drop is not.
                (
                    "isolated, the first bridge",
                    plan("c4", &ips[..1], IngressPolicy::Isolated, "cni-fw0"),
                ),
            ];
            for (what, p) in &plans {
                add_both(&a, &b, p, family);
                assert_same(&a, &b, family, "filter", what);
            }
            for ns in [&a, &b] {
                for (what, p) in &plans {
                    check_in(ns, p, family).unwrap_or_else(|e| panic!("CHECK {what}: {e}"));
                }
            }
            for (what, p) in plans.iter().skip(1) {
                let addrs = mine(p, family);
                let refs: Vec<&IpNet> = addrs.iter().collect();
                let text = ipt::known_del_batch(family, &refs)
                    .render()
                    .expect("render");
                nft_restore(b.path(), family, &text);
                ours(&a, move || {
                    let refs: Vec<&IpNet> = addrs.iter().collect();
                    xtnft::del(family, &refs)
                });
                assert_same(&a, &b, family, "filter", &format!("DEL of {what}"));
            }
            // The first address is gone with c4's DEL: CHECK says which rule.
            let e = check_in(&a, &plans[0].1, family).expect_err("deleted");
            assert!(e.to_string().contains("is missing"), "{e}");
        }
    }

    /// The firewalld target's isolation stages alone, on an empty table.
    #[test]
    fn isolation_stages_alone_are_iptables_nfts_bytes() {
        enter_test_host();
        for (family, ip) in [(Family::V4, "10.52.0.5/24"), (Family::V6, "fd52::5/64")] {
            let (a, b) = (Netns::new(), Netns::new());
            let p = plan("c1", &[ip], IngressPolicy::Isolated, "cni-fw2");
            let saved = Saved::parse(&nft_save(a.path(), family, "filter"));
            let text = ipt::isolate_batch(&p, family, &saved)
                .render()
                .expect("render");
            nft_restore(a.path(), family, &text);
            ours(&b, move || xtnft::isolate(&p, family));
            assert_same(&a, &b, family, "filter", "isolation stages");
        }
    }
}

/// What one ADD and one DEL read does not grow with the node: the bytes an
/// ADD and a DEL of bridge (ipMasq, dual stack) + portmap receive on their
/// nfnetlink sockets are the same beside 10 and beside 500 other
/// attachments (their chains, POSTROUTING jumps and CNI-HOSTPORT-DNAT
/// entries), counted by strace: no dump of POSTROUTING, CNI-HOSTPORT-DNAT
/// or a table.
mod scale {
    use super::*;
    use cni_multi::netfilter::iptables::Saved;
    use cni_multi::netfilter::{masq, portmap};
    use harness::{Outcome, Runtime, run_in};
    use serde_json::json;

    /// The test host's namespace (the calling thread's).
    fn host() -> String {
        format!(
            "/proc/{}/task/{}/ns/net",
            std::process::id(),
            nix::unistd::gettid()
        )
    }

    /// `count` attachments' ipMasq and portmap rules (both families), as the
    /// legacy path writes them, in one restore per family; `first` numbers them.
    pub fn fabricate(first: usize, count: usize) {
        for family in [Family::V4, Family::V6] {
            let mut lines = Vec::new();
            for i in first..first + count {
                let (ip, net) = match family {
                    Family::V4 => (format!("10.60.{}.{}", i / 250, i % 250 + 2), "/16"),
                    Family::V6 => (format!("fd60::{:x}", i + 2), "/64"),
                };
                let addr: ipnet::IpNet = format!("{ip}{net}").parse().expect("net");
                let id = format!("fake-{i:05}");
                let m = masq::Plan::new("scale-net", &id, "eth0", &[addr]);
                let mut batches = vec![masq::iptables::add_batch(&m, family, &Saved::default())];
                let mut p = portmap::Plan::named("scale-net", &id);
                p.mappings = vec![portmap::Mapping {
                    host_port: 20000 + i as u16,
                    container_port: 80,
                    protocol: "tcp".into(),
                    host_ip: None,
                }];
                let target = portmap::Target { address: addr };
                p.targets = vec![target.clone()];
                batches.push(portmap::iptables::known_add_batch(
                    &p,
                    family,
                    &target,
                    first == 0 && i == 0,
                ));
                for b in batches {
                    let text = b.render().expect("render");
                    lines.extend(
                        text.lines()
                            .filter(|l| *l != "*nat" && *l != "COMMIT")
                            .map(String::from),
                    );
                }
            }
            let input = format!("*nat\n{}\nCOMMIT\n", lines.join("\n"));
            nft_restore(&host(), family, &input);
        }
    }

    /// The bytes `verb` received on nfnetlink sockets, all processes and
    /// threads summed (one strace file each, so no call is split).
    fn nfnetlink_bytes(net: &Runtime, verb: &str, ns: &Netns, caps: &serde_json::Value) -> u64 {
        traced(net, verb, ns, caps, "trace=recvfrom,recvmsg")
            .iter()
            .flat_map(|text| text.lines())
            .filter(|l| l.contains("<NETLINK:[NETFILTER:"))
            .filter_map(|l| {
                let (_, n) = l.rsplit_once(") = ")?;
                n.trim().parse::<u64>().ok()
            })
            .sum()
    }

    /// The strace logs (one per process and thread) of `verb` with `calls` traced.
    fn traced(
        net: &Runtime,
        verb: &str,
        ns: &Netns,
        caps: &serde_json::Value,
        calls: &str,
    ) -> Vec<String> {
        let dir = net.conf.0.join(format!(
            "{verb}-{}-{}",
            ns.path().replace('/', "_"),
            calls.replace([',', '='], "_")
        ));
        std::fs::create_dir_all(&dir).expect("strace dir");
        let cnitool = net.command(&[verb, "scale-net", ns.path()], caps, None);
        let mut traced = Command::new("strace");
        traced
            .args(["-f", "-ff", "-qq", "-yy", "-e", calls, "-o"])
            .arg(dir.join("t"))
            .arg(cnitool.get_program())
            .args(cnitool.get_args())
            .env_clear()
            .envs(cnitool.get_envs().filter_map(|(k, v)| Some((k, v?))))
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        Outcome::of(traced.spawn().expect("strace")).ok();
        std::fs::read_dir(&dir)
            .expect("strace files")
            .flatten()
            .map(|file| std::fs::read_to_string(file.path()).expect("strace log"))
            .collect()
    }

    #[test]
    fn an_add_and_a_del_read_as_much_beside_500_attachments_as_beside_10() {
        enter_test_host();
        if !run_in(None, "iptables", &["--version"]).contains("nf_tables") {
            harness::skip(
                "an_add_and_a_del_read_as_much_beside_500_attachments_as_beside_10",
                "iptables is not the nf_tables flavour",
            );
            return;
        }
        let net = Runtime::new("scale");
        net.write_list(
            "scale.conflist",
            &json!({"cniVersion": "1.0.0", "name": "scale-net", "plugins": [
                {"type": "bridge", "bridge": "cni-sc0", "isGateway": true, "ipMasq": true,
                 "ipMasqBackend": "iptables",
                 "ipam": {"type": "host-local", "dataDir": "@STORE@", "ranges": [
                     [{"subnet": "10.61.0.0/24"}], [{"subnet": "fd61::/64"}]]}},
                {"type": "portmap", "capabilities": {"portMappings": true}, "snat": true,
                 "backend": "iptables"}]}),
        );
        // TCP only: a UDP mapping's conntrack flush reads conntrack entries.
        let caps =
            json!({"portMappings": [{"hostPort": 8090, "containerPort": 80, "protocol": "tcp"}]});
        let mut read = Vec::new();
        for (first, count) in [(0, 10), (10, 490)] {
            fabricate(first, count);
            let ns = Netns::new();
            let add = nfnetlink_bytes(&net, "add", &ns, &caps);
            let del = nfnetlink_bytes(&net, "del", &ns, &caps);
            assert!(add > 0 && del > 0, "nothing read: {add} {del}");
            read.push((add, del));
        }
        assert_eq!(
            read[0], read[1],
            "(ADD, DEL) bytes beside 10, then beside 500"
        );
        let table = nft_save(&host(), Family::V4, "nat");
        assert_eq!(
            table.matches(":CNI-DN-").count(),
            500,
            "only the fabricated ones are left"
        );
    }

    /// `count` attachments' firewall address rules in CNI-FORWARD (both
    /// families), with the chains and jumps the first ADD makes, as
    /// iptables-nft-restore writes them; `first` numbers them.
    fn fabricate_firewall(first: usize, count: usize) {
        for family in [Family::V4, Family::V6] {
            let mut lines = vec!["*filter".to_string()];
            if first == 0 {
                lines.extend([
                    ":CNI-FORWARD - [0:0]".to_string(),
                    ":CNI-ADMIN - [0:0]".to_string(),
                    "-I FORWARD 1 -m comment --comment \"CNI firewall plugin rules\" -j CNI-FORWARD"
                        .to_string(),
                    "-A CNI-FORWARD -m comment --comment \"CNI firewall plugin admin overrides\" -j CNI-ADMIN"
                        .to_string(),
                ]);
            }
            for i in first..first + count {
                let host = match family {
                    Family::V4 => format!("10.62.{}.{}/32", i / 250, i % 250 + 2),
                    Family::V6 => format!("fd62::{:x}/128", i + 2),
                };
                lines.push(format!(
                    "-A CNI-FORWARD -d {host} -m conntrack --ctstate RELATED,ESTABLISHED -j ACCEPT"
                ));
                lines.push(format!("-A CNI-FORWARD -s {host} -j ACCEPT"));
            }
            lines.push("COMMIT\n".to_string());
            nft_restore(&host(), family, &lines.join("\n"));
        }
    }

    /// The firewall's ADD, CHECK and DEL on iptables-nft find the
    /// attachment's rules by handle: beside 10 and beside 500 other
    /// attachments' rules in CNI-FORWARD they read the same nfnetlink bytes,
    /// send the same dump requests, and exec nothing but the plugins.
    #[test]
    fn a_firewall_add_check_and_del_read_as_much_beside_500_attachments_as_beside_10() {
        enter_test_host();
        let name = "a_firewall_add_check_and_del_read_as_much_beside_500_attachments_as_beside_10";
        if !run_in(None, "iptables", &["--version"]).contains("nf_tables") {
            harness::skip(name, "iptables is not the nf_tables flavour");
            return;
        }
        let net = Runtime::new("fwscale");
        net.write_list(
            "fwscale.conflist",
            &json!({"cniVersion": "1.0.0", "name": "scale-net", "plugins": [
                {"type": "bridge", "bridge": "cni-fs0",
                 "ipam": {"type": "host-local", "dataDir": "@STORE@", "ranges": [
                     [{"subnet": "10.63.0.0/24"}], [{"subnet": "fd63::/64"}]]}},
                {"type": "firewall", "backend": "iptables", "dataDir": "@STORE@/fw"}]}),
        );
        let caps = json!({});
        let dumps = |logs: &[String]| {
            logs.iter()
                .flat_map(|t| t.lines())
                .filter(|l| l.contains("<NETLINK:[NETFILTER:") && l.contains("NLM_F_DUMP"))
                .count()
        };
        let execs = |logs: &[String]| {
            let mut progs: Vec<String> = logs
                .iter()
                .flat_map(|t| t.lines())
                .filter(|l| {
                    l.starts_with("execve(")
                        && !l.ends_with("= -1 ENOENT (No such file or directory)")
                })
                .filter_map(|l| l.split('"').nth(1).map(String::from))
                .filter_map(|p| p.rsplit('/').next().map(String::from))
                .collect();
            progs.sort();
            progs
        };
        let mut read = Vec::new();
        for (first, count) in [(0, 10), (10, 490)] {
            fabricate_firewall(first, count);
            let ns = Netns::new();
            let bytes = [
                nfnetlink_bytes(&net, "add", &ns, &caps),
                nfnetlink_bytes(&net, "check", &ns, &caps),
                nfnetlink_bytes(&net, "del", &ns, &caps),
            ];
            let ns = Netns::new();
            let mut seen = Vec::new();
            for (verb, bytes) in ["add", "check", "del"].into_iter().zip(bytes) {
                let logs = traced(&net, verb, &ns, &caps, "trace=execve,sendto,sendmsg");
                let accepts = nft_save(&host(), Family::V4, "filter")
                    .matches("-j ACCEPT")
                    .count();
                let added = usize::from(verb != "del") * 2;
                assert_eq!(accepts, 2 * (first + count) + added, "after {verb}");
                let progs = execs(&logs);
                assert!(
                    progs.iter().all(|p| !p.contains("tables")),
                    "{verb} ran {progs:?}"
                );
                seen.push((bytes, dumps(&logs), progs));
            }
            assert!(seen.iter().all(|s| s.0 > 0), "nothing read: {seen:?}");
            read.push(seen);
        }
        assert_eq!(
            read[0], read[1],
            "[(bytes, dump requests, execs) of ADD, CHECK, DEL] beside 10, then beside 500"
        );
        let table = nft_save(&host(), Family::V4, "filter");
        assert_eq!(
            table.matches("-j ACCEPT").count(),
            1000,
            "only the fabricated ones are left: {table}"
        );
    }
}

/// What one CHECK reads does not grow with the node either: ipMasq's and
/// portmap's CHECK of one attachment (both families, in a process of its
/// own under strace) send the same nfnetlink requests (dumps among them)
/// and read the same bytes beside 10 and beside 500 other attachments, and
/// exec nothing (no iptables-save). A CHECK still sees a rule go.
mod check_scale {
    use super::*;
    use cni_multi::netfilter::{Backend, masq, portmap};
    use harness::{TempDir, run_in};

    /// The probe attachment beside `size` others: ipMasq and a TCP mapping
    /// in both families (same lengths of names and comments at each size).
    fn probe(size: usize) -> (masq::Plan, portmap::Plan) {
        let addrs: Vec<ipnet::IpNet> = [
            format!("10.60.200.{}/16", size % 250 + 2),
            format!("fd60::ff:{:x}/64", size + 2),
        ]
        .iter()
        .map(|a| a.parse().expect("net"))
        .collect();
        let id = format!("probe-{size:05}");
        let m = masq::Plan::new("scale-net", &id, "eth0", &addrs);
        let mut p = portmap::Plan::named("scale-net", &id);
        p.mappings = vec![portmap::Mapping {
            host_port: 8095,
            container_port: 80,
            protocol: "tcp".into(),
            host_ip: None,
        }];
        p.targets = addrs
            .iter()
            .map(|a| portmap::Target { address: *a })
            .collect();
        (m, p)
    }

    /// Run by `a_check_reads_as_much_...` in a process of its own: the CHECK
    /// of the probe in the namespace it names.
    #[test]
    #[ignore = "a child of a_check_reads_as_much_beside_500_attachments_as_beside_10"]
    fn check_probe() {
        let (Ok(host), Ok(size)) = (
            std::env::var("XTNFT_CHECK_HOST"),
            std::env::var("XTNFT_CHECK_SIZE"),
        ) else {
            return;
        };
        let (m, p) = probe(size.parse().expect("size"));
        in_netns(Some(&host), move || {
            masq::check(Backend::IPTABLES, &m).expect("ipMasq CHECK");
            portmap::check(Backend::IPTABLES, &p).expect("portmap CHECK");
        });
    }

    /// What [`check_probe`] asked nf_tables for and read, and the programs run.
    #[derive(Debug, PartialEq)]
    struct Cost {
        requests: usize,
        dumps: usize,
        bytes: u64,
        execs: Vec<String>,
    }

    /// This module's path as the test harness names tests (no crate name).
    fn test_path() -> &'static str {
        module_path!()
            .split_once("::")
            .map_or(module_path!(), |(_, rest)| rest)
    }

    fn check_cost(host: &str, size: usize) -> Cost {
        let dir = TempDir::new("xtnft-check");
        let exe = std::env::current_exe().expect("test binary");
        let out = Command::new("strace")
            .args(["-f", "-ff", "-qq", "-yy", "-s", "32", "-e"])
            .arg("trace=execve,sendto,sendmsg,recvfrom,recvmsg")
            .arg("-o")
            .arg(dir.0.join("t"))
            .arg(&exe)
            .arg(format!("{}::check_probe", test_path()))
            .args(["--exact", "--ignored"])
            .args(["--test-threads=1", "--nocapture"])
            .env("XTNFT_CHECK_HOST", host)
            .env("XTNFT_CHECK_SIZE", size.to_string())
            .stdin(Stdio::null())
            .output()
            .expect("strace");
        assert!(
            out.status.success(),
            "CHECK beside {size}: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        let mut cost = Cost {
            requests: 0,
            dumps: 0,
            bytes: 0,
            execs: Vec::new(),
        };
        for file in std::fs::read_dir(&dir.0).expect("strace files").flatten() {
            let text = std::fs::read_to_string(file.path()).expect("strace log");
            for l in text.lines() {
                if l.starts_with("execve(") && !l.contains("= -1") {
                    cost.execs.extend(l.split('"').nth(1).map(String::from));
                }
                if !l.contains("<NETLINK:[NETFILTER:") {
                    continue;
                }
                if l.starts_with("recv") {
                    let n = l
                        .rsplit_once(") = ")
                        .and_then(|(_, n)| n.trim().parse().ok());
                    cost.bytes += n.unwrap_or(0);
                } else {
                    cost.requests += 1;
                    cost.dumps += usize::from(l.contains("NLM_F_DUMP"));
                }
            }
        }
        cost
    }

    #[test]
    fn a_check_reads_as_much_beside_500_attachments_as_beside_10() {
        enter_test_host();
        if !run_in(None, "iptables", &["--version"]).contains("nf_tables") {
            harness::skip(
                "a_check_reads_as_much_beside_500_attachments_as_beside_10",
                "iptables is not the nf_tables flavour",
            );
            return;
        }
        let host = format!(
            "/proc/{}/task/{}/ns/net",
            std::process::id(),
            nix::unistd::gettid()
        );
        let exe = std::env::current_exe().expect("test binary");
        let mut costs = Vec::new();
        for (first, count) in [(0, 10), (10, 490)] {
            scale::fabricate(first, count);
            let (m, p) = probe(first + count);
            masq::add(Backend::IPTABLES, &m).expect("ipMasq ADD");
            portmap::add(Backend::IPTABLES, &p).expect("portmap ADD");
            let cost = check_cost(&host, first + count);
            assert_eq!(cost.execs, [exe.to_string_lossy()], "CHECK ran a process");
            assert!(cost.dumps <= 4, "{cost:?}");
            eprintln!("CHECK beside {}: {cost:?}", first + count);
            costs.push(cost);
            masq::del(Backend::IPTABLES, &m).expect("ipMasq DEL");
            portmap::del(Backend::IPTABLES, &p).expect("portmap DEL");
        }
        assert_eq!(costs[0], costs[1], "CHECK beside 10, then beside 500");
    }

    /// CHECK over netlink still sees a jump or a DNAT go.
    #[test]
    fn check_over_netlink_sees_a_rule_go() {
        enter_test_host();
        if !run_in(None, "iptables", &["--version"]).contains("nf_tables") {
            harness::skip(
                "check_over_netlink_sees_a_rule_go",
                "iptables is not the nf_tables flavour",
            );
            return;
        }
        let (m, p) = probe(7);
        masq::add(Backend::IPTABLES, &m).expect("ipMasq ADD");
        portmap::add(Backend::IPTABLES, &p).expect("portmap ADD");
        masq::check(Backend::IPTABLES, &m).expect("ipMasq CHECK");
        portmap::check(Backend::IPTABLES, &p).expect("portmap CHECK");
        let chain = cni_multi::netfilter::chain_name("", "scale-net", "probe-00007");
        let jump = format!(
            "-s 10.60.200.9/32 -m comment --comment \"name: \\\"scale-net\\\" id: \\\"probe-00007\\\"\" -j {chain}"
        );
        let saved = run_in(None, "iptables-save", &["-t", "nat"]);
        assert!(saved.contains(&jump), "{jump}\n{saved}");
        let args: Vec<String> = ["-t", "nat", "-D", "POSTROUTING"]
            .iter()
            .map(|s| s.to_string())
            .chain(shell_words(&jump))
            .collect();
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        run_in(None, "iptables", &args);
        let e = masq::check(Backend::IPTABLES, &m).expect_err("jump gone");
        assert!(
            e.to_string()
                .contains("no POSTROUTING jump from 10.60.200.9"),
            "{e}"
        );
        let dn = p.dnat_chain();
        run_in(None, "ip6tables", &["-t", "nat", "-F", &dn]);
        let e = portmap::check(Backend::IPTABLES, &p).expect_err("DNAT gone");
        assert!(e.to_string().contains("no rule for tcp port 8095"), "{e}");
    }

    /// A saved rule's words, its quoted comment one word without the quotes.
    fn shell_words(spec: &str) -> Vec<String> {
        let mut out = Vec::new();
        let (mut word, mut quoted, mut escaped) = (String::new(), false, false);
        for c in spec.chars() {
            match c {
                _ if escaped => {
                    word.push(c);
                    escaped = false;
                }
                '\\' => escaped = true,
                '"' => quoted = !quoted,
                ' ' if !quoted => out.extend((!word.is_empty()).then(|| std::mem::take(&mut word))),
                _ => word.push(c),
            }
        }
        out.extend((!word.is_empty()).then_some(word));
        out
    }
}

/// The whole-table readers (GC, the doctor) read the tables over netlink on
/// the nf_tables flavour: what they get is what `iptables-save` prints, rule
/// for rule, for every shape the plugins (ours and iptables-nft's restore of
/// the legacy path's text) write; a rule of ours of another shape makes
/// them fall back to the tool, another writer's is left out.
mod save {
    use super::*;
    use cni_multi::netfilter::firewall::{self, IngressPolicy};
    use cni_multi::netfilter::iptables::Saved;
    use cni_multi::netfilter::{Backend, Flavour, masq, portmap, xtnft};
    use harness::run_in;

    fn saved(family: Family, table: &str) -> Saved {
        let tool = match family {
            Family::V4 => "iptables-save",
            Family::V6 => "ip6tables-save",
        };
        Saved::parse(&run_in(None, tool, &["-t", table]))
    }

    #[test]
    fn a_table_read_over_netlink_is_what_iptables_save_prints() {
        enter_test_host();
        if !run_in(None, "iptables", &["--version"]).contains("nf_tables") {
            harness::skip(
                "a_table_read_over_netlink_is_what_iptables_save_prints",
                "iptables is not the nf_tables flavour",
            );
            return;
        }
        scale::fabricate(0, 3);
        let addrs: Vec<ipnet::IpNet> = ["10.63.0.5/24", "fd63::5/64"]
            .iter()
            .map(|a| a.parse().expect("net"))
            .collect();
        let m = masq::Plan::new("save-net", "ctr-1", "eth0", &addrs);
        masq::add(Backend::IPTABLES, &m).expect("ipMasq ADD");
        let mut p = portmap::Plan::named("save-net", "ctr-1");
        let mapping = |host_port, protocol: &str, host_ip: Option<&str>| portmap::Mapping {
            host_port,
            container_port: 80,
            protocol: protocol.into(),
            host_ip: host_ip.map(|ip| ip.parse().expect("ip")),
        };
        p.mappings = vec![
            mapping(8096, "tcp", None),
            mapping(8097, "udp", Some("10.63.0.1")),
            mapping(8098, "tcp", Some("fd63::1")),
        ];
        p.targets = addrs
            .iter()
            .map(|a| portmap::Target { address: *a })
            .collect();
        portmap::add(Backend::IPTABLES, &p).expect("portmap ADD");
        let fw = firewall::Plan {
            container_id: "ctr-1".into(),
            addresses: addrs.clone(),
            admin_chain: "CNI-ADMIN".into(),
            policy: IngressPolicy::Isolated,
            bridge: "cni-sv0".into(),
            zone: String::new(),
        };
        for family in [Family::V4, Family::V6] {
            let mine: Vec<&ipnet::IpNet> = addrs
                .iter()
                .filter(|a| Family::of(a.addr()) == family)
                .collect();
            firewall::xtnft::add(&fw, family, &mine).expect("firewall ADD");
        }
        for family in [Family::V4, Family::V6] {
            for table in ["nat", "filter"] {
                let ours = xtnft::read_table(family, table)
                    .expect("netlink")
                    .expect("every rule printed");
                let theirs = saved(family, table);
                assert!(theirs.rules.len() > 5, "{family:?} {table}: {theirs:?}");
                assert_eq!(ours, theirs, "{family:?} {table}");
            }
        }
        // Another writer's shape: left out in its own chain, unreadable in ours.
        let limit = ["-m", "limit", "--limit", "1/s", "-j", "ACCEPT"];
        run_in(None, "iptables", &["-t", "nat", "-N", "OTHER"]);
        let other: Vec<&str> = ["-t", "nat", "-A", "OTHER"]
            .iter()
            .chain(&limit)
            .copied()
            .collect();
        run_in(None, "iptables", &other);
        let ours = xtnft::read_table(Family::V4, "nat").expect("netlink");
        let ours = ours.expect("another writer's chain left out");
        assert!(ours.has_chain("OTHER"));
        assert!(!ours.rules.iter().any(|(c, _)| c == "OTHER"), "{ours:?}");
        let chain = cni_multi::netfilter::chain_name("", "save-net", "ctr-1");
        let mixed: Vec<&str> = ["-t", "nat", "-A", &chain]
            .iter()
            .chain(&limit)
            .copied()
            .collect();
        run_in(None, "iptables", &mixed);
        assert!(
            xtnft::read_table(Family::V4, "nat")
                .expect("netlink")
                .is_none()
        );
        assert!(
            xtnft::saved(Flavour::Default, Family::V4, "nat")
                .expect("by the tool")
                .is_some_and(|s| s
                    .rules
                    .iter()
                    .any(|(c, r)| *c == chain && r.contains("limit")))
        );
    }
}

/// Against the reference itself (Debian's Go plugins in /usr/lib/cni): the
/// same ADD of bridge (ipMasq, dual stack) + portmap + firewall by cnitool,
/// with the same container ID, in two host namespaces, leaves byte for byte
/// the same nat and filter tables of both families (chains in the same
/// order), and each side's DEL leaves the same tables again.
mod reference {
    use super::*;
    use harness::{Outcome, Runtime, run_in};
    use serde_json::json;

    fn run(rt: &Runtime, host: &Netns, verb: &str, pod: &Netns, cni_path: &str) {
        let caps = json!({"portMappings": [
            {"hostPort": 8080, "containerPort": 80, "protocol": "tcp"},
            {"hostPort": 5353, "containerPort": 53, "protocol": "udp"}]});
        let cnitool = rt.command(
            &[
                verb,
                "ref-net",
                pod.path(),
                "--container-id",
                "ref-ctr",
                "--cni-path",
                cni_path,
            ],
            &caps,
            None,
        );
        let mut cmd = Command::new("nsenter");
        cmd.arg(format!("--net={}", host.path()))
            .arg(cnitool.get_program())
            .args(cnitool.get_args())
            .env_clear()
            .envs(cnitool.get_envs().filter_map(|(k, v)| Some((k, v?))))
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        Outcome::of(cmd.spawn().expect("cnitool")).ok();
    }

    #[test]
    fn an_add_leaves_the_references_tables_byte_for_byte() {
        enter_test_host();
        if !std::path::Path::new("/usr/lib/cni/portmap").exists() {
            harness::skip(
                "an_add_leaves_the_references_tables_byte_for_byte",
                "no reference plugins in /usr/lib/cni",
            );
            return;
        }
        if !run_in(None, "iptables", &["--version"]).contains("nf_tables") {
            harness::skip(
                "an_add_leaves_the_references_tables_byte_for_byte",
                "iptables is not the nf_tables flavour",
            );
            return;
        }
        let list = json!({"cniVersion": "1.0.0", "name": "ref-net", "plugins": [
            {"type": "bridge", "bridge": "cni-ref0", "isGateway": true, "ipMasq": true,
             "ipam": {"type": "host-local", "dataDir": "@STORE@", "ranges": [
                 [{"subnet": "10.62.0.0/24"}], [{"subnet": "fd62::/64"}]]}},
            {"type": "portmap", "capabilities": {"portMappings": true}, "snat": true},
            {"type": "firewall"}]});
        let (ours, theirs) = (Runtime::new("ref-ours"), Runtime::new("ref-go"));
        ours.write_list("ref.conflist", &list);
        theirs.write_list("ref.conflist", &list);
        let ours_path = ours.bin.0.to_string_lossy().into_owned();
        let (a, b) = (Netns::new(), Netns::new());
        let (pod_a, pod_b) = (Netns::new(), Netns::new());
        run(&theirs, &a, "add", &pod_a, "/usr/lib/cni");
        run(&ours, &b, "add", &pod_b, &ours_path);
        for family in [Family::V4, Family::V6] {
            assert_same(&a, &b, family, "nat", "ADD beside the reference's");
            assert_same(&a, &b, family, "filter", "ADD beside the reference's");
        }
        run(&theirs, &a, "del", &pod_a, "/usr/lib/cni");
        run(&ours, &b, "del", &pod_b, &ours_path);
        for family in [Family::V4, Family::V6] {
            assert_same(&a, &b, family, "nat", "DEL beside the reference's");
            assert_same(&a, &b, family, "filter", "DEL beside the reference's");
        }
    }
}

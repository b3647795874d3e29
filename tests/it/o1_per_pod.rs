//! What one ADD and one DEL read and write does not grow with the pods on the
//! node: each path's cost is traced (strace) at 10 and at 500 attachments
//! already there, and must be the same at both.
//!
//! - host-local: the store's files opened, read, written, listed and removed,
//!   as a sequence of events with the bytes moved;
//! - the nftables backends (portmap, ipMasq, firewall, macspoofchk): the
//!   nfnetlink dump requests sent and the bytes received.

use crate::harness;

use harness::{BIN, Call, TempDir, enter_test_host};
use serde_json::{Value, json};
use std::path::Path;
use std::process::{Command, Stdio};

/// `call` run under strace with `syscalls` traced (descriptors decoded,
/// strings cut at `strings` bytes, netlink messages decoded); the trace's
/// lines, process by process.
fn traced(call: &Call, syscalls: &str, strings: usize) -> (harness::Outcome, Vec<String>) {
    let dir = TempDir::new("o1-trace");
    let out = dir.0.join("trace");
    let mut cmd = Command::new("strace");
    // One file per process and thread: no call split by another's.
    cmd.args(["-ff", "-qq", "-yy", "-e", "signal=none"])
        .arg("-s")
        .arg(strings.to_string())
        .arg("-e")
        .arg(format!("trace={syscalls}"))
        .arg("-o")
        .arg(&out)
        .arg(BIN)
        .arg(&call.plugin)
        .env_clear()
        .envs(&call.env)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = cmd
        .spawn()
        .expect("strace (tests/install-deps.sh installs it)");
    if let Some(mut stdin) = child.stdin.take() {
        let _ = std::io::Write::write_all(&mut stdin, call.stdin.as_bytes());
    }
    let outcome = harness::Outcome::of(child);
    let mut files: Vec<_> = std::fs::read_dir(&dir.0)
        .expect("traces")
        .map(|e| e.expect("trace").path())
        .collect();
    // By pid: a process's threads and children in the order they started.
    files.sort_by_key(|p| (p.as_os_str().len(), p.clone()));
    let mut lines = Vec::new();
    for f in files {
        let text = std::fs::read_to_string(&f).expect("strace output");
        lines.extend(text.lines().map(String::from));
    }
    (outcome, lines)
}

// ---------------------------------------------------------------- host-local

const HL_SUBNET: &str = "10.77.0.0/16";
/// The measured pod gets the address after this one at every size.
const HL_LAST: &str = "10.77.200.9";

fn hl_conf(data_dir: &Path) -> String {
    json!({"cniVersion": "1.0.0", "name": "o1-net", "type": "bridge",
           "ipam": {"type": "host-local", "subnet": HL_SUBNET, "dataDir": data_dir}})
    .to_string()
}

fn hl_call(cmd: &str, id: &str, stdin: &str) -> Call {
    Call::new("host-local", cmd, "/run/netns/o1-ipam", stdin).set("CNI_CONTAINERID", id)
}

/// What one ADD and one DEL of a new pod do to the store's files with `pods`
/// attachments in it: each a list of `<syscall> <file> <result>` (the
/// store's path as `STORE`, the bytes moved as the result).
fn hl_costs(pods: u32) -> (Vec<String>, Vec<String>) {
    let dir = TempDir::new("o1-hl");
    let stdin = hl_conf(&dir.0);
    let store = dir.0.join("o1-net");
    std::fs::create_dir_all(&store).expect("store");
    // Written as the reference's host-local writes them (reading them is
    // what an index must spare).
    for i in 0..pods {
        let ip = format!("10.77.{}.{}", (i + 2) / 256, (i + 2) % 256);
        std::fs::write(store.join(ip), format!("pod-{i}\r\neth0")).expect("reservation");
    }
    std::fs::write(store.join("last_reserved_ip.0"), HL_LAST).expect("last reserved");
    // The first call after another writer has the index rebuilt.
    hl_call("DEL", "warm-up", &stdin).run().ok();
    let syscalls = "openat,read,pread64,write,pwrite64,getdents64,unlink,unlinkat,\
                    rename,renameat,renameat2,mkdir,mkdirat,rmdir,ftruncate,utimensat";
    let prefix = store.to_string_lossy().into_owned();
    let events = |lines: Vec<String>| -> Vec<String> {
        lines
            .into_iter()
            .filter(|l| l.contains(&prefix))
            .map(|l| l.replace(&prefix, "STORE"))
            .collect()
    };
    let (add, lines) = traced(&hl_call("ADD", "measured", &stdin), syscalls, 0);
    let got = add.ok();
    assert_eq!(got["ips"][0]["address"], "10.77.200.10/16", "{got}");
    let add = events(lines);
    let (del, lines) = traced(&hl_call("DEL", "measured", &stdin), syscalls, 0);
    del.ok();
    assert!(!store.join("10.77.200.10").exists());
    (add, events(lines))
}

fn summary(events: &[String]) -> String {
    let n = |s: &str| events.iter().filter(|e| e.starts_with(s)).count();
    format!(
        "{} events: {} opens, {} reads, {} writes, {} listings",
        events.len(),
        n("openat("),
        n("read("),
        n("write("),
        n("getdents64(")
    )
}

#[test]
fn host_local_add_and_del_touch_the_same_files_at_10_and_500_pods() {
    enter_test_host();
    let (add_10, del_10) = hl_costs(10);
    let (add_500, del_500) = hl_costs(500);
    for (what, small, big) in [("ADD", &add_10, &add_500), ("DEL", &del_10, &del_500)] {
        assert_eq!(
            small,
            big,
            "host-local {what}: at 10 pods {}, at 500 {}",
            summary(small),
            summary(big)
        );
        // Neither lists the store nor opens a file per reservation.
        assert!(
            !small.iter().any(|e| e.starts_with("getdents64(")),
            "{small:#?}"
        );
        assert!(small.len() < 40, "{what}: {small:#?}");
    }
}

// ---------------------------------------------------------------- nftables

/// What one plugin run asked nf_tables for and read back.
#[derive(Debug, Default, PartialEq, Eq)]
struct NlCost {
    /// Each request in order: its message type, `dump` when it was one.
    requests: Vec<String>,
    /// Dump requests among them.
    dumps: usize,
    /// Bytes received on nfnetlink sockets.
    bytes_read: u64,
}

/// The nfnetlink requests and reads of a trace of sendto/sendmsg/recvmsg
/// (a batch is one request, named by its first message after BEGIN).
fn nl_cost(lines: &[String]) -> NlCost {
    let mut cost = NlCost::default();
    for l in lines.iter().filter(|l| l.contains("NETFILTER")) {
        let ret = l
            .rsplit_once(" = ")
            .and_then(|(_, r)| r.split_whitespace().next()?.parse::<i64>().ok())
            .unwrap_or(-1);
        if l.starts_with("recvmsg(") || l.starts_with("recvfrom(") {
            cost.bytes_read += u64::try_from(ret).unwrap_or(0);
            continue;
        }
        let types: Vec<&str> = l
            .split("nlmsg_type=")
            .skip(1)
            .filter_map(|t| t.split(',').next())
            .collect();
        let first = l
            .split("nlmsg_flags=")
            .nth(1)
            .and_then(|t| t.split(',').next())
            .unwrap_or_default();
        let dump = first.contains("NLM_F_DUMP");
        cost.dumps += usize::from(dump);
        let name = match types.as_slice() {
            [one] => one.to_string(),
            [_, second, ..] => format!("batch {second}"),
            [] => "?".to_string(),
        };
        let name = name.replace("NFNL_SUBSYS_NFTABLES<<8|NFT_MSG_", "");
        cost.requests
            .push(if dump { format!("{name} dump") } else { name });
    }
    cost
}

fn nl_traced(call: &Call) -> (Value, NlCost, Vec<String>) {
    let (out, lines) = traced(call, "sendto,sendmsg,recvfrom,recvmsg", 32);
    let cost = nl_cost(&lines);
    if std::env::var_os("O1_DEBUG").is_some() {
        for l in lines.iter().filter(|l| l.contains("NETFILTER")) {
            let short: String = l.chars().take(300).collect();
            eprintln!("{short} ... {}", l.rsplit_once(" = ").map_or("", |x| x.1));
        }
    }
    (out.ok(), cost, lines)
}

/// The costs of one ADD and one DEL at 10 and at 500 pods must be the same.
fn assert_same(what: &str, at_10: &(NlCost, NlCost), at_500: &(NlCost, NlCost)) {
    for (verb, small, big) in [("ADD", &at_10.0, &at_500.0), ("DEL", &at_10.1, &at_500.1)] {
        eprintln!(
            "{what} {verb}: {} requests ({} dumps), {} bytes read at 10 pods; {} ({}), {} at 500",
            small.requests.len(),
            small.dumps,
            small.bytes_read,
            big.requests.len(),
            big.dumps,
            big.bytes_read
        );
        assert_eq!(
            small, big,
            "{what} {verb}: what it asks nf_tables for and reads grows with the pods"
        );
        assert!(small.dumps <= 8, "{what} {verb}: {small:#?}");
    }
}

fn address(net: u8, i: u32) -> ipnet::IpNet {
    format!("10.{net}.{}.{}/16", 100 + i / 250, 1 + i % 250)
        .parse()
        .expect("address")
}

// portmap

fn pm_conf(data_dir: &Path) -> String {
    json!({"cniVersion": "1.0.0", "name": "o1-pm", "type": "portmap", "backend": "nftables",
           "dataDir": data_dir,
           "runtimeConfig": {"portMappings": [
               {"hostPort": 8080, "containerPort": 80, "protocol": "tcp"},
               {"hostPort": 5353, "containerPort": 53, "protocol": "udp"}]},
           "prevResult": {"cniVersion": "1.0.0",
                          "interfaces": [{"name": "eth0", "sandbox": "/run/netns/o1-none"}],
                          "ips": [{"address": "10.79.250.250/16", "interface": 0}]}})
    .to_string()
}

/// `pods` containers' portmap rules (a TCP and a UDP port each, both
/// families' tables as ADD makes them), written in this process.
fn pm_pods(pods: u32) {
    use cni_multi::netfilter::{Backend, portmap};
    let mapping = |port: u32, to: u16, protocol: &str| portmap::Mapping {
        host_port: u16::try_from(port).expect("port"),
        container_port: to,
        protocol: protocol.into(),
        host_ip: None,
    };
    for i in 0..pods {
        let plan = portmap::Plan {
            network: "o1-pm".into(),
            container_id: format!("pod-{i}"),
            mappings: vec![mapping(20000 + i, 80, "tcp"), mapping(20000 + i, 53, "udp")],
            snat: true,
            masq_all: false,
            mark_bit: 13,
            external_mark_chain: None,
            conditions_v4: Vec::new(),
            conditions_v6: Vec::new(),
            targets: vec![portmap::Target {
                address: address(79, i),
            }],
        };
        portmap::add(Backend::Nftables, &plan).expect("portmap rules");
    }
}

fn pm_costs(pods: u32) -> (NlCost, NlCost) {
    enter_test_host();
    pm_pods(pods);
    let data = TempDir::new("o1-pm");
    let conf = pm_conf(&data.0);
    let call = |cmd: &str| {
        Call::new("portmap", cmd, "/run/netns/o1-none", &conf).set("CNI_CONTAINERID", "measured")
    };
    let (_, add, _) = nl_traced(&call("ADD"));
    let rules = harness::nft_ruleset();
    assert!(
        rules.contains("dnat to 10.79.250.250:80 comment \"measured\""),
        "{rules}"
    );
    let (_, del, _) = nl_traced(&call("DEL"));
    assert!(!harness::nft_ruleset().contains("\"measured\""));
    (add, del)
}

#[test]
fn portmap_nftables_add_and_del_read_the_same_at_10_and_500_pods() {
    let at_10 = pm_costs(10);
    let at_500 = pm_costs(500);
    assert_same("portmap", &at_10, &at_500);
}

// bridge: ipMasq (nftables) and macspoofchk

fn br_conf(store: &Path) -> String {
    json!({"cniVersion": "1.0.0", "name": "o1-br", "type": "bridge", "bridge": "o1br0",
           "isGateway": true, "ipMasq": true, "ipMasqBackend": "nftables", "macspoofchk": true,
           "ipam": {"type": "host-local", "subnet": "10.78.0.0/16", "dataDir": store}})
    .to_string()
}

/// `pods` attachments' masquerading and MAC spoof checks, written in this
/// process as the bridge's ADD writes them.
fn br_pods(pods: u32) {
    use cni_multi::netfilter::{Backend, macspoof, masq};
    for i in 0..pods {
        let id = format!("pod-{i}");
        let plan = masq::Plan::new("o1-br", &id, "eth0", &[address(78, i)]);
        masq::add(Backend::Nftables, &plan).expect("masquerading");
        let mac = [2, 0, 0, 0, (i >> 8) as u8, i as u8];
        macspoof::setup(&id, "eth0", &format!("veth{i:08x}"), mac)
            .expect("spoof check")
            .keep();
    }
}

fn br_costs(pods: u32) -> (NlCost, NlCost) {
    enter_test_host();
    br_pods(pods);
    let (bin, store) = (harness::plugin_dir(), TempDir::new("o1-br"));
    let conf = br_conf(&store.0);
    let ns = harness::Netns::new();
    let call = |cmd: &str| {
        Call::new("bridge", cmd, ns.path(), &conf)
            .set("CNI_CONTAINERID", "measured")
            .path(&bin)
    };
    let (_, add, _) = nl_traced(&call("ADD"));
    let rules = harness::nft_ruleset();
    assert!(rules.contains("id: measured\""), "{rules}");
    assert!(rules.contains("\"macspoofchk-measured-eth0\""), "{rules}");
    let (_, del, _) = nl_traced(&call("DEL"));
    assert!(!harness::nft_ruleset().contains("measured"));
    (add, del)
}

#[test]
fn bridge_ipmasq_and_macspoofchk_add_and_del_read_the_same_at_10_and_500_pods() {
    let at_10 = br_costs(10);
    let at_500 = br_costs(500);
    assert_same("bridge (ipMasq nftables, macspoofchk)", &at_10, &at_500);
}

// firewall

fn fw_conf(data_dir: &Path) -> String {
    json!({"cniVersion": "1.0.0", "name": "o1-fw", "type": "firewall", "backend": "nftables",
           "dataDir": data_dir,
           "prevResult": {"cniVersion": "1.0.0", "ips": [{"address": "10.80.250.250/16"}]}})
    .to_string()
}

fn fw_pods(pods: u32) {
    use cni_multi::netfilter::Backend;
    use cni_multi::netfilter::firewall::{self, IngressPolicy, Plan, Target};
    for i in 0..pods {
        let plan = Plan {
            container_id: format!("pod-{i}"),
            addresses: vec![address(80, i)],
            admin_chain: "CNI-ADMIN".into(),
            policy: IngressPolicy::Open,
            bridge: String::new(),
            zone: "trusted".into(),
        };
        firewall::add(Target::Rules(Backend::Nftables), &plan).expect("firewall rules");
    }
}

fn fw_costs(pods: u32) -> (NlCost, NlCost) {
    enter_test_host();
    fw_pods(pods);
    let data = TempDir::new("o1-fw");
    let conf = fw_conf(&data.0);
    let call = |cmd: &str| {
        Call::new("firewall", cmd, "/run/netns/o1-none", &conf).set("CNI_CONTAINERID", "measured")
    };
    let (_, add, _) = nl_traced(&call("ADD"));
    let rules = harness::nft_ruleset();
    assert!(
        rules.contains("ip saddr 10.80.250.250 accept comment \"measured\""),
        "{rules}"
    );
    let (_, del, _) = nl_traced(&call("DEL"));
    assert!(!harness::nft_ruleset().contains("\"measured\""));
    (add, del)
}

#[test]
fn firewall_nftables_add_and_del_read_the_same_at_10_and_500_pods() {
    let at_10 = fw_costs(10);
    let at_500 = fw_costs(500);
    assert_same("firewall", &at_10, &at_500);
}

// ---------------------------------------------- where the fast paths give way

/// `script` applied with `nft -f`, as the reference's knftables transactions are.
fn nft_apply(script: &str) {
    let dir = TempDir::new("o1-nft");
    let file = dir.0.join("rules.nft");
    std::fs::write(&file, script).expect("script");
    let out = Command::new("nft")
        .arg("-f")
        .arg(&file)
        .output()
        .expect("nft");
    assert!(out.status.success(), "{script}\n{out:?}");
}

/// What the reference's ipMasq ADD sends for attachment `id` of `o1-ref`
/// (`pkg/ip/ipmasq_nftables_linux.go`): its skeleton rewritten, unmarked.
fn reference_masq_add(id: &str, ip: &str) -> String {
    let comment = cni_multi::netfilter::masq::nftables::comment("o1-ref", "eth0", id);
    format!(
        "add table inet cni_plugins_masquerade {{ comment \"Masquerading for plugins from github.com/containernetworking/plugins\" ; }}\n\
         add chain inet cni_plugins_masquerade masq_checks {{ comment \"Masquerade traffic from certain IPs to any (non-multicast) IP outside their subnet\" ; }}\n\
         add chain inet cni_plugins_masquerade postrouting {{ type nat hook postrouting priority 100 ; }}\n\
         flush chain inet cni_plugins_masquerade postrouting\n\
         add rule inet cni_plugins_masquerade postrouting ip daddr == 224.0.0.0/4  return\n\
         add rule inet cni_plugins_masquerade postrouting ip6 daddr == ff00::/8  return\n\
         add rule inet cni_plugins_masquerade postrouting goto masq_checks\n\
         add rule inet cni_plugins_masquerade masq_checks ip saddr == {ip} ip daddr != 10.81.0.0/16 masquerade comment \"{comment}\"\n"
    )
}

/// ipMasq: the reference's ADD into a table of ours takes the mark away for
/// good; its attachment (no anchor) is found by reading `masq_checks`, ours
/// still by anchor, and the table goes with the last rule. A reference-made
/// table is never marked by our ADD.
#[test]
fn ipmasq_rules_the_reference_wrote_are_found_and_the_mark_does_not_come_back() {
    use cni_multi::netfilter::{Backend, masq};
    enter_test_host();
    let plan = |id: &str, ip: &str| {
        let addresses: Vec<ipnet::IpNet> = ip.parse().into_iter().collect();
        masq::Plan::new("o1-ref", id, "eth0", &addresses)
    };
    let ours = plan("ours", "10.81.0.2/16");
    masq::add(Backend::Nftables, &ours).expect("ours");
    let marked = || harness::nft_ruleset().contains(masq::nftables::MARK);
    assert!(marked(), "{}", harness::nft_ruleset());
    nft_apply(&reference_masq_add("theirs", "10.81.0.3"));
    assert!(!marked());
    masq::add(Backend::Nftables, &plan("later", "10.81.0.4/16")).expect("later");
    assert!(!marked(), "our ADD after theirs leaves the table unmarked");
    masq::check(Backend::Nftables, &plan("theirs", "10.81.0.3/16")).expect("theirs found");
    masq::del(Backend::Nftables, &plan("theirs", "")).expect("del theirs");
    let rules = harness::nft_ruleset();
    assert!(!rules.contains("id: theirs"), "{rules}");
    assert!(
        rules.contains("id: ours") && rules.contains("id: later"),
        "{rules}"
    );
    for id in ["ours", "later"] {
        masq::del(Backend::Nftables, &plan(id, "")).expect("del");
    }
    assert!(!harness::nft_ruleset().contains("cni_plugins_masquerade"));
    // A table the reference made: our ADD does not mark it.
    nft_apply(&reference_masq_add("first", "10.81.0.5"));
    masq::add(Backend::Nftables, &ours).expect("ours");
    assert!(!marked());
    masq::del(Backend::Nftables, &plan("first", "")).expect("del first");
    masq::del(Backend::Nftables, &plan("ours", "")).expect("del ours");
    assert!(!harness::nft_ruleset().contains("cni_plugins_masquerade"));
}

/// What the reference's portmap ADD sends for container `id` mapping TCP
/// `port` to `ip`:80 (`plugins/meta/portmap/portmap_nftables.go`).
fn reference_portmap_add(id: &str, ip: &str, port: u16) -> String {
    let t = "ip cni_hostport";
    format!(
        "add table {t} {{ comment \"CNI portmap plugin\" ; }}\n\
         add chain {t} hostports\n\
         add chain {t} hostip_hostports\n\
         add chain {t} prerouting {{ type nat hook prerouting priority -100 ; }}\n\
         flush chain {t} prerouting\n\
         add rule {t} prerouting jump hostip_hostports\n\
         add rule {t} prerouting jump hostports\n\
         add chain {t} output {{ type nat hook output priority -100 ; }}\n\
         flush chain {t} output\n\
         add rule {t} output jump hostip_hostports\n\
         add rule {t} output fib daddr type local jump hostports\n\
         add chain {t} masquerading {{ type nat hook postrouting priority 100 ; }}\n\
         add rule {t} hostports tcp dport {port} dnat to {ip}:80 comment \"{id}\"\n\
         add rule {t} masquerading ip saddr {ip} ip daddr {ip} masquerade comment \"{id}\"\n\
         add rule {t} masquerading ip saddr 127.0.0.1 ip daddr {ip} masquerade comment \"{id}\"\n"
    )
}

/// portmap: a container the reference's ADD mapped in a table of ours (the
/// mark gone with its rewrite of `prerouting`) or in a table it made is
/// deleted by our DEL without a record, and CHECK finds it.
#[test]
fn portmap_rules_the_reference_wrote_are_found_without_anchor_or_record() {
    use cni_multi::netfilter::{Backend, portmap};
    enter_test_host();
    let plan = |id: &str, ip: &str, port: u16| {
        let mut p = portmap::Plan::named("o1-ref", id);
        p.mappings = vec![portmap::Mapping {
            host_port: port,
            container_port: 80,
            protocol: "tcp".into(),
            host_ip: None,
        }];
        p.targets = vec![portmap::Target {
            address: ip.parse().expect("address"),
        }];
        p
    };
    let marked = || harness::nft_ruleset().contains(portmap::nftables::MARK);
    for ours_first in [true, false] {
        if ours_first {
            portmap::add(Backend::Nftables, &plan("ours", "10.82.0.2/16", 8080)).expect("ours");
            assert!(marked());
        }
        nft_apply(&reference_portmap_add("theirs", "10.82.0.3", 8081));
        if !ours_first {
            portmap::add(Backend::Nftables, &plan("ours", "10.82.0.2/16", 8080)).expect("ours");
        }
        assert!(!marked(), "{}", harness::nft_ruleset());
        portmap::check(Backend::Nftables, &plan("theirs", "10.82.0.3/16", 8081))
            .expect("theirs found");
        portmap::del_nftables(&plan("theirs", "10.82.0.3/16", 8081), false).expect("del");
        let rules = harness::nft_ruleset();
        assert!(!rules.contains("\"theirs\""), "{rules}");
        assert!(
            rules.contains("dnat to 10.82.0.2:80 comment \"ours\""),
            "{rules}"
        );
        portmap::del_nftables(&plan("ours", "10.82.0.2/16", 8080), true).expect("del");
        // The table goes with the last per-container rule, whoever made it.
        let rules = harness::nft_ruleset();
        assert!(!rules.contains("cni_hostport"), "{rules}");
    }
}

/// macspoofchk: a repeated ADD leaves two PREROUTING jumps to the
/// attachment's chain (the reference's does too); the chain's use count
/// shows the second, PREROUTING is read, and DEL removes both.
#[test]
fn macspoofchk_del_after_a_repeated_add_removes_every_jump() {
    use cni_multi::netfilter::macspoof;
    enter_test_host();
    let mac = [2, 0, 0, 0, 0, 9];
    for _ in 0..2 {
        macspoof::setup("twice", "eth0", "vethtwice", mac)
            .expect("setup")
            .keep();
    }
    macspoof::setup("other", "eth0", "vethother", mac)
        .expect("setup")
        .keep();
    let jumps = || {
        harness::nft_ruleset()
            .lines()
            .filter(|l| l.contains("jump cni-br-iface-twice-eth0 comment"))
            .count()
    };
    assert_eq!(jumps(), 2, "{}", harness::nft_ruleset());
    macspoof::teardown("twice", "eth0").expect("teardown");
    let rules = harness::nft_ruleset();
    assert_eq!(jumps(), 0, "{rules}");
    assert!(!rules.contains("cni-br-iface-twice"), "{rules}");
    assert!(rules.contains("jump cni-br-iface-other-eth0"), "{rules}");
    macspoof::teardown("other", "eth0").expect("teardown");
    macspoof::teardown("other", "eth0").expect("again");
    assert!(!harness::nft_ruleset().contains("cni-br-iface"));
}

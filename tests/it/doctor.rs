//! `cnitool doctor` on every kind of state, through the scenario runner
//! (tests/it/harness/doctor.rs): a dead pod's (netns deleted without DEL) and
//! an ownerless pod's (cache entry removed, then netns deleted) state is
//! listed and fixed, a live pod's is kept; live pods whose rules were flushed
//! are repaired; thirty live pods of every main plugin are no finding; and
//! the same for dhcp leases, firewalld zone sources and libcni 1.1's entries.

use crate::harness;
use crate::harness::dhcp_lan;
use crate::harness::doctor;
use crate::harness::firewalld;

use doctor::Fate::{Abandoned, Dead, Forgotten, Held, Ownerless};
use doctor::Stage::{Fixed, Leaked, Made};
use doctor::{BY_DEL, Maker, Node, Pod, Scenario, dnat_chain, masq_chain, row, table, unowned};
use harness::{Netns, TempDir, enter_test_host, kernel_supports, run_in, sha512_prefix, skip};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};

const DEL: &str = "DEL with the cached config";
const RELEASED: &str = "released by the DEL of its dead attachment";
const READD: &str = "re-add with the plugin's ADD";
const MASQ: &str = "add the masquerading its ADD wrote";
const JUMPS: &str = "remove chain and its POSTROUTING jumps";

fn testdata(path: &str) -> Value {
    serde_json::from_str(&std::fs::read_to_string(path).expect("testdata")).expect("JSON")
}

/// How many of what a live pod's ADD added start with `prefix` and hold `needle`.
fn count(pod: &Pod, prefix: &str, needle: &str) -> usize {
    let items = pod.items.iter().filter(|i| i.starts_with(prefix));
    items.filter(|i| i.contains(needle)).count()
}

fn reserve(store: &Path, network: &str, ip: &str, id: &str) -> PathBuf {
    let dir = store.join(network);
    std::fs::create_dir_all(&dir).expect("store");
    std::fs::write(dir.join(ip), format!("{id}\r\neth0")).expect("reservation");
    dir.join(ip)
}

#[test]
fn every_kind_of_dead_and_ownerless_state_is_found_and_fixed_and_live_state_kept() {
    table(&[
        ("bridge", bridge),
        ("netfilter", netfilter),
        ("nftables", nftables),
        ("flavour", flavour),
        ("files", files),
        ("links", links),
        ("multus", multus),
    ]);
}

/// testdata/bridge.conflist (bridge with ipMasq): `cache`, `ipam`, `masq`;
/// a pod whose namespace lives on keeps its state without its cache entry
/// (its address is in use); reservations of a network no longer configured
/// are judged too, but not those of a linked store or of an address in use.
fn bridge() {
    const NET: &str = "bridge-net";
    let mut list = testdata("testdata/bridge.conflist");
    list["plugins"][0]["ipam"]["dataDir"] = json!("@STORE@");
    list["plugins"][0]["ipMasqBackend"] = json!("iptables");
    assert_eq!(list["plugins"][0]["ipMasq"], true);
    let mut node = Node::new("kb", &[list]);
    node.add_live(1);
    let chain = masq_chain(NET, &node.live[0].id);
    assert!(count(&node.live[0], "iptables nat", &chain) >= 3);
    let store = node.rt.store.0.clone();
    std::fs::create_dir_all(store.join("removed-net")).expect("store");
    std::fs::write(store.join("removed-net").join("lock"), "").expect("lock");
    let holder = Netns::new();
    holder.sh("ip", &["addr", "add", "10.231.9.6/32", "dev", "lo"]);
    reserve(&store, "removed-net", "10.231.9.6", "ctr-held");
    let elsewhere = TempDir::new("kb-elsewhere");
    reserve(&elsewhere.0, "linked-net", "10.231.9.7", "ctr-linked");
    std::os::unix::fs::symlink(elsewhere.0.join("linked-net"), store.join("linked-net"))
        .expect("link");
    node.roots.push(elsewhere.0.clone());
    let removed = |n: &Node, _: &[Pod]| {
        reserve(&n.rt.store.0, "removed-net", "10.231.9.5", "ctr-gone");
    };
    let s = Scenario::new("bridge-net", &[Dead, Ownerless, Forgotten]).on(Made, removed);
    let s = s.rows(&[], |n, p| {
        let ip = |i: usize| n.rt.store.0.join(NET).join(p[i].ip()).display().to_string();
        let masq = |i: usize| format!("iptables nat {}", masq_chain(NET, &p[i].id));
        let entry = n.entry(NET, &p[0].id, "eth0").display().to_string();
        let reservation = "remove reservation";
        let gone = store
            .join("removed-net")
            .join("10.231.9.5")
            .display()
            .to_string();
        vec![
            p[0].row("cache", "eth0", entry, DEL),
            p[0].row("ipam", "eth0", ip(0), RELEASED),
            p[1].row("ipam", "eth0", ip(1), reservation),
            row("ipam", "removed-net", "ctr-gone", "eth0", gone, reservation),
            p[0].row("masq", "", masq(0), BY_DEL),
            p[1].row("masq", "", masq(1), JUMPS),
        ]
    });
    node.run(&s);
    node.finish();
}

/// bridge (ipMasq, macspoofchk) + portmap + firewall over iptables.
fn netfilter() {
    const NET: &str = "pf-net";
    let mut node = Node::new(
        "kf",
        &[json!({"cniVersion": "1.0.0", "name": NET, "plugins": [
            {"type": "bridge", "bridge": "cni-pf0", "isGateway": true, "ipMasq": true,
             "ipMasqBackend": "iptables", "macspoofchk": true,
             "ipam": {"type": "host-local", "subnet": "10.42.0.0/24", "dataDir": "@STORE@",
                      "routes": [{"dst": "0.0.0.0/0"}]}},
            {"type": "portmap", "capabilities": {"portMappings": true}, "backend": "iptables",
             "dataDir": "@DATA@/portmap"},
            {"type": "firewall", "backend": "iptables", "dataDir": "@DATA@/firewall"}]})],
    );
    node.ports = Some(8091);
    node.add_live(1);
    let live = &node.live[0];
    let dn = dnat_chain(NET, &live.id);
    let marks = [
        live.id.clone(),
        dn,
        format!("{}/", live.ip()),
        format!("{}:", live.ip()),
    ];
    let traces = marks
        .iter()
        .map(|m| count(live, "iptables nat", m) + count(live, "iptables filter", m));
    assert!(traces.sum::<usize>() >= 6, "{:?}", live.items);
    assert!(
        count(live, "nft bridge nat", &live.id) >= 4,
        "{:?}",
        live.items
    );
    let kinds = ["portmap", "firewall", "macspoofchk"];
    let s = Scenario::new("pf-net", &[Dead, Ownerless]).rows(&kinds, |_, p| {
        let dn = |i: usize| format!("iptables nat {}", dnat_chain(NET, &p[i].id));
        let rule = |i: usize| format!("iptables filter CNI-FORWARD {}/32", p[i].ip());
        let spoof = |i: usize| format!("nft bridge nat cni-br-iface-{}-eth0", p[i].id);
        let dnat_jumps = "remove chain and its CNI-HOSTPORT-DNAT jumps";
        let accepts = "remove the address's accept rules";
        let prerouting = "remove chains and their PREROUTING jump";
        vec![
            p[0].row("portmap", "", dn(0), BY_DEL),
            p[1].row("portmap", "", dn(1), dnat_jumps),
            p[0].row("firewall", "eth0", rule(0), BY_DEL),
            unowned("firewall", rule(1), accepts),
            p[0].row("macspoofchk", "eth0", spoof(0), BY_DEL),
            unowned("macspoofchk", spoof(1), prerouting),
        ]
    });
    node.run(&s);
    node.finish();
}

/// bridge (ipMasq) + portmap + firewall over nftables.
fn nftables() {
    const NET: &str = "nf-net";
    let mut node = Node::new(
        "kn",
        &[json!({"cniVersion": "1.0.0", "name": NET, "plugins": [
            {"type": "bridge", "bridge": "cni-dnf0", "isGateway": true, "ipMasq": true,
             "ipMasqBackend": "nftables",
             "ipam": {"type": "host-local", "subnet": "10.147.0.0/24", "dataDir": "@STORE@"}},
            {"type": "portmap", "capabilities": {"portMappings": true}, "backend": "nftables",
             "dataDir": "@DATA@/portmap"},
            {"type": "firewall", "backend": "nftables", "dataDir": "@DATA@/firewall"}]})],
    );
    node.ports = Some(8191);
    node.add_live(1);
    let live = &node.live[0];
    assert_eq!(count(live, "nft inet cni_plugins_masquerade", &live.id), 1);
    assert_eq!(count(live, "nft inet cni_firewall", &live.id), 2);
    assert!(
        count(live, "nft ip cni_hostport", &live.id) >= 2,
        "{:?}",
        live.items
    );
    let kinds = ["masq", "portmap", "firewall"];
    let s = Scenario::new("nf-net", &[Dead, Ownerless]).rows(&kinds, |_, p| {
        // Comments start with `<h(net)>-<h(ifname:cid)>`.
        let (net, theirs) = (sha512_prefix(NET, 16), "remove the container's rules");
        let h = |i: usize| sha512_prefix(&format!("eth0:{}", p[i].id), 16);
        let masq = |i: usize| format!("nft inet cni_plugins_masquerade {net}-{}", h(i));
        let hostport = |i: usize| format!("nft ip cni_hostport {}", p[i].id);
        let firewall = |i: usize| format!("nft inet cni_firewall {}", p[i].id);
        vec![
            p[0].row("masq", "eth0", masq(0), BY_DEL),
            p[1].row("masq", "eth0", masq(1), "remove the attachment's rules"),
            p[0].row("portmap", "", hostport(0), BY_DEL),
            row("portmap", "", &p[1].id, "", hostport(1), theirs),
            p[0].row("firewall", "", firewall(0), BY_DEL),
            row("firewall", "", &p[1].id, "", firewall(1), theirs),
        ]
    });
    node.run(&s);
    node.finish();
}

/// ipMasq chains a host left in the iptables flavour it switched away from.
fn flavour() {
    const NET: &str = "fl-net";
    let default = std::fs::canonicalize("/usr/sbin/iptables-restore").expect("iptables-restore");
    let (flavour, tool) = match default.to_string_lossy().contains("nft") {
        true => ("legacy", "iptables-legacy"),
        false => ("nft", "iptables-nft"),
    };
    // A PATH whose iptables is the other flavour: the host before it switched.
    let old = TempDir::new("flavour");
    for family in ["iptables", "ip6tables"] {
        for what in ["save", "restore"] {
            let tool = format!("/usr/sbin/{family}-{flavour}-{what}");
            std::os::unix::fs::symlink(tool, old.0.join(format!("{family}-{what}"))).expect("link");
        }
    }
    let path = std::env::var("PATH").unwrap_or_default();
    let path = format!("{}:{path}", old.0.display());
    let mut node = Node::new(
        "kl",
        &[json!({"cniVersion": "1.0.0", "name": NET, "plugins": [
            {"type": "bridge", "bridge": "cni-dfl0", "isGateway": true, "ipMasq": true,
             "ipMasqBackend": "iptables",
             "ipam": {"type": "host-local", "subnet": "10.146.0.0/24", "dataDir": "@STORE@"}}]})],
    );
    node.maker = Maker::Path(path);
    let save = format!("{tool}-save");
    let probe = move || doctor::save(&save, "nat");
    node.probes.push(Box::new(probe));
    node.add_live(1);
    let chain = masq_chain(NET, &node.live[0].id);
    assert!(count(&node.live[0], &format!("{tool} nat"), &chain) >= 3);
    // repair gives the live pod the masquerading the default flavour lacks.
    let out = node.doctor(&["--fix", "--min-age", "0"], &Maker::Ours);
    let want = node.live[0].row("repair", "eth0", "bridge masquerading", MASQ);
    let want = vec![harness::merged(want, json!({"fixed": true}))];
    assert_eq!(doctor::findings(&out), want);
    let s = Scenario::new("fl-net", &[Dead]).rows(&["masq"], |_, p| {
        let chain = format!("{tool} nat {}", masq_chain(NET, &p[0].id));
        vec![p[0].row("masq", "", chain, JUMPS)]
    });
    node.run(&s);
    node.finish();
}

/// tuning's backups and flannel's saved delegate configs (a pod is on both
/// networks: tune-net's eth0, flan-net's net1).
fn files() {
    let mut node = Node::new(
        "kt",
        &[
            json!({"cniVersion": "1.0.0", "name": "tune-net", "plugins": [
                {"type": "bridge", "bridge": "cni-tune0", "isGateway": true,
                 "ipam": {"type": "host-local", "dataDir": "@STORE@",
                          "ranges": [[{"subnet": "10.23.0.0/16"}]]}},
                {"type": "tuning", "mtu": 1400, "dataDir": "@DATA@/tuning"}]}),
            json!({"cniVersion": "1.0.0", "name": "flan-net", "plugins": [
                {"type": "flannel", "subnetFile": "@DATA@/subnet.env",
                 "dataDir": "@DATA@/flannel", "ipam": {"dataDir": "@STORE@"}}]}),
        ],
    );
    let env = node.data.0.join("subnet.env");
    std::fs::copy("testdata/flannel/subnet.env", env).expect("subnet.env");
    node.add_live(1);
    let s = Scenario::new("tuning and flannel", &[Dead, Ownerless]).sorted();
    let s = s.rows(&["tuning", "flannel"], |n, p| {
        let path = |file: String| n.data.0.join(file).display().to_string();
        let backup = |i: usize| path(format!("tuning/{}_eth0.json", p[i].id));
        let saved = |i: usize| path(format!("flannel/{}", p[i].id));
        let forgotten = "remove saved delegate config";
        vec![
            p[0].row("tuning", "eth0", backup(0), BY_DEL),
            p[1].row("tuning", "eth0", backup(1), "remove backup"),
            row("flannel", "flan-net", &p[0].id, "net1", saved(0), BY_DEL),
            row("flannel", "flan-net", &p[1].id, "", saved(1), forgotten),
        ]
    });
    node.run(&s);
    node.finish();
}

/// bandwidth's IFBs and bridge ports (host veths). Held: the pod's namespace
/// was unpinned, but a descriptor (a daemon that leaked one, a socket made
/// in it) keeps it: no task is in it, no bind mount holds it, so its veth
/// stays on the bridge with nobody behind it. Forgotten: its cache entry
/// went but it lives: its veth's ingress filter feeds its IFB, kept.
fn links() {
    const NET: &str = "links-net";
    let mut node = Node::new(
        "kk",
        &[json!({"cniVersion": "1.0.0", "name": NET, "plugins": [
            {"type": "bridge", "bridge": "cni-links0", "isGateway": true,
             "ipam": {"type": "host-local", "subnet": "10.91.0.0/24", "dataDir": "@STORE@"}},
            {"type": "bandwidth", "dataDir": "@DATA@/bw",
             "ingressRate": 8_000_000, "ingressBurst": 524288,
             "egressRate": 8_000_000, "egressBurst": 524288}]})],
    );
    node.add_live(1);
    let held = [Held { ownerless: true }, Held { ownerless: false }];
    let s = Scenario::new(
        "veth and ifb",
        &[Dead, Ownerless, held[0], held[1], Forgotten],
    );
    let s = s.on(Leaked, |n, _| {
        // The two dead entries (their veths went with them or stay held).
        let found = doctor::findings(&n.doctor(&["--min-age", "0"], &Maker::Ours));
        let entries = found.iter().filter(|f| f["kind"] == "cache");
        assert_eq!(entries.count(), 2, "{found:?}");
    });
    let s = s.rows(&["veth", "ifb"], |_, p| {
        let veth = |i: usize| format!("link {}", p[i].host_links("veth")[0]);
        let hash = |i: usize| sha512_prefix(&format!("{NET}{}", p[i].id), 12);
        let ifb = |i: usize| format!("link bwp{}", hash(i));
        let delete = "delete link";
        vec![
            unowned("veth", veth(2), delete),
            p[3].row("veth", "eth0", veth(3), BY_DEL),
            p[0].row("ifb", "eth0", ifb(0), BY_DEL),
            // Our bandwidth names the owner in the IFB's alias.
            p[1].row("ifb", "", ifb(1), delete),
            p[2].row("ifb", "", ifb(2), delete),
            p[3].row("ifb", "eth0", ifb(3), BY_DEL),
        ]
    });
    node.run(&s);
    node.finish();
}

/// multus's per-pod files in its cniDir, its delegates' cache entries there
/// and device-info files (`devinfo`); links, directories and names that are
/// no container ID in the cniDir are never findings.
fn multus() {
    const NET: &str = "multus-cni-network";
    let mut list = testdata("testdata/multus/00-multus.conflist");
    let p = &mut list["plugins"][0];
    p["confDir"] = json!("@DATA@/multus");
    p["cniDir"] = json!("@DATA@/cni");
    p["binDir"] = json!("@BIN@");
    p["podDir"] = json!("@DATA@/multus/pods");
    p["netAttachDefDir"] = json!("@DATA@/multus/nads");
    let mut node = Node::new("km", &[list]);
    let (data, store) = (node.data.0.clone(), node.rt.store.0.clone());
    let mut cbr0 = testdata("testdata/multus/net.d/cbr0.conflist");
    cbr0["plugins"][0]["ipam"]["dataDir"] = json!(store);
    node.write(&data.join("multus"), "cbr0.conflist", &cbr0);
    // No annotations: the cluster network only.
    node.caps = json!({"io.kubernetes.cri.pod-annotations": {}});
    node.k8s = true;
    node.add_live(1);
    let cni = data.join("cni");
    std::fs::create_dir_all(data.join("victim")).expect("dir");
    std::fs::write(data.join("victim/keep"), "x").expect("victim");
    std::os::unix::fs::symlink(data.join("victim/keep"), cni.join("linked")).expect("link");
    std::fs::create_dir(cni.join("adir")).expect("dir");
    std::fs::write(cni.join(".tmp-1"), "x").expect("tmp");
    let devinfo = Path::new("/var/run/k8s.cni.cncf.io/devinfo/cni");
    std::fs::create_dir_all(devinfo).expect("devinfo dir");
    let file = |id: &str| devinfo.join(format!("default-sriov-{id}_net1"));
    let live = file(&node.live[0].id);
    let unknown = file(&format!("km-{}", std::process::id()));
    let s = Scenario::new("multus", &[Dead, Ownerless]).sorted();
    let s = s.on(Made, |_, p| {
        for f in [
            file(&p[0].id),
            file(&p[1].id),
            live.clone(),
            unknown.clone(),
        ] {
            std::fs::write(f, r#"{"type":"pci","version":"1.1.0"}"#).expect("device-info");
        }
    });
    let s = s.on(Fixed, |_, p| {
        assert!(live.exists(), "a live pod keeps its device-info file");
        let others = [file(&p[0].id), file(&p[1].id), unknown.clone()];
        assert!(others.iter().all(|f| !f.exists()), "{others:?}");
        std::fs::remove_file(&live).expect("the live pod's device-info file");
    });
    let s = s.rows(&["multus", "cache", "devinfo"], |n, p| {
        let path = |file: String| cni.join(file).display().to_string();
        let status = |i: usize| path(format!("{}.status", p[i].id));
        let cached = |i: usize| path(p[i].id.clone());
        let delegate = |i: usize| path(format!("results/cbr0-{}-eth0", p[i].id));
        let dev = |i: usize| file(&p[i].id).display().to_string();
        let entry = n.entry(NET, &p[0].id, "eth0").display().to_string();
        let (delegates, status_file) = ("remove delegate cache", "remove network status");
        vec![
            p[0].row("multus", "eth0", cached(0), BY_DEL),
            p[0].row("multus", "eth0", status(0), BY_DEL),
            p[1].row("multus", "", cached(1), delegates),
            p[1].row("multus", "", status(1), status_file),
            p[0].row("cache", "eth0", entry, DEL),
            row("cache", "cbr0", &p[0].id, "eth0", delegate(0), DEL),
            row("cache", "cbr0", &p[1].id, "eth0", delegate(1), DEL),
            p[0].row("devinfo", "net1", dev(0), BY_DEL),
            row("devinfo", "cbr0", &p[1].id, "net1", dev(1), BY_DEL),
            unowned("devinfo", unknown.display(), "remove device-info file"),
        ]
    });
    node.run(&s);
    node.finish();
}

#[test]
fn firewalld_sources_of_dead_and_ownerless_attachments_are_removed() {
    let test = "firewalld_sources_of_dead_and_ownerless_attachments_are_removed";
    if firewalld::tools_missing(test) {
        return;
    }
    enter_test_host();
    let bus = firewalld::Bus::start();
    let _fw = firewalld::Firewalld::start(&bus);
    let mut node = Node::new(
        "fwz",
        &[
            json!({"cniVersion": "1.0.0", "name": "fwz-net", "plugins": [
            {"type": "bridge", "bridge": "cni-fwz0", "isGateway": true,
             "ipam": {"type": "host-local", "subnet": "10.149.0.0/24", "dataDir": "@STORE@"}},
            {"type": "firewall", "backend": "firewalld", "dataDir": "@DATA@/firewall"}]}),
        ],
    );
    let address = ("DBUS_SYSTEM_BUS_ADDRESS".into(), bus.address.clone());
    node.env.push(address);
    let sources = || bus.sources("trusted").into_iter();
    let probe = move || sources().map(|s| format!("firewalld zone trusted source {s}"));
    node.probes.push(Box::new(move || probe().collect()));
    // An operator's source outside the network's subnet is never judged.
    let source = ["string:trusted".into(), "string:192.0.2.7/32".into()];
    let added = bus.send(&format!("{}.addSource", firewalld::ZONE), &source);
    assert!(added.status.success(), "{added:?}");
    node.add_live(1);
    let s = Scenario::new("firewalld zone sources", &[Dead, Ownerless]);
    let s = s.rows(&["firewall"], |_, p| {
        let source = |i: usize| format!("firewalld zone trusted source {}/32", p[i].ip());
        vec![
            p[0].row("firewall", "eth0", source(0), BY_DEL),
            unowned("firewall", source(1), "remove the zone source"),
        ]
    });
    node.run(&s);
    node.finish();
}

/// The dhcp daemon's leases (a dnsmasq LAN and a daemon of the test's own,
/// tests/it/harness/dhcp_lan.rs): a dead pod's is released by its DEL, one a pod
/// gave up without its cache entry through the daemon (dnsmasq gets the
/// DHCPRELEASE), or as a file while the daemon is stopped (a daemon starting
/// would take it up and renew it for ever).
#[test]
fn dhcp_leases_of_dead_and_ownerless_attachments_are_released() {
    const NET: &str = "dhcp-net";
    const RELEASE: &str = "release the lease through the daemon";
    enter_test_host();
    let dir = TempDir::new("dhcp");
    let lan = dhcp_lan::Lan::new(&dir, true, "1h", &[]);
    let daemon = std::cell::RefCell::new(dhcp_lan::Daemon::start(&dir, &[]));
    let socket = daemon.borrow().socket.clone();
    let mut node = Node::new(
        "dh",
        &[
            json!({"cniVersion": "1.0.0", "name": NET, "plugins": [{"type": "macvlan",
            "master": "lan-m", "ipam": {"type": "dhcp", "daemonSocketPath": socket}}]}),
        ],
    );
    let leases = dir.0.join("dhcp.sock.leases");
    node.roots.push(leases.clone());
    node.add_live(1);
    // The daemon's lease file of a pod, as the doctor names it: path (address).
    let lease = |p: &Pod, action: &str| {
        let files = std::fs::read_dir(&leases).expect("leases").flatten();
        for file in files.map(|e| e.path()) {
            let text = std::fs::read(&file).unwrap_or_default();
            let Ok(v) = serde_json::from_slice::<Value>(&text) else {
                continue;
            };
            if v["attachment"]["containerID"] == p.id.as_str() {
                let ip = v["lease"]["address"].as_str().unwrap_or_default();
                return p.row("dhcp", "eth0", format!("{} ({ip})", file.display()), action);
            }
        }
        panic!("no lease file of {}", p.id)
    };
    let dead = Scenario::new("dhcp: dead", &[Dead]);
    node.run(&dead.rows(&["dhcp"], |_, p| vec![lease(&p[0], BY_DEL)]));
    let released = Scenario::new("dhcp: given up, released through the daemon", &[Abandoned]);
    let released = released.on(Leaked, |_, p| assert!(lan.lease_of(&p[0].ip()).is_some()));
    let released = released.on(Fixed, |_, p| {
        let (log, ip) = (daemon.borrow().log(), p[0].ip());
        assert!(
            log.contains(&format!("{}/{NET}/eth0: released {ip}", p[0].id)),
            "{log}"
        );
        let limit = std::time::Duration::from_secs(10);
        dhcp_lan::wait_for("dnsmasq to drop the lease", limit, || {
            lan.lease_of(&ip).is_none()
        });
    });
    node.run(&released.rows(&["dhcp"], |_, p| vec![lease(&p[0], RELEASE)]));
    let stopped = Scenario::new("dhcp: ownerless, the daemon stopped", &[Ownerless]);
    let kill = nix::sys::signal::Signal::SIGKILL;
    let stopped = stopped.on(Leaked, |_, _| {
        daemon.borrow_mut().signal(kill);
    });
    let stopped = stopped.on(Fixed, |_, _| daemon.borrow_mut().restart());
    node.run(&stopped.rows(&["dhcp"], |_, p| vec![lease(&p[0], RELEASE)]));
    // The live pod keeps its lease, with dnsmasq too.
    assert!(lan.lease_of(&node.live[0].ip()).is_some());
    node.finish();
}

/// bridge (ipMasq) + portmap on `backend`, two live pods with hostPorts
/// reached from a client: after `flush`, each pod's portmap rules and
/// masquerading are listed as `repair`, and `--fix` brings them back.
fn flush_then_repair(backend: &str, flush: &[&str]) {
    enter_test_host();
    let mut node = Node::new(
        "rp",
        &[json!({"cniVersion": "1.0.0", "name": "rp-net", "plugins": [
            {"type": "bridge", "bridge": "cni-rp0", "isGateway": true, "ipMasq": true,
             "ipMasqBackend": backend,
             "ipam": {"type": "host-local", "subnet": "10.41.0.0/24", "dataDir": "@STORE@",
                      "routes": [{"dst": "0.0.0.0/0"}]}},
            {"type": "portmap", "capabilities": {"portMappings": true}, "backend": backend,
             "dataDir": "@DATA@/portmap"}]})],
    )
    .with_client();
    node.ports = Some(8081);
    node.add_live(2);
    let s = Scenario::new(&format!("{backend}: {flush:?}"), &[])
        .flush(flush)
        .sorted()
        .rows(&[], |n, _| repairs(&n.live));
    node.run(&s);
    node.finish();
}

/// The repair findings of live pods: their portmap rules and masquerading.
fn repairs(live: &[Pod]) -> Vec<Value> {
    let rows = live.iter().flat_map(|p| {
        let masq = p.row("repair", "eth0", "bridge masquerading", MASQ);
        [p.row("repair", "eth0", "portmap rules", READD), masq]
    });
    rows.collect()
}

#[test]
fn repair_after_iptables_nat_flush() {
    flush_then_repair("iptables", &["iptables", "-t", "nat", "-F"]);
}

#[test]
fn repair_after_nft_flush_ruleset() {
    flush_then_repair("nftables", &["nft", "flush", "ruleset"]);
}

/// Attachments a runtime made through Go's libcni 1.1 (Debian's, as
/// containerd 1.6 and 1.7 carry it) cache no netns: they are judged from
/// what the host shows. A leaked pod is found and fixed, a live pod (also
/// while both live) is no finding, and one whose rules were flushed is repaired.
#[test]
fn libcni_1_1_attachments_are_judged_fixed_and_repaired() {
    enter_test_host();
    let Some(driver) = harness::libcni_driver("libcni-driver-test") else {
        let test = "libcni_1_1_attachments_are_judged_fixed_and_repaired";
        skip(test, "Go or Debian's golang-github-appc-cni-dev is missing");
        return;
    };
    const NET: &str = "lc-net";
    let mut node = Node::new(
        "lc",
        &[json!({"cniVersion": "1.0.0", "name": NET, "plugins": [
            {"type": "bridge", "bridge": "cni-lc0", "isGateway": true, "ipMasq": true,
             "ipam": {"type": "host-local", "subnet": "10.71.0.0/24", "dataDir": "@STORE@"}},
            {"type": "portmap", "capabilities": {"portMappings": true},
             "dataDir": "@DATA@/portmap"}]})],
    );
    node.maker = Maker::Libcni(driver);
    node.ports = Some(18071);
    node.add_live(1);
    let leaked = Scenario::new("libcni: dead", &[Dead]).on(Made, |n, p| {
        let entry = std::fs::read(n.entry(NET, &p[0].id, "eth0")).expect("entry");
        let cached: Value = serde_json::from_slice(&entry).expect("entry JSON");
        assert!(
            cached.get("netns").is_none(),
            "libcni 1.1 caches no netns: {cached}"
        );
        let both = n.doctor(&["--min-age", "0"], &Maker::Ours);
        assert_eq!(
            (both.status, doctor::findings(&both)),
            (0, vec![]),
            "both live"
        );
    });
    node.run(&leaked);
    let flushed = Scenario::new("libcni: flushed", &[])
        .flush(&["iptables", "-t", "nat", "-F"])
        .flush(&["iptables", "-t", "nat", "-X"])
        .sorted()
        .rows(&[], |n, _| repairs(&n.live));
    node.run(&flushed);
    node.finish();
}

fn host_local(subnet: &str) -> Value {
    json!({"type": "host-local", "subnet": subnet, "dataDir": "@STORE@",
           "routes": [{"dst": "0.0.0.0/0"}]})
}

fn veth(name: &str) {
    let peer = format!("{name}p");
    let add = ["link", "add", name, "type", "veth", "peer", "name", &peer];
    run_in(None, "ip", &add);
    run_in(None, "ip", &["link", "set", name, "up"]);
}

/// No false positive: 30 live pods spread over every main plugin (bridge
/// with ipMasq, portmap TCP and UDP, bandwidth, firewall and tuning; ptp with
/// ipMasq and portmap; macvlan; host-device; tap; loopback; ipvlan, vlan and
/// dummy where the kernel has them) are no finding, even with `--min-age 0`,
/// and `--fix` changes nothing; their namespaces are pinned as runtimes pin
/// them, so the doctor judges each. The same doctor sees a pod gone without DEL.
#[test]
fn thirty_live_pods_of_every_main_plugin_are_no_finding() {
    const TEST: &str = "thirty_live_pods_of_every_main_plugin_are_no_finding";
    enter_test_host();
    let mut lists = vec![
        json!({"cniVersion": "1.0.0", "name": "hb-bridge", "plugins": [
            {"type": "bridge", "bridge": "cni-hb0", "isGateway": true, "ipMasq": true,
             "ipam": host_local("10.160.0.0/24")},
            {"type": "tuning", "mtu": 1400, "dataDir": "@DATA@/tuning"},
            {"type": "portmap", "capabilities": {"portMappings": true}, "dataDir": "@DATA@/portmap"},
            {"type": "firewall", "backend": "iptables", "dataDir": "@DATA@/firewall"},
            {"type": "bandwidth", "ingressRate": 8_000_000, "ingressBurst": 80_000,
             "egressRate": 8_000_000, "egressBurst": 80_000, "dataDir": "@DATA@/bandwidth"}]}),
        json!({"cniVersion": "1.0.0", "name": "hb-ptp", "plugins": [
            {"type": "ptp", "ipMasq": true, "ipam": host_local("10.161.0.0/24")},
            {"type": "portmap", "capabilities": {"portMappings": true}, "dataDir": "@DATA@/portmap"}]}),
        json!({"cniVersion": "1.0.0", "name": "hb-macvlan", "plugins": [
            {"type": "macvlan", "master": "hb-mv", "ipam": host_local("10.162.0.0/24")}]}),
        json!({"cniVersion": "1.0.0", "name": "hb-tap", "plugins": [
            {"type": "tap", "ipam": host_local("10.163.0.0/24")}]}),
        json!({"cniVersion": "1.0.0", "name": "hb-lo", "plugins": [{"type": "loopback"}]}),
    ];
    veth("hb-mv");
    // The VLAN id is set per pod (one link per id and master).
    for (kind, options, master, subnet) in [
        ("ipvlan", &[][..], Some("hb-ipv"), "10.164.0.0/24"),
        ("vlan", &["id", "7"][..], Some("hb-vl"), "10.165.0.0/24"),
        ("dummy", &[][..], None, "10.166.0.0/24"),
    ] {
        if let Err(reason) = kernel_supports(kind, master.is_some(), options) {
            skip(TEST, &format!("{reason} (its pods are left out)"));
            continue;
        }
        let mut plugin = json!({"type": kind, "ipam": host_local(subnet)});
        if let Some(master) = master {
            veth(master);
            plugin["master"] = json!(master);
        }
        let name = format!("hb-{kind}");
        lists.push(json!({"cniVersion": "1.0.0", "name": name, "plugins": [plugin]}));
    }
    let name = |l: &Value| l["name"].as_str().unwrap_or_default().to_string();
    let mut nets: Vec<String> = lists.iter().map(name).collect();
    nets.push("host-device".into());
    let mut node = Node::new("hb", &lists);
    node.ports = Some(20000);
    node.pin_live = true;
    for i in 0..30u16 {
        let net = nets[usize::from(i) % nets.len()].clone();
        let name = match net.as_str() {
            "hb-vlan" => format!("hb-vlan{i}"),
            "host-device" => format!("hb-hd{i}"),
            _ => net.clone(),
        };
        if net == "hb-vlan" {
            let list = json!({"cniVersion": "1.0.0", "name": name, "plugins": [
                {"type": "vlan", "master": "hb-vl", "vlanId": 100 + i,
                 "ipam": host_local("10.165.0.0/24")}]});
            node.write(&node.rt.conf.0, &format!("{name}.conflist"), &list);
        } else if net == "host-device" {
            // Each pod its own device (a veth end moved in), its own list.
            veth(&name);
            let list = json!({"cniVersion": "1.0.0", "name": name, "plugins": [
                {"type": "host-device", "device": name, "dataDir": "@DATA@/host-device",
                 "ipam": host_local("10.167.0.0/24")}]});
            node.write(&node.rt.conf.0, &format!("{name}.conflist"), &list);
        }
        node.nets = vec![(name, "eth0".into())];
        node.add_live(1);
    }
    node.run(&Scenario::new("thirty live pods", &[]).rows(&[], |_, _| vec![]));
    node.nets = vec![("hb-bridge".into(), "eth0".into())];
    node.run(&Scenario::new("one of them gone without DEL", &[Dead]));
    node.finish();
}

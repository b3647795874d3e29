//! State at long container IDs (the spec sets no length; the env layer takes
//! up to 1024 bytes of `[A-Za-z0-9_.-]`): every plugin that names a file
//! after the container ID keeps it within NAME_MAX, at 255 and at 1,000
//! characters. A chain of flannel (bridge, host-local), tuning, portmap,
//! firewall and bandwidth run by a libcni-style runtime (the result cache),
//! host-device and multus each go through ADD, CHECK, GC and DEL and leave
//! nothing behind; the doctor finds and fixes a dead pod's state under the
//! bounded names and keeps a live pod's.

use crate::harness;

use cni_multi::libcni::cache::Cache;
use cni_multi::libcni::{Attachment, Runtime, RuntimeConf, conf};
use harness::{Call, Netns, PinnedNetns, TempDir, enter_test_host, plugin_dir, run_in};
use serde_json::{Map, Value, json};
use std::path::{Path, PathBuf};

const LENGTHS: [usize; 2] = [255, 1000];
const NAME_MAX: usize = 255;

/// A container ID of `len` characters of every kind IDs may hold, ending in
/// `tag`: IDs of one length differ only in their last character, so nothing
/// but a hash of the whole ID can tell their files apart.
fn long_id(len: usize, tag: char) -> String {
    const CHARS: &[u8] = b"0123456789abcdefXYZ._-";
    let mut id = String::from("k");
    while id.len() < len - 1 {
        id.push(CHARS[id.len() % CHARS.len()] as char);
    }
    id.push(tag);
    id
}

/// What stands for a long ID in a name too long with it: its first 64
/// characters, `~` and 32 hex digits of SHA-512 of the whole ID.
fn token(id: &str) -> String {
    format!("{}~{}", &id[..64], harness::sha512_prefix(id, 32))
}

/// Every file and directory under `dir`, as paths relative to it.
fn tree(dir: &Path) -> Vec<String> {
    fn walk(root: &Path, dir: &Path, out: &mut Vec<String>) {
        for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
            let path = e.path();
            let rel = path.strip_prefix(root).unwrap_or(&path);
            out.push(rel.display().to_string());
            if e.file_type().is_ok_and(|t| t.is_dir()) {
                walk(root, &path, out);
            }
        }
    }
    let mut out = Vec::new();
    walk(dir, dir, &mut out);
    out.sort();
    out
}

/// The regular files under `dir` (directories and host-local's own
/// bookkeeping, `lock`, `last_reserved_ip.*` and its owner index, aside).
fn files(dir: &Path) -> Vec<String> {
    tree(dir)
        .into_iter()
        .filter(|p| dir.join(p).is_file())
        .filter(|p| {
            let name = p.rsplit('/').next().unwrap_or(p);
            name != "lock"
                && !p.contains(".cni-multi-owners")
                && !name.starts_with("last_reserved_ip")
        })
        .collect()
}

/// Every name under `dir` fits NAME_MAX (they could not exist otherwise, but
/// a name of exactly the limit is what the reference writes, so it is kept).
fn assert_names_fit(dir: &Path) {
    for p in tree(dir) {
        for part in p.split('/') {
            assert!(part.len() <= NAME_MAX, "{} bytes: {part}", part.len());
        }
    }
}

/// The dirs of one run: config, result cache, host-local store, the
/// plugins' dataDirs, subnet.env, and our plugins on CNI_PATH.
struct Dirs {
    conf: TempDir,
    cache: TempDir,
    store: TempDir,
    data: TempDir,
    bin: TempDir,
}

impl Dirs {
    fn new(tag: &str) -> Dirs {
        let d = Dirs {
            conf: TempDir::new(&format!("{tag}-conf")),
            cache: TempDir::new(&format!("{tag}-cache")),
            store: TempDir::new(&format!("{tag}-store")),
            data: TempDir::new(&format!("{tag}-data")),
            bin: plugin_dir(),
        };
        std::fs::copy("testdata/flannel/subnet.env", d.data.0.join("subnet.env"))
            .expect("subnet.env");
        d
    }

    fn data(&self, sub: &str) -> PathBuf {
        self.data.0.join(sub)
    }

    /// A runtime with libcni's semantics over our plugins, the cache ours.
    fn runtime(&self) -> Runtime {
        Runtime {
            cni_path: vec![self.bin.0.clone()],
            cache: Cache::new(&self.cache.0),
            plugins: cni_multi::cni::no_plugins,
        }
    }

    /// Writes `list` to the config dir and loads it as a runtime does.
    fn list(&self, list: &Value) -> conf::NetworkList {
        let name = list["name"].as_str().expect("name");
        let path = self.conf.0.join(format!("{name}.conflist"));
        std::fs::write(&path, list.to_string()).expect("conflist");
        conf::load(&self.conf.0, name).expect("load the list")
    }

    /// State files anywhere: the plugins' dataDirs, the store, the cache
    /// (every name checked to fit).
    fn state(&self) -> Vec<String> {
        let mut all = Vec::new();
        for (tag, dir) in [
            ("data", &self.data.0),
            ("store", &self.store.0),
            ("cache", &self.cache.0),
        ] {
            assert_names_fit(dir);
            all.extend(
                files(dir)
                    .into_iter()
                    // The doctor's own bookkeeping is no pod's.
                    .filter(|f| f != "subnet.env" && f != "doctor/sightings.json")
                    .map(|f| format!("{tag}/{f}")),
            );
        }
        all
    }
}

const NET: &str = "lid-net";

/// flannel (bridge + host-local) with tuning, portmap, firewall and
/// bandwidth: every plugin of ours that names a file after the container.
fn chain(d: &Dirs, backend: &str) -> Value {
    json!({"cniVersion": "1.1.0", "name": NET, "plugins": [
        {"type": "flannel", "subnetFile": d.data("subnet.env"), "dataDir": d.data("flannel"),
         "ipam": {"type": "host-local", "dataDir": d.store.0}},
        {"type": "tuning", "mtu": 1400, "dataDir": d.data("tuning")},
        {"type": "portmap", "capabilities": {"portMappings": true}, "backend": backend,
         "dataDir": d.data("portmap")},
        {"type": "firewall", "backend": backend, "dataDir": d.data("firewall")},
        {"type": "bandwidth", "capabilities": {"bandwidth": true}, "dataDir": d.data("bandwidth")}]})
}

/// The runtime parameters of pod `k` in `netns`: a hostPort and a rate.
fn pod_conf(id: &str, netns: &str, k: u16) -> RuntimeConf {
    let caps = json!({
        "portMappings": [{"hostPort": 9100 + k, "containerPort": 80, "protocol": "tcp"}],
        "bandwidth": {"ingressRate": 8000000, "ingressBurst": 80000,
                      "egressRate": 8000000, "egressBurst": 80000}});
    RuntimeConf {
        container_id: id.to_string(),
        netns: netns.to_string(),
        ifname: "eth0".into(),
        args: Vec::new(),
        capability_args: caps.as_object().cloned().unwrap_or_else(Map::new),
    }
}

fn valid(ids: &[&str]) -> Vec<Attachment> {
    ids.iter()
        .map(|id| Attachment {
            container_id: id.to_string(),
            ifname: "eth0".into(),
        })
        .collect()
}

/// Rules of the test's host that name an address of 10.244.1.0/24 (the pods').
fn rules_of_pods() -> Vec<String> {
    let nft = harness::nft_ruleset();
    let ipt = run_in(None, "iptables-save", &[]);
    nft.lines()
        .chain(ipt.lines())
        .filter(|l| l.contains("10.244.1."))
        .map(str::to_string)
        .collect()
}

/// The chain at `len`-character IDs: pods a, b and c are added and checked;
/// GC keeping a DELs b through its cache entry and collects c, whose entry
/// is gone, through the plugins' own GC; DEL of a leaves nothing.
fn chain_at(backend: &str, len: usize) {
    let d = Dirs::new(&format!("lid-{backend}-{len}"));
    let list = d.list(&chain(&d, backend));
    let rt = d.runtime();
    let (a, b, c) = (long_id(len, 'a'), long_id(len, 'b'), long_id(len, 'c'));
    let pods: Vec<(String, Netns)> = [a, b, c].into_iter().map(|id| (id, Netns::new())).collect();
    for (k, (id, ns)) in pods.iter().enumerate() {
        let result = rt
            .add(&list, &pod_conf(id, ns.path(), k as u16))
            .unwrap_or_else(|e| panic!("ADD at {len} ({backend}): {e}"));
        assert_eq!(
            result["ips"][0]["address"],
            format!("10.244.1.{}/24", k + 2)
        );
        rt.check(&list, &pod_conf(id, ns.path(), k as u16))
            .unwrap_or_else(|e| panic!("CHECK at {len} ({backend}): {e}"));
        // The tuned MTU holds.
        assert!(ns.sh("ip", &["link", "show", "eth0"]).contains("mtu 1400"));
    }
    let state = d.state();
    for want in [
        "flannel/",
        "tuning/",
        "firewall/",
        "bandwidth/",
        "cache/results/",
    ] {
        let n = state.iter().filter(|f| f.contains(want)).count();
        assert_eq!(n, 3, "{want} at {len} ({backend}): {state:#?}");
    }
    let nft_records = state.iter().filter(|f| f.contains("portmap/")).count();
    assert_eq!(nft_records, if backend == "nftables" { 3 } else { 0 });
    assert!(!rules_of_pods().is_empty());

    // c's cache entry goes (a runtime that lost it): only the plugins' GC
    // can collect c.
    let (id_c, _) = &pods[2];
    Cache::new(&d.cache.0)
        .remove(NET, id_c, "eth0")
        .expect("remove c's entry");
    rt.gc(&list, Some(&valid(&[&pods[0].0])))
        .unwrap_or_else(|e| panic!("GC at {len} ({backend}): {e}"));
    let left = d.state();
    for f in &left {
        assert!(
            !f.contains("/10.244.1.3") && !f.contains("/10.244.1.4"),
            "GC left {f} at {len} ({backend})"
        );
    }
    // What is left is a's: one file per plugin and its cache entry, its address.
    let per_plugin = [
        "flannel/",
        "tuning/",
        "firewall/",
        "bandwidth/",
        "cache/results/",
    ];
    for want in per_plugin {
        let n = left.iter().filter(|f| f.contains(want)).count();
        assert_eq!(n, 1, "{want} after GC at {len} ({backend}): {left:#?}");
    }
    let rules = rules_of_pods();
    for ip in ["10.244.1.3", "10.244.1.4"] {
        assert!(
            rules.iter().all(|r| !r.contains(ip)),
            "GC left rules of {ip} at {len} ({backend}): {rules:#?}"
        );
    }
    let (id_a, ns_a) = &pods[0];
    rt.check(&list, &pod_conf(id_a, ns_a.path(), 0))
        .unwrap_or_else(|e| panic!("CHECK of a after GC at {len} ({backend}): {e}"));
    for (k, (id, ns)) in pods.iter().enumerate() {
        rt.del(&list, &pod_conf(id, ns.path(), k as u16))
            .unwrap_or_else(|e| panic!("DEL at {len} ({backend}): {e}"));
        // DEL is idempotent.
        rt.del(&list, &pod_conf(id, ns.path(), k as u16))
            .unwrap_or_else(|e| panic!("second DEL at {len} ({backend}): {e}"));
    }
    assert_eq!(d.state(), Vec::<String>::new(), "at {len} ({backend})");
    assert_eq!(
        rules_of_pods(),
        Vec::<String>::new(),
        "at {len} ({backend})"
    );
    let ifbs = run_in(None, "ip", &["-o", "link", "show", "type", "ifb"]);
    assert!(ifbs.trim().is_empty(), "{ifbs}");
}

#[test]
fn a_chain_with_nftables_keeps_state_names_bounded_at_long_ids() {
    enter_test_host();
    for len in LENGTHS {
        chain_at("nftables", len);
    }
}

#[test]
fn a_chain_with_iptables_keeps_state_names_bounded_at_long_ids() {
    enter_test_host();
    for len in LENGTHS {
        chain_at("iptables", len);
    }
}

/// host-device records the device it moved (`<id>@<ifname>.json`): ADD,
/// CHECK, GC and DEL at long IDs, the device (a veth end) back in the host
/// after DEL.
#[test]
fn host_device_records_fit_at_long_ids() {
    enter_test_host();
    let bin = plugin_dir();
    for len in LENGTHS {
        let state = TempDir::new("lid-hd");
        let store = TempDir::new("lid-hd-store");
        let veth = [
            "link", "add", "lid-dev", "type", "veth", "peer", "name", "lid-peer",
        ];
        run_in(None, "ip", &veth);
        let conf = json!({"cniVersion": "1.1.0", "name": "lid-hd", "type": "host-device",
                          "device": "lid-dev", "dataDir": state.0,
                          "ipam": {"type": "host-local", "subnet": "10.78.0.0/24",
                                   "dataDir": store.0}});
        let id = long_id(len, 'h');
        let ns = Netns::new();
        let call = |cmd: &str, conf: &Value| {
            Call::new("host-device", cmd, ns.path(), &conf.to_string())
                .set("CNI_CONTAINERID", &id)
                .path(&bin)
                .run()
        };
        let result = call("ADD", &conf).ok();
        assert_names_fit(&state.0);
        assert_eq!(files(&state.0).len(), 1, "{:?}", tree(&state.0));
        let mut checked = conf.clone();
        checked["prevResult"] = result;
        call("CHECK", &checked).ok();
        let gc = json!({"cniVersion": "1.1.0", "name": "lid-hd", "type": "host-device",
                        "device": "lid-dev", "dataDir": state.0,
                        "ipam": {"type": "host-local", "subnet": "10.78.0.0/24",
                                 "dataDir": store.0}});
        Call::gc(
            "host-device",
            &gc,
            Some(json!([{"containerID": id, "ifname": "eth0"}])),
        )
        .path(&bin)
        .run()
        .ok();
        assert_eq!(files(&store.0).len(), 1, "GC keeps the valid address");
        call("DEL", &checked).ok();
        call("DEL", &checked).ok();
        assert_eq!(files(&state.0), Vec::<String>::new(), "at {len}");
        assert_eq!(files(&store.0), Vec::<String>::new(), "at {len}");
        assert!(run_in(None, "ip", &["-o", "link", "show", "lid-dev"]).contains("lid-dev"));
        run_in(None, "ip", &["link", "del", "lid-dev"]);
    }
}

/// multus keeps per pod its delegate list (`<cniDir>/<id>`), the pod's
/// network status (`<id>.status`) and its delegates' result cache
/// (`<cniDir>/results/<net>-<id>-<ifname>`): ADD, CHECK, GC and DEL at long IDs.
#[test]
fn multus_per_pod_files_fit_at_long_ids() {
    enter_test_host();
    let bin = plugin_dir();
    for len in LENGTHS {
        let (confd, nads, pods, cni, store) = (
            TempDir::new("lid-m-conf"),
            TempDir::new("lid-m-nads"),
            TempDir::new("lid-m-pods"),
            TempDir::new("lid-m-cni"),
            TempDir::new("lid-m-store"),
        );
        let delegate = json!({"cniVersion": "1.0.0", "name": "lid-ptp", "plugins": [
            {"type": "ptp", "ipam": {"type": "host-local", "subnet": "10.79.0.0/24",
                                     "dataDir": store.0}}]});
        let conf = json!({"cniVersion": "1.1.0", "name": "lid-multus", "type": "multus",
                          "clusterNetwork": "", "delegates": [delegate],
                          "confDir": confd.0, "netAttachDefDir": nads.0, "podDir": pods.0,
                          "cniDir": cni.0, "binDir": bin.0});
        let (a, b) = (long_id(len, 'm'), long_id(len, 'n'));
        let (ns_a, ns_b) = (Netns::new(), Netns::new());
        let call = |cmd: &str, id: &str, ns: &Netns, conf: &Value| {
            Call::new("multus", cmd, ns.path(), &conf.to_string())
                .set("CNI_CONTAINERID", id)
                .set(
                    "CNI_ARGS",
                    &format!(
                        "IgnoreUnknown=1;K8S_POD_NAMESPACE=default;K8S_POD_NAME=p;\
                         K8S_POD_INFRA_CONTAINER_ID={id};K8S_POD_UID=u1"
                    ),
                )
                .path(&bin)
                .run()
        };
        let result = call("ADD", &a, &ns_a, &conf).ok();
        call("ADD", &b, &ns_b, &conf).ok();
        assert_names_fit(&cni.0);
        // Per pod: the delegate list, the status, one cache entry.
        assert_eq!(files(&cni.0).len(), 6, "{:#?}", tree(&cni.0));
        let mut checked = conf.clone();
        checked["prevResult"] = result;
        call("CHECK", &a, &ns_a, &checked).ok();
        Call::gc(
            "multus",
            &conf,
            Some(json!([{"containerID": a, "ifname": "eth0"}])),
        )
        .path(&bin)
        .run()
        .ok();
        assert_eq!(files(&cni.0).len(), 3, "GC leaves a's: {:#?}", tree(&cni.0));
        assert_eq!(files(&store.0).len(), 1, "GC releases b's address");
        assert!(
            ns_b.sh("ip", &["-o", "link"])
                .lines()
                .all(|l| !l.contains("eth0"))
        );
        call("DEL", &a, &ns_a, &checked).ok();
        call("DEL", &a, &ns_a, &checked).ok();
        assert_eq!(files(&cni.0), Vec::<String>::new(), "at {len}");
        assert_eq!(files(&store.0), Vec::<String>::new(), "at {len}");
    }
}

/// `cnitool doctor --json ARGS` over the dirs.
fn doctor(d: &Dirs, args: &[&str]) -> (i32, Vec<Value>) {
    let mut all = vec!["doctor", "--json", "--min-age", "0"];
    all.extend_from_slice(args);
    let out = harness::cnitool_in(&d.conf.0, &d.cache.0, &d.bin.0, &[], &all);
    let v: Value = serde_json::from_str(&out.stdout).unwrap_or_default();
    let found = v["findings"].as_array().cloned().unwrap_or_default();
    assert!(out.status == 0 || out.status == 1, "{out:?}");
    (out.status, found)
}

/// The doctor at long IDs: a dead pod's state, all of it under bounded
/// names, is attributed to its full ID and fixed; an ownerless pod's
/// records and backup are attributed from their content; a live pod's
/// state is kept, and still passes CHECK.
fn doctor_at(len: usize) {
    let d = Dirs::new(&format!("lid-doc-{len}"));
    let list = d.list(&chain(&d, "nftables"));
    let rt = d.runtime();
    let (live, dead, lost) = (long_id(len, 'l'), long_id(len, 'd'), long_id(len, 'o'));
    let ns: Vec<PinnedNetns> = (0..3).map(|_| PinnedNetns::new()).collect();
    let mut live_state = Vec::new();
    for (k, id) in [&live, &dead, &lost].into_iter().enumerate() {
        rt.add(&list, &pod_conf(id, ns[k].path(), k as u16))
            .unwrap_or_else(|e| panic!("ADD at {len}: {e}"));
        if k == 0 {
            live_state = d.state();
        }
    }
    let (status, found) = doctor(&d, &[]);
    assert_eq!((status, &found), (0, &vec![]), "three live pods at {len}");

    let mut ns = ns.into_iter();
    let ns_live = ns.next().expect("live");
    ns.next().expect("dead").destroy();
    Cache::new(&d.cache.0)
        .remove(NET, &lost, "eth0")
        .expect("remove the lost pod's entry");
    ns.next().expect("lost").destroy();
    // The kernel removes a gone namespace's veths in the background.
    for _ in 0..100 {
        let veths = run_in(None, "ip", &["-o", "link", "show", "type", "veth"]);
        if veths.lines().count() == 1 {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }

    let (status, found) = doctor(&d, &[]);
    assert_eq!(status, 1, "{found:#?}");
    let of = |id: &str, kind: &str| {
        found
            .iter()
            .filter(|f| f["kind"] == kind && f["containerId"] == id)
            .count()
    };
    // The dead pod's cache entry, flannel's saved config, tuning's backup,
    // the three records (portmap, firewall, bandwidth), all under its ID.
    for (kind, n) in [("cache", 1), ("flannel", 1), ("tuning", 1), ("record", 3)] {
        assert_eq!(
            of(&dead, kind),
            n,
            "{kind} of the dead pod at {len}: {found:#?}"
        );
    }
    // The lost pod's backup, records and reservation say whose they are.
    for (kind, n) in [("tuning", 1), ("record", 3), ("ipam", 1)] {
        assert_eq!(
            of(&lost, kind),
            n,
            "{kind} of the lost pod at {len}: {found:#?}"
        );
    }
    for f in &found {
        assert_ne!(f["containerId"], json!(live), "the live pod is kept: {f}");
    }

    let (status, found) = doctor(&d, &["--fix"]);
    assert_eq!(status, 0, "{found:#?}");
    assert!(found.iter().all(|f| f["fixed"] == true), "{found:#?}");
    let (status, found) = doctor(&d, &[]);
    assert_eq!((status, &found), (0, &vec![]), "nothing left at {len}");
    assert_eq!(d.state(), live_state, "only the live pod's state at {len}");
    let rules = rules_of_pods();
    for ip in ["10.244.1.3", "10.244.1.4"] {
        assert!(rules.iter().all(|r| !r.contains(ip)), "{ip}: {rules:#?}");
    }
    let conf = pod_conf(&live, ns_live.path(), 0);
    rt.check(&list, &conf)
        .unwrap_or_else(|e| panic!("CHECK of the live pod at {len}: {e}"));
    rt.del(&list, &conf)
        .unwrap_or_else(|e| panic!("DEL of the live pod at {len}: {e}"));
    assert_eq!(d.state(), Vec::<String>::new(), "at {len}");
    ns_live.destroy();
}

#[test]
fn the_doctor_reads_bounded_names_at_long_ids() {
    enter_test_host();
    for len in LENGTHS {
        doctor_at(len);
    }
}

/// The names themselves: where the reference writes a name that fits, it is
/// the reference's; past NAME_MAX the ID gives way to its token.
#[test]
fn names_are_the_references_while_they_fit_and_bounded_past_it() {
    enter_test_host();
    let d = Dirs::new("lid-names");
    let list = d.list(&chain(&d, "nftables"));
    let rt = d.runtime();
    // 255 - "_eth0.json": the longest ID tuning's reference name fits.
    let fits = long_id(NAME_MAX - "_eth0.json".len(), 'f');
    let over = long_id(NAME_MAX, 'g');
    for (k, id) in [&fits, &over].into_iter().enumerate() {
        let ns = Netns::new();
        rt.add(&list, &pod_conf(id, ns.path(), k as u16))
            .unwrap_or_else(|e| panic!("ADD: {e}"));
        let tuning = files(&d.data("tuning"));
        let flannel = files(&d.data("flannel"));
        if id == &fits {
            assert_eq!(tuning, [format!("{id}_eth0.json")]);
            assert_eq!(flannel, std::slice::from_ref(id));
        } else {
            assert_eq!(tuning, [format!("{}_eth0.json", token(id))]);
            // flannel's `<id>` fits at 255.
            assert_eq!(flannel, std::slice::from_ref(id));
            let results = files(&d.cache.0.join("results"));
            assert_eq!(results, [format!("{NET}-{}-eth0", token(id))]);
        }
        rt.del(&list, &pod_conf(id, ns.path(), k as u16))
            .unwrap_or_else(|e| panic!("DEL: {e}"));
        assert_eq!(d.state(), Vec::<String>::new());
    }
    // Over 255, flannel's name is the token too.
    let longer = long_id(NAME_MAX + 1, 'h');
    let ns = Netns::new();
    rt.add(&list, &pod_conf(&longer, ns.path(), 3))
        .unwrap_or_else(|e| panic!("ADD: {e}"));
    assert_eq!(files(&d.data("flannel")), [token(&longer)]);
    rt.del(&list, &pod_conf(&longer, ns.path(), 3))
        .unwrap_or_else(|e| panic!("DEL: {e}"));
    assert_eq!(d.state(), Vec::<String>::new());
}

/// multus configured on the node: a dead pod's per-pod files (delegate
/// list, network status, its delegate's cache entry) under bounded names are
/// found under its full ID and fixed; a lost pod's (no cache entry of the
/// multus network) are attributed from the delegate list and its delegate's
/// entry; a live pod's are kept.
fn multus_doctor_at(len: usize) {
    let d = Dirs::new(&format!("lid-mdoc-{len}"));
    let (nads, pods) = (TempDir::new("lid-mdoc-nads"), TempDir::new("lid-mdoc-pods"));
    let delegate = json!({"cniVersion": "1.0.0", "name": "lid-ptp", "plugins": [
        {"type": "ptp", "ipam": {"type": "host-local", "subnet": "10.79.0.0/24",
                                 "dataDir": d.store.0}}]});
    let list = d.list(
        &json!({"cniVersion": "1.1.0", "name": "lid-multus", "plugins": [
        {"type": "multus", "clusterNetwork": "", "delegates": [delegate],
         "confDir": d.data("multus-conf"), "netAttachDefDir": nads.0, "podDir": pods.0,
         "cniDir": d.data("multus"), "binDir": d.bin.0}]}),
    );
    let rt = d.runtime();
    let conf = |id: &str, netns: &str| RuntimeConf {
        container_id: id.to_string(),
        netns: netns.to_string(),
        ifname: "eth0".into(),
        args: [
            ("IgnoreUnknown", "1"),
            ("K8S_POD_NAMESPACE", "default"),
            ("K8S_POD_NAME", "p"),
            ("K8S_POD_INFRA_CONTAINER_ID", id),
        ]
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .into(),
        capability_args: Map::new(),
    };
    let (live, dead, lost) = (long_id(len, 'L'), long_id(len, 'D'), long_id(len, 'O'));
    let ns: Vec<PinnedNetns> = (0..3).map(|_| PinnedNetns::new()).collect();
    let mut live_state = Vec::new();
    for (k, id) in [&live, &dead, &lost].into_iter().enumerate() {
        rt.add(&list, &conf(id, ns[k].path()))
            .unwrap_or_else(|e| panic!("multus ADD at {len}: {e}"));
        if k == 0 {
            live_state = d.state();
        }
    }
    let (status, found) = doctor(&d, &[]);
    assert_eq!((status, &found), (0, &vec![]), "three live pods at {len}");
    let mut ns = ns.into_iter();
    let ns_live = ns.next().expect("live");
    ns.next().expect("dead").destroy();
    Cache::new(&d.cache.0)
        .remove("lid-multus", &lost, "eth0")
        .expect("remove the lost pod's entry");
    ns.next().expect("lost").destroy();

    let (status, found) = doctor(&d, &[]);
    assert_eq!(status, 1, "{found:#?}");
    let of = |id: &str, kind: &str| {
        found
            .iter()
            .filter(|f| f["kind"] == kind && f["containerId"] == id)
            .count()
    };
    // Each: the delegate list and the status; the dead pod's two cache
    // entries (multus's, its delegate's), the lost pod's delegate's.
    for (id, caches) in [(&dead, 2), (&lost, 1)] {
        assert_eq!(of(id, "multus"), 2, "multus files at {len}: {found:#?}");
        assert_eq!(
            of(id, "cache"),
            caches,
            "cache entries at {len}: {found:#?}"
        );
    }
    for f in &found {
        assert_ne!(f["containerId"], json!(live), "the live pod is kept: {f}");
    }
    let (status, found) = doctor(&d, &["--fix"]);
    assert_eq!(status, 0, "{found:#?}");
    let (status, found) = doctor(&d, &[]);
    assert_eq!((status, &found), (0, &vec![]), "nothing left at {len}");
    assert_eq!(d.state(), live_state, "only the live pod's state at {len}");
    rt.check(&list, &conf(&live, ns_live.path()))
        .unwrap_or_else(|e| panic!("CHECK of the live pod at {len}: {e}"));
    rt.del(&list, &conf(&live, ns_live.path()))
        .unwrap_or_else(|e| panic!("DEL of the live pod at {len}: {e}"));
    assert_eq!(d.state(), Vec::<String>::new(), "at {len}");
    ns_live.destroy();
}

#[test]
fn the_doctor_reads_multus_bounded_names_at_long_ids() {
    enter_test_host();
    for len in LENGTHS {
        multus_doctor_at(len);
    }
}

/// An ADD that cannot write its state fails (with a CNI error naming the
/// file) instead of succeeding with nothing for DEL and GC to find: each
/// plugin of the chain in turn with its `dataDir` under a regular file, at
/// a long ID. DEL with the dataDir fixed then leaves nothing.
#[test]
fn an_add_that_cannot_write_its_state_fails() {
    enter_test_host();
    let id = long_id(1000, 'w');
    for (i, plugin) in ["flannel", "tuning", "portmap", "firewall", "bandwidth"]
        .into_iter()
        .enumerate()
    {
        let d = Dirs::new(&format!("lid-nowrite-{plugin}"));
        let good = chain(&d, "nftables");
        let mut broken = good.clone();
        broken["plugins"][i]["dataDir"] = json!(d.data("subnet.env").join("state"));
        let broken_list = d.list(&broken);
        let ns = Netns::new();
        let e = d
            .runtime()
            .add(&broken_list, &pod_conf(&id, ns.path(), 0))
            .err()
            .unwrap_or_else(|| panic!("{plugin}: ADD succeeded without its state"));
        assert!(
            e.msg.contains(&format!("type=\"{plugin}\"")) && e.msg.contains("subnet.env/state"),
            "{plugin}: {e}"
        );
        d.runtime()
            .del(&d.list(&good), &pod_conf(&id, ns.path(), 0))
            .unwrap_or_else(|e| panic!("{plugin}: DEL: {e}"));
        assert_eq!(d.state(), Vec::<String>::new(), "{plugin}");
        assert_eq!(rules_of_pods(), Vec::<String>::new(), "{plugin}");
    }
}

/// What the issue saw, plugin by plugin as a runtime calls them: portmap
/// (each backend) and the firewall, ADD, CHECK, GC and DEL at long IDs with
/// no namespace needed. Before, portmap's iptables ADD succeeded without a
/// record and its DEL failed for ever with "File name too long"; the
/// nftables ADD and the firewall's failed outright.
#[test]
fn portmap_and_firewall_add_and_del_at_long_ids() {
    enter_test_host();
    let bin = plugin_dir();
    for len in LENGTHS {
        let id = long_id(len, 'p');
        for (plugin, backend) in [
            ("portmap", "iptables"),
            ("portmap", "nftables"),
            ("firewall", "iptables"),
            ("firewall", "nftables"),
        ] {
            let data = TempDir::new("lid-direct");
            let conf = json!({"cniVersion": "1.1.0", "name": "lid-direct", "type": plugin,
                              "backend": backend, "dataDir": data.0,
                              "runtimeConfig": {"portMappings": [
                                  {"hostPort": 9200, "containerPort": 80, "protocol": "tcp"}]},
                              "prevResult": {"cniVersion": "1.1.0",
                                             "ips": [{"address": "10.244.1.9/24"}]}});
            let call = |cmd: &str| {
                Call::new(plugin, cmd, "/run/netns/lid-none", &conf.to_string())
                    .set("CNI_CONTAINERID", &id)
                    .path(&bin)
                    .run()
            };
            let what = format!("{plugin} ({backend}) at {len}");
            let out = call("ADD");
            assert_eq!(out.status, 0, "{what}: {out:?}");
            assert_names_fit(&data.0);
            assert!(!rules_of_pods().is_empty(), "{what}");
            let out = call("CHECK");
            assert_eq!(out.status, 0, "{what}: {out:?}");
            let mut gc = conf.clone();
            gc["cni.dev/valid-attachments"] = json!([{"containerID": id, "ifname": "eth0"}]);
            let kept = Call::gc(plugin, &gc, None).path(&bin).run();
            assert_eq!(kept.status, 0, "{what}: {kept:?}");
            assert!(!rules_of_pods().is_empty(), "GC keeps a valid one: {what}");
            for _ in 0..2 {
                let out = call("DEL");
                assert_eq!(out.status, 0, "{what}: {out:?}");
            }
            assert_eq!(files(&data.0), Vec::<String>::new(), "{what}");
            assert_eq!(rules_of_pods(), Vec::<String>::new(), "{what}");
        }
    }
}

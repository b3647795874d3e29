//! multus end to end, from the files in testdata/multus: the default network
//! plus selected NADs (eth0, net1, net2), the network-status file against its
//! fixture, the JSON selection's ips/mac/interface/default-route, rollback of
//! a failed ADD, DEL after the NAD and pod files are gone, the spec's selection
//! edge cases, GC and STATUS, and a run through `cni-multi cnitool` with the
//! pod annotations in CAP_ARGS.

use crate::harness;

use harness::{Call, Netns, Outcome, TempDir, enter_test_host, make_eth0, plugin_dir};
use serde_json::{Value, json};
use std::path::Path;

const UID: &str = "6f1c2a9e-3b1d-4c1e-9a51-0d3c2b8e7f01";

/// Points every host-local `dataDir` of a config (single or list) at `store`.
fn with_store(config: &mut Value, store: &Path) {
    let plugins: Vec<&mut Value> = if config.get("plugins").is_some_and(Value::is_array) {
        config["plugins"]
            .as_array_mut()
            .into_iter()
            .flatten()
            .collect()
    } else {
        vec![config]
    };
    for p in plugins {
        if p["ipam"]["type"] == "host-local" {
            p["ipam"]["dataDir"] = json!(store);
        }
    }
}

/// The dirs of one multus setup, filled from testdata/multus.
struct Setup {
    conf: TempDir,
    nads: TempDir,
    pods: TempDir,
    cni: TempDir,
    store: TempDir,
    bin: TempDir,
}

impl Setup {
    fn new() -> Setup {
        let s = Setup {
            conf: TempDir::new("multus-conf"),
            nads: TempDir::new("multus-nads"),
            pods: TempDir::new("multus-pods"),
            cni: TempDir::new("multus-cni"),
            store: TempDir::new("multus-store"),
            bin: plugin_dir(),
        };
        for entry in std::fs::read_dir("testdata/multus/net.d").expect("net.d") {
            let path = entry.expect("entry").path();
            let mut v: Value = read_json(&path);
            with_store(&mut v, &s.store.0);
            write_json(&s.conf.0.join(path.file_name().expect("name")), &v);
        }
        for entry in std::fs::read_dir("testdata/multus/net-attach-defs").expect("nads") {
            let path = entry.expect("entry").path();
            let mut v: Value = read_json(&path);
            let objects: Vec<&mut Value> = if v.get("items").is_some_and(Value::is_array) {
                v["items"].as_array_mut().into_iter().flatten().collect()
            } else {
                vec![&mut v]
            };
            for o in objects {
                if let Some(text) = o["spec"]["config"].as_str() {
                    let mut config: Value = serde_json::from_str(text).expect("spec.config");
                    with_store(&mut config, &s.store.0);
                    o["spec"]["config"] = json!(config.to_string());
                }
            }
            write_json(&s.nads.0.join(path.file_name().expect("name")), &v);
        }
        let pod_dir = s.pods.0.join("default");
        std::fs::create_dir_all(&pod_dir).expect("pod dir");
        std::fs::copy(
            "testdata/multus/pods/default/web-1.json",
            pod_dir.join("web-1.json"),
        )
        .expect("pod file");
        s
    }

    /// The multus plugin of testdata/multus/00-multus.conflist with its paths
    /// pointed at this setup, as libcni hands it over (name and version set),
    /// plus `extra` keys.
    fn conf(&self, extra: Value) -> Value {
        let list: Value = read_json(Path::new("testdata/multus/00-multus.conflist"));
        let mut c = list["plugins"][0].clone();
        c["name"] = list["name"].clone();
        c["cniVersion"] = list["cniVersion"].clone();
        c["confDir"] = json!(self.conf.0);
        c["netAttachDefDir"] = json!(self.nads.0);
        c["podDir"] = json!(self.pods.0);
        c["cniDir"] = json!(self.cni.0);
        c["binDir"] = json!(self.bin.0);
        if let (Some(c), Value::Object(extra)) = (c.as_object_mut(), extra) {
            c.extend(extra);
        }
        c
    }

    /// A NAD of one's own, its host-local store this setup's.
    fn add_nad(&self, namespace: &str, name: &str, mut config: Value) {
        with_store(&mut config, &self.store.0);
        let nad = json!({
            "apiVersion": "k8s.cni.cncf.io/v1", "kind": "NetworkAttachmentDefinition",
            "metadata": {"name": name, "namespace": namespace},
            "spec": {"config": config.to_string()}
        });
        write_json(&self.nads.0.join(format!("{namespace}-{name}.json")), &nad);
    }

    /// A multus call for pod `namespace/name` in `ns`, as a Kubernetes runtime makes it.
    fn call(&self, cmd: &str, ns: &Netns, id: &str, conf: &Value, pod: (&str, &str)) -> Call {
        Call::new("multus", cmd, ns.path(), &conf.to_string())
            .set("CNI_CONTAINERID", id)
            .set(
                "CNI_ARGS",
                &format!(
                    "IgnoreUnknown=1;K8S_POD_NAMESPACE={};K8S_POD_NAME={};\
                     K8S_POD_INFRA_CONTAINER_ID={id};K8S_POD_UID={UID}",
                    pod.0, pod.1
                ),
            )
            .path(&self.bin)
    }

    /// The addresses host-local holds for `network`.
    fn held(&self, network: &str) -> Vec<String> {
        let mut ips: Vec<String> = std::fs::read_dir(self.store.0.join(network))
            .map(|d| {
                d.flatten()
                    .map(|e| e.file_name().to_string_lossy().into_owned())
                    .filter(|n| n.parse::<std::net::IpAddr>().is_ok())
                    .collect()
            })
            .unwrap_or_default();
        ips.sort();
        ips
    }

    /// Files of cniDir (the results directory aside) and of its result cache.
    fn state(&self) -> (Vec<String>, Vec<String>) {
        let names = |p: &Path| -> Vec<String> {
            let mut v: Vec<String> = std::fs::read_dir(p)
                .map(|d| {
                    d.flatten()
                        .map(|e| e.file_name().to_string_lossy().into_owned())
                        .filter(|n| n != "results")
                        .collect()
                })
                .unwrap_or_default();
            v.sort();
            v
        };
        (names(&self.cni.0), names(&self.cni.0.join("results")))
    }
}

fn read_json(path: &Path) -> Value {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn write_json(path: &Path, v: &Value) {
    std::fs::write(path, serde_json::to_string_pretty(v).expect("json")).expect("write");
}

/// Link names of the pod, lo aside.
fn links(ns: &Netns) -> Vec<String> {
    let v: Value = serde_json::from_str(&ns.sh("ip", &["-j", "link"])).expect("ip json");
    let mut names: Vec<String> = v
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|l| l["ifname"].as_str().map(String::from))
        .filter(|n| n != "lo")
        .collect();
    names.sort();
    names
}

/// `address/prefix` of every IPv4 address of `dev`, and its MAC.
fn iface(ns: &Netns, dev: &str) -> (Vec<String>, String) {
    let v: Value = serde_json::from_str(&ns.sh("ip", &["-j", "-4", "addr", "show", "dev", dev]))
        .expect("ip json");
    let addrs = v[0]["addr_info"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|a| {
            format!(
                "{}/{}",
                a["local"].as_str().unwrap_or_default(),
                a["prefixlen"]
            )
        })
        .collect();
    let v: Value =
        serde_json::from_str(&ns.sh("ip", &["-j", "link", "show", "dev", dev])).expect("ip json");
    (
        addrs,
        v[0]["address"].as_str().unwrap_or_default().to_string(),
    )
}

fn msg(e: &Value) -> String {
    e["msg"].as_str().unwrap_or_default().to_string()
}

#[test]
fn a_pod_gets_the_default_network_and_two_nads_and_del_needs_no_files() {
    enter_test_host();
    make_eth0();
    let s = Setup::new();
    let conf = s.conf(json!({}));
    let ns = Netns::new();
    // The selection comes from the pod file (comma format: macvlan-conf,data-net).
    let out = s
        .call("ADD", &ns, "pod-1", &conf, ("default", "web-1"))
        .run()
        .ok();
    // The printed result is the default network's.
    assert_eq!(out["cniVersion"], "1.0.0");
    assert_eq!(out["ips"][0]["address"], "10.244.0.2/24", "{out}");
    assert_eq!(links(&ns), ["eth0", "net1", "net2"]);
    let (eth0, eth0_mac) = iface(&ns, "eth0");
    let (net1, net1_mac) = iface(&ns, "net1");
    let (net2, net2_mac) = iface(&ns, "net2");
    assert_eq!(eth0, ["10.244.0.2/24"]);
    assert_eq!(net1, ["192.168.77.100/24"]);
    assert_eq!(net2, ["10.10.0.2/24"]);
    assert!(
        ns.sh("ip", &["-d", "link", "show", "net1"])
            .contains("macvlan mode bridge"),
        "net1 is the macvlan"
    );
    // Each attachment is its own libcni attachment: result cache under cniDir.
    let (files, results) = s.state();
    assert_eq!(files, ["pod-1", "pod-1.status"]);
    assert_eq!(
        results,
        [
            "cbr0-pod-1-eth0",
            "data-net-pod-1-net2",
            "macvlan-conf-pod-1-net1"
        ]
    );
    // The network-status, byte for byte.
    let status = std::fs::read_to_string(s.cni.0.join("pod-1.status")).expect("status");
    let expected = std::fs::read_to_string("testdata/multus/network-status.json")
        .expect("fixture")
        .trim_end()
        .replace("@ETH0_MAC@", &eth0_mac)
        .replace("@NET1_MAC@", &net1_mac)
        .replace("@NET2_MAC@", &net2_mac);
    assert_eq!(status, expected);
    // CHECK replays the cached list.
    s.call("CHECK", &ns, "pod-1", &conf, ("default", "web-1"))
        .run()
        .ok();

    // DEL works from the cached delegate list alone.
    std::fs::remove_dir_all(&s.nads.0).expect("remove NADs");
    std::fs::remove_dir_all(&s.pods.0).expect("remove pods");
    s.call("DEL", &ns, "pod-1", &conf, ("default", "web-1"))
        .run()
        .ok();
    assert!(links(&ns).is_empty(), "{:?}", links(&ns));
    for net in ["cbr0", "macvlan-conf", "data-net"] {
        assert!(s.held(net).is_empty(), "{net}: {:?}", s.held(net));
    }
    assert_eq!(s.state(), (vec![], vec![]));
    // DEL again: nothing cached, no pod file: success.
    s.call("DEL", &ns, "pod-1", &conf, ("default", "web-1"))
        .run()
        .ok();
}

#[test]
fn the_json_selection_honours_ips_mac_interface_and_default_route() {
    enter_test_host();
    make_eth0();
    let s = Setup::new();
    // The annotations come the way containerd and CRI-O send them.
    let selection = json!([{
        "name": "macvlan-conf",
        "interface": "data0",
        "ips": ["192.168.77.150"],
        "mac": "02:00:00:00:77:50",
        "default-route": ["192.168.77.1"]
    }]);
    let conf = s.conf(
        json!({"runtimeConfig": {"io.kubernetes.cri.pod-annotations": {
            "k8s.v1.cni.cncf.io/networks": selection.to_string()
        }}}),
    );
    let ns = Netns::new();
    s.call("ADD", &ns, "pod-2", &conf, ("default", "web-2"))
        .run()
        .ok();
    assert_eq!(links(&ns), ["data0", "eth0"]);
    // The address arrived twice (IP= and the ips capability): one request.
    assert_eq!(
        iface(&ns, "data0"),
        (
            vec!["192.168.77.150/24".to_string()],
            "02:00:00:00:77:50".to_string()
        )
    );
    assert_eq!(s.held("macvlan-conf"), ["192.168.77.150"]);
    // The default route moved to data0; eth0 kept its subnet route only.
    let routes = ns.sh("ip", &["-4", "route", "show", "default"]);
    assert_eq!(
        routes.trim(),
        "default via 192.168.77.1 dev data0",
        "{routes}"
    );
    // ...and the cached results say so, so CHECK agrees.
    let cached = read_json(&s.cni.0.join("results/cbr0-pod-2-eth0"));
    assert!(cached["result"].get("routes").is_none(), "{cached}");
    let cached = read_json(&s.cni.0.join("results/macvlan-conf-pod-2-data0"));
    assert_eq!(
        cached["result"]["routes"],
        json!([{"dst": "0.0.0.0/0", "gw": "192.168.77.1"}])
    );
    s.call("CHECK", &ns, "pod-2", &conf, ("default", "web-2"))
        .run()
        .ok();
    let status: Value = read_json(&s.cni.0.join("pod-2.status"));
    assert_eq!(status[1]["name"], "default/macvlan-conf");
    assert_eq!(status[1]["interface"], "data0");
    assert_eq!(status[1]["ips"], json!(["192.168.77.150"]));
    assert_eq!(status[1]["mac"], "02:00:00:00:77:50");
    s.call("DEL", &ns, "pod-2", &conf, ("default", "web-2"))
        .run()
        .ok();
    assert!(links(&ns).is_empty());
    assert!(s.held("macvlan-conf").is_empty());
}

#[test]
fn a_failing_second_selection_leaves_nothing_attached() {
    enter_test_host();
    let s = Setup::new();
    s.add_nad(
        "default",
        "broken-net",
        json!({"cniVersion": "1.0.0", "type": "macvlan", "master": "no-such-master",
               "ipam": {"type": "host-local", "ranges": [[{"subnet": "10.30.0.0/24"}]]}}),
    );
    let conf = s.conf(
        json!({"runtimeConfig": {"io.kubernetes.cri.pod-annotations": {
            "k8s.v1.cni.cncf.io/networks": "data-net,broken-net"
        }}}),
    );
    let ns = Netns::new();
    let out = s
        .call("ADD", &ns, "pod-3", &conf, ("default", "web-3"))
        .run();
    assert_eq!(out.status, 1, "{out:?}");
    let e = out.json();
    assert!(
        msg(&e).starts_with(&format!(
            "[default/web-3/{UID}:broken-net]: error adding container to network \"broken-net\": "
        )),
        "{e}"
    );
    assert!(msg(&e).contains("no-such-master"), "{e}");
    // The first selection and the default network were taken down again.
    assert!(links(&ns).is_empty(), "{:?}", links(&ns));
    for net in ["cbr0", "data-net", "broken-net"] {
        assert!(s.held(net).is_empty(), "{net}: {:?}", s.held(net));
    }
    assert_eq!(s.state(), (vec![], vec![]));
    // The runtime's DEL after a failed ADD succeeds.
    s.call("DEL", &ns, "pod-3", &conf, ("default", "web-3"))
        .run()
        .ok();
}

/// ADD of pod `namespace/name` selecting `networks` (pod annotations capability).
fn add_selecting(
    s: &Setup,
    ns: &Netns,
    id: &str,
    pod: (&str, &str),
    networks: &str,
    extra: Value,
) -> (Outcome, Value) {
    let mut conf = s.conf(extra);
    conf["runtimeConfig"] =
        json!({"io.kubernetes.cri.pod-annotations": {"k8s.v1.cni.cncf.io/networks": networks}});
    (s.call("ADD", ns, id, &conf, pod).run(), conf)
}

#[test]
fn selection_edge_cases_follow_the_spec() {
    enter_test_host();
    let s = Setup::new();
    s.add_nad(
        "team-b",
        "other-net",
        json!({"cniVersion": "1.0.0", "name": "other-net", "type": "bridge", "bridge": "br-other",
               "ipam": {"type": "host-local", "ranges": [[{"subnet": "10.40.0.0/24"}]]}}),
    );
    let isolated = json!({"namespaceIsolation": true});
    let ns = Netns::new();

    // Namespace isolation on: another namespace is refused, before anything is attached...
    let (out, _) = add_selecting(
        &s,
        &ns,
        "i-1",
        ("team-a", "p"),
        "team-b/other-net",
        isolated.clone(),
    );
    let e = out.err(7);
    assert!(msg(&e).contains("namespace isolation enabled"), "{e}");
    assert!(msg(&e).contains("team-b"), "{e}");
    assert!(links(&ns).is_empty());
    // ...the global namespaces ("default" unless globalNamespaces says) are not...
    let (out, conf) = add_selecting(
        &s,
        &ns,
        "i-2",
        ("team-a", "p"),
        "default/data-net",
        isolated.clone(),
    );
    out.ok();
    assert_eq!(links(&ns), ["eth0", "net1"]);
    s.call("DEL", &ns, "i-2", &conf, ("team-a", "p")).run().ok();
    let global = json!({"namespaceIsolation": true, "globalNamespaces": "default, team-b"});
    let (out, conf) = add_selecting(&s, &ns, "i-3", ("team-a", "p"), "team-b/other-net", global);
    out.ok();
    s.call("DEL", &ns, "i-3", &conf, ("team-a", "p")).run().ok();
    // ...and with isolation off anything goes.
    let (out, conf) = add_selecting(
        &s,
        &ns,
        "i-4",
        ("team-a", "p"),
        "team-b/other-net",
        json!({}),
    );
    out.ok();
    // (host-local hands addresses out round-robin: i-3 had .2.)
    assert_eq!(iface(&ns, "net1").0, ["10.40.0.3/24"]);
    s.call("DEL", &ns, "i-4", &conf, ("team-a", "p")).run().ok();
    assert!(links(&ns).is_empty());

    // Bad entries are refused, naming them, with nothing attached.
    for (networks, what) in [
        (
            r#"[{"name":"data-net","ips":["10.10.0.300"]}]"#,
            "failed to parse IP address \"10.10.0.300\"",
        ),
        (
            r#"[{"name":"data-net","mac":"02:00:00"}]"#,
            "failed to parse mac",
        ),
        ("data-net@this-name-is-too-long", "interface name"),
        ("Data-Net", "not a DNS-1123 label"),
        (
            "data-net@eth0",
            "interface name \"eth0\" of network default/data-net is already used by network cbr0",
        ),
        (
            "nope",
            "cannot find a network-attachment-definition (nope) in namespace (default)",
        ),
    ] {
        let (out, _) = add_selecting(&s, &ns, "bad", ("default", "p"), networks, json!({}));
        let e = out.err(7);
        assert!(msg(&e).contains(what), "{networks}: {e}");
        assert!(links(&ns).is_empty(), "{networks}: {:?}", links(&ns));
        assert!(s.held("cbr0").is_empty(), "{networks}");
    }
    // An interface name the pod already has fails that attachment; the
    // default network is taken down again.
    ns.sh(
        "ip",
        &[
            "link", "add", "net1", "type", "veth", "peer", "name", "peer1",
        ],
    );
    let (out, _) = add_selecting(&s, &ns, "clash", ("default", "p"), "data-net", json!({}));
    let e = out.err(7);
    assert!(
        msg(&e).contains("interface name net1 already exists"),
        "{e}"
    );
    assert_eq!(links(&ns), ["net1", "peer1"]);
    assert!(s.held("cbr0").is_empty());
    ns.sh("ip", &["link", "del", "net1"]);

    // The same network twice is two attachments.
    let (out, conf) = add_selecting(
        &s,
        &ns,
        "twice",
        ("default", "p"),
        "data-net,data-net",
        json!({}),
    );
    out.ok();
    assert_eq!(links(&ns), ["eth0", "net1", "net2"]);
    // (i-2 had 10.10.0.2.)
    assert_eq!(iface(&ns, "net1").0, ["10.10.0.3/24"]);
    assert_eq!(iface(&ns, "net2").0, ["10.10.0.4/24"]);
    let status: Value = read_json(&s.cni.0.join("twice.status"));
    assert_eq!(status.as_array().map(Vec::len), Some(3));
    assert_eq!(status[1]["name"], status[2]["name"]);
    s.call("DEL", &ns, "twice", &conf, ("default", "p"))
        .run()
        .ok();
    assert!(s.held("data-net").is_empty());
    assert!(links(&ns).is_empty());

    // A NAD without spec.config is the config of that name in confDir.
    let (out, conf) = add_selecting(&s, &ns, "disk", ("default", "p"), "storage-net", json!({}));
    out.ok();
    assert_eq!(iface(&ns, "net1").0, ["10.20.0.2/24"]);
    s.call("DEL", &ns, "disk", &conf, ("default", "p"))
        .run()
        .ok();
    assert_eq!(s.state(), (vec![], vec![]));
}

#[test]
fn status_waits_for_the_readiness_file_and_gc_deletes_stale_pods() {
    enter_test_host();
    let s = Setup::new();
    let run = TempDir::new("multus-run");
    let ready = run.0.join("ready");
    let mut conf = s.conf(json!({"readinessindicatorfile": ready}));
    conf["cniVersion"] = json!("1.1.0");
    let ns_a = Netns::new();
    let ns_b = Netns::new();
    let status = Call::new("multus", "STATUS", "", &conf.to_string())
        .unset("CNI_CONTAINERID")
        .unset("CNI_NETNS")
        .unset("CNI_IFNAME")
        .path(&s.bin);
    let e = status.run().err(50);
    assert!(msg(&e).contains("readinessindicatorfile"), "{e}");
    // ADD waits for it too (the runtime retries).
    let (out, _) = add_selecting(
        &s,
        &ns_a,
        "pod-a",
        ("default", "a"),
        "data-net",
        json!({"readinessindicatorfile": ready}),
    );
    out.err(11);
    std::fs::write(&ready, "").expect("ready");
    status.run().ok();

    let mut with_ready = conf.clone();
    with_ready["runtimeConfig"] =
        json!({"io.kubernetes.cri.pod-annotations": {"k8s.v1.cni.cncf.io/networks": "data-net"}});
    s.call("ADD", &ns_a, "pod-a", &with_ready, ("default", "a"))
        .run()
        .ok();
    s.call("ADD", &ns_b, "pod-b", &with_ready, ("default", "b"))
        .run()
        .ok();
    assert_eq!(s.held("data-net"), ["10.10.0.2", "10.10.0.3"]);
    let mut gc = conf.clone();
    gc["cni.dev/valid-attachments"] = json!([{"containerID": "pod-a", "ifname": "eth0"}]);
    Call::new("multus", "GC", "", &gc.to_string())
        .unset("CNI_CONTAINERID")
        .unset("CNI_NETNS")
        .unset("CNI_IFNAME")
        .path(&s.bin)
        .run()
        .ok();
    assert_eq!(links(&ns_a), ["eth0", "net1"]);
    assert!(links(&ns_b).is_empty(), "{:?}", links(&ns_b));
    assert_eq!(s.held("data-net"), ["10.10.0.2"]);
    assert_eq!(s.held("cbr0"), ["10.244.0.2"]);
    let (files, _) = s.state();
    assert_eq!(files, ["pod-a", "pod-a.status"]);
}

#[test]
fn cnitool_add_with_the_pod_annotations_in_cap_args() {
    enter_test_host();
    make_eth0();
    let s = Setup::new();
    let net_d = TempDir::new("multus-netd");
    let cache = TempDir::new("multus-cnitool-cache");
    let mut list: Value = read_json(Path::new("testdata/multus/00-multus.conflist"));
    let plugin = s.conf(json!({}));
    for key in ["confDir", "netAttachDefDir", "podDir", "cniDir", "binDir"] {
        list["plugins"][0][key] = plugin[key].clone();
    }
    write_json(&net_d.0.join("00-multus.conflist"), &list);
    let ns = Netns::new();
    let cnitool = |args: &[&str]| -> Outcome {
        let child = std::process::Command::new(harness::BIN)
            .arg("cnitool")
            .arg("--cache-dir")
            .arg(&cache.0)
            .args(args)
            .env_clear()
            .env("NETCONFPATH", &net_d.0)
            .env("CNI_PATH", &s.bin.0)
            .env(
                "CNI_ARGS",
                "IgnoreUnknown=1;K8S_POD_NAMESPACE=default;K8S_POD_NAME=web-9;K8S_POD_INFRA_CONTAINER_ID=abc;K8S_POD_UID=u9",
            )
            .env(
                "CAP_ARGS",
                json!({"io.kubernetes.cri.pod-annotations": {
                    "k8s.v1.cni.cncf.io/networks": "macvlan-conf,data-net",
                    "unrelated": "x"
                }})
                .to_string(),
            )
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("spawn cnitool");
        Outcome::of(child)
    };
    let out = cnitool(&["add", "multus-cni-network", ns.path()]);
    let result = out.ok();
    assert_eq!(result["ips"][0]["address"], "10.244.0.2/24", "{out:?}");
    assert_eq!(links(&ns), ["eth0", "net1", "net2"]);
    assert_eq!(iface(&ns, "net1").0, ["192.168.77.100/24"]);
    assert_eq!(iface(&ns, "net2").0, ["10.10.0.2/24"]);
    // status-of finds the pod by the netns cnitool added it with.
    let out = cnitool(&[
        "status-of",
        "--cni-dir",
        &s.cni.0.to_string_lossy(),
        ns.path(),
    ]);
    assert_eq!(out.status, 0, "{out:?}");
    let status: Value = serde_json::from_str(&out.stdout).expect("status JSON");
    let names: Vec<&str> = status
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|e| e["name"].as_str())
        .collect();
    assert_eq!(names, ["cbr0", "default/macvlan-conf", "default/data-net"]);
    assert_eq!(status[0]["default"], true);
    cnitool(&["del", "multus-cni-network", ns.path()]).ok();
    assert!(links(&ns).is_empty());
    assert_eq!(s.state(), (vec![], vec![]));
    let out = cnitool(&[
        "status-of",
        "--cni-dir",
        &s.cni.0.to_string_lossy(),
        ns.path(),
    ]);
    assert_eq!(out.status, 1);
    assert!(out.stderr.contains("no network status"), "{out:?}");
}

/// A NAD with annotations, as a cluster admin writes one.
fn add_nad_annotated(s: &Setup, namespace: &str, name: &str, annotations: Value, config: Value) {
    let nad = json!({
        "apiVersion": "k8s.cni.cncf.io/v1", "kind": "NetworkAttachmentDefinition",
        "metadata": {"name": name, "namespace": namespace, "annotations": annotations},
        "spec": {"config": config.to_string()}
    });
    write_json(&s.nads.0.join(format!("{namespace}-{name}.json")), &nad);
}

/// A plugin that keeps the stdin of its last ADD in `<dir>/<name>.<CNI_IFNAME>.stdin`.
fn stdin_recorder(s: &Setup, name: &str, dir: &Path) {
    stdin_recorder_in(&s.bin.0, name, dir);
}

/// `stdin_recorder`, installed in `bin`.
fn stdin_recorder_in(bin: &Path, name: &str, dir: &Path) {
    use std::os::unix::fs::PermissionsExt;
    let script = format!(
        "#!/bin/sh\n\
         [ \"$CNI_COMMAND\" = VERSION ] && {{ printf '{{\"cniVersion\":\"1.0.0\",\"supportedVersions\":[\"1.0.0\"]}}'; exit 0; }}\n\
         [ \"$CNI_COMMAND\" = ADD ] && {{ cat > '{dir}/{name}.'\"$CNI_IFNAME\"'.stdin'; printf '{{\"cniVersion\":\"1.0.0\"}}'; }}\n\
         exit 0\n",
        dir = dir.display()
    );
    let path = bin.join(name);
    std::fs::write(&path, script).expect("script");
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).expect("chmod");
}

const RESOURCE: &str = "k8s.v1.cni.cncf.io/resourceName";

/// The tenant names a PCI device (here the node's own NIC's address) for a
/// NAD whose devices come from a device-plugin pool: host-device would have
/// moved that device into the pod. Refused, naming the NAD, before anything
/// is attached.
#[test]
fn a_tenant_cannot_pick_the_device_of_a_resource_pool() {
    enter_test_host();
    let s = Setup::new();
    add_nad_annotated(
        &s,
        "default",
        "sriov-net",
        json!({RESOURCE: "intel.com/sriov"}),
        json!({"cniVersion": "1.0.0", "name": "sriov-net", "type": "host-device"}),
    );
    let ns = Netns::new();
    let (out, _) = add_selecting(
        &s,
        &ns,
        "dev-1",
        ("default", "p"),
        r#"[{"name":"sriov-net","deviceID":"0000:00:03.0"}]"#,
        json!({}),
    );
    let e = out.err(7);
    assert!(msg(&e).contains("default/sriov-net"), "{e}");
    assert!(
        msg(&e).contains("deviceID \"0000:00:03.0\" is refused"),
        "{e}"
    );
    assert!(links(&ns).is_empty(), "{:?}", links(&ns));
    assert!(s.held("cbr0").is_empty());
}

/// The device of a pool attachment is the one its device-info file (the
/// NPWG Device Information spec's, for this pod and network) names.
#[test]
fn a_resource_pool_attachment_gets_the_device_of_its_device_info_file() {
    enter_test_host();
    let s = Setup::new();
    let log = TempDir::new("multus-devrec");
    stdin_recorder(&s, "devrec", &log.0);
    add_nad_annotated(
        &s,
        "default",
        "pool-net",
        json!({RESOURCE: "example.com/pool"}),
        json!({"cniVersion": "1.0.0", "name": "pool-net", "type": "devrec",
               "capabilities": {"deviceID": true, "CNIDeviceInfoFile": true}}),
    );
    let ns = Netns::new();
    let id = format!("devinfo-{}", std::process::id());
    let dir = Path::new("/var/run/k8s.cni.cncf.io/devinfo/cni");
    std::fs::create_dir_all(dir).expect("devinfo dir");
    let info = dir.join(format!("default-pool-net-{id}_net1"));
    std::fs::write(
        &info,
        r#"{"type":"pci","version":"1.1.0","pci":{"pci-address":"0000:af:00.1"}}"#,
    )
    .expect("device-info file");
    let (out, conf) = add_selecting(&s, &ns, &id, ("default", "p"), "pool-net", json!({}));
    out.ok();
    let stdin = read_json(&log.0.join("devrec.net1.stdin"));
    assert_eq!(
        stdin["runtimeConfig"]["deviceID"], "0000:af:00.1",
        "{stdin}"
    );
    assert_eq!(
        stdin["runtimeConfig"]["CNIDeviceInfoFile"],
        info.to_str().expect("path"),
        "{stdin}"
    );
    s.call("DEL", &ns, &id, &conf, ("default", "p")).run().ok();
    assert!(
        !info.exists(),
        "DEL removes the attachment's device-info file"
    );
}

/// With namespace isolation, `v1.multus-cni.io/default-network` could name
/// another namespace's network as the pod's eth0, though `networks` could not.
#[test]
fn the_default_network_override_obeys_namespace_isolation() {
    enter_test_host();
    let s = Setup::new();
    s.add_nad(
        "team-b",
        "secret-net",
        json!({"cniVersion": "1.0.0", "name": "secret-net", "type": "bridge", "bridge": "br-secret",
               "ipam": {"type": "host-local", "ranges": [[{"subnet": "10.41.0.0/24"}]]}}),
    );
    let ns = Netns::new();
    let mut conf = s.conf(json!({"namespaceIsolation": true}));
    conf["runtimeConfig"] = json!({"io.kubernetes.cri.pod-annotations":
        {"v1.multus-cni.io/default-network": "team-b/secret-net"}});
    let e = s
        .call("ADD", &ns, "iso-1", &conf, ("tenant-a", "p"))
        .run()
        .err(7);
    assert!(msg(&e).contains("namespace isolation enabled"), "{e}");
    assert!(msg(&e).contains("team-b/secret-net"), "{e}");
    assert!(links(&ns).is_empty(), "{:?}", links(&ns));
    assert!(s.held("secret-net").is_empty());
    // multusNamespace holds the cluster's networks: an override may name
    // them (a name alone means that namespace, as in Multus).
    s.add_nad(
        "kube-system",
        "alt-net",
        json!({"cniVersion": "1.0.0", "name": "alt-net", "type": "bridge", "bridge": "br-alt",
               "ipam": {"type": "host-local", "ranges": [[{"subnet": "10.43.0.0/24"}]]}}),
    );
    conf["runtimeConfig"] = json!({"io.kubernetes.cri.pod-annotations":
        {"v1.multus-cni.io/default-network": "alt-net"}});
    s.call("ADD", &ns, "iso-2", &conf, ("tenant-a", "p"))
        .run()
        .ok();
    assert_eq!(iface(&ns, "eth0").0, ["10.43.0.2/24"]);
    s.call("DEL", &ns, "iso-2", &conf, ("tenant-a", "p"))
        .run()
        .ok();
}

/// `portMappings` in a selection publish the node's own ports (22, the
/// kubelet's 10250) on every local address; `annotationPortMappings: false`
/// refuses them.
#[test]
fn annotation_port_mappings_of_the_nodes_ports_can_be_refused() {
    enter_test_host();
    let s = Setup::new();
    s.add_nad(
        "default",
        "pm-net",
        json!({"cniVersion": "1.0.0", "name": "pm-net", "plugins": [
            {"type": "bridge", "bridge": "br-pm",
             "ipam": {"type": "host-local", "ranges": [[{"subnet": "10.42.0.0/24"}]]}},
            {"type": "portmap", "capabilities": {"portMappings": true}}]}),
    );
    let ns = Netns::new();
    let (out, _) = add_selecting(
        &s,
        &ns,
        "pm-1",
        ("default", "p"),
        r#"[{"name":"pm-net","portMappings":[
            {"hostPort":22,"containerPort":22,"protocol":"tcp"},
            {"hostPort":10250,"containerPort":80,"protocol":"tcp"}]}]"#,
        json!({"annotationPortMappings": false}),
    );
    let e = out.err(7);
    assert!(msg(&e).contains("annotationPortMappings is false"), "{e}");
    assert!(links(&ns).is_empty(), "{:?}", links(&ns));
    let nat = harness::iptables_table("nat");
    assert!(
        !nat.contains("--dport 22 ") && !nat.contains("--dport 10250 "),
        "{nat}"
    );
}

/// Every selection is an interface and an address from a shared range: 300
/// of them took 300 addresses. At most `maxAttachments` (32) per pod, refused
/// before anything is attached.
#[test]
fn a_pod_asking_for_300_networks_is_refused_before_anything_is_attached() {
    enter_test_host();
    let s = Setup::new();
    let ns = Netns::new();
    let many = vec!["data-net"; 300].join(",");
    let (out, _) = add_selecting(&s, &ns, "many", ("default", "p"), &many, json!({}));
    let e = out.err(7);
    assert!(msg(&e).contains("at most 32 attachments per pod"), "{e}");
    assert!(links(&ns).is_empty(), "{:?}", links(&ns));
    assert!(s.held("data-net").is_empty() && s.held("cbr0").is_empty());
    // The key sets the cap: the default network and three more is four.
    let (out, _) = add_selecting(
        &s,
        &ns,
        "four",
        ("default", "p"),
        "data-net,data-net,data-net",
        json!({"maxAttachments": 3}),
    );
    assert!(msg(&out.err(7)).contains("at most 3 attachments"));
    assert!(links(&ns).is_empty());
}

/// The kubelet's device-manager checkpoint says which devices of a pool it
/// gave the pod: the Nth attachment to the pool gets the Nth, and the device
/// plugin's device-info file becomes the attachment's, as Multus does.
#[test]
fn pool_attachments_get_the_devices_the_kubelet_allocated_to_the_pod() {
    enter_test_host();
    let s = Setup::new();
    let log = TempDir::new("multus-devrec");
    stdin_recorder(&s, "devrec", &log.0);
    add_nad_annotated(
        &s,
        "default",
        "vf-net",
        json!({RESOURCE: "example.com/vf"}),
        json!({"cniVersion": "1.0.0", "name": "vf-net", "type": "devrec",
               "capabilities": {"deviceID": true, "CNIDeviceInfoFile": true}}),
    );
    let checkpoint = s.cni.0.join("kubelet_internal_checkpoint");
    write_json(
        &checkpoint,
        &json!({"Data": {"PodDeviceEntries": [
            {"PodUID": "another-pod", "ContainerName": "c", "ResourceName": "example.com/vf",
             "DeviceIDs": {"0": ["0000:af:00.9"]}},
            {"PodUID": UID, "ContainerName": "c", "ResourceName": "example.com/vf",
             "DeviceIDs": {"0": ["0000:af:00.2"], "1": ["0000:af:00.3"]}}],
            "RegisteredDevices": {}}, "Checksum": 0}),
    );
    let id = format!("kubelet-{}", std::process::id());
    let dp = Path::new("/var/run/k8s.cni.cncf.io/devinfo/dp");
    std::fs::create_dir_all(dp).expect("dp dir");
    let dp_file = dp.join("example.com-vf-0000:af:00.2-device.json");
    let info = r#"{"type":"pci","version":"1.1.0","pci":{"pci-address":"0000:af:00.2"}}"#;
    std::fs::write(&dp_file, info).expect("device plugin's file");
    let ns = Netns::new();
    let extra = json!({"kubeletCheckpointFile": checkpoint});
    let (out, conf) = add_selecting(&s, &ns, &id, ("default", "p"), "vf-net,vf-net", extra);
    out.ok();
    for (ifname, device) in [("net1", "0000:af:00.2"), ("net2", "0000:af:00.3")] {
        let stdin = read_json(&log.0.join(format!("devrec.{ifname}.stdin")));
        assert_eq!(stdin["runtimeConfig"]["deviceID"], device, "{stdin}");
    }
    let cni_file = format!("/var/run/k8s.cni.cncf.io/devinfo/cni/default-vf-net-{id}_net1");
    assert_eq!(std::fs::read_to_string(&cni_file).expect("copied"), info);
    s.call("DEL", &ns, &id, &conf, ("default", "p")).run().ok();
    assert!(!Path::new(&cni_file).exists(), "DEL removes the copy");
    let _ = std::fs::remove_file(&dp_file);
}

/// A pod whose cached delegate list is gone is deleted from its annotations:
/// a selection ADD's policies would refuse now (here the cap, lowered since)
/// must not make DEL skip every other network and leak their addresses.
#[test]
fn del_without_the_cache_deletes_every_selection_despite_the_policies() {
    enter_test_host();
    let s = Setup::new();
    let ns = Netns::new();
    let (out, _) = add_selecting(
        &s,
        &ns,
        "nocache",
        ("default", "p"),
        "data-net,data-net",
        json!({}),
    );
    out.ok();
    assert_eq!(s.held("data-net").len(), 2);
    std::fs::remove_file(s.cni.0.join("nocache")).expect("the cached list");
    let mut conf = s.conf(json!({"maxAttachments": 1, "annotationPortMappings": false}));
    conf["runtimeConfig"] = json!({"io.kubernetes.cri.pod-annotations":
        {"k8s.v1.cni.cncf.io/networks": "data-net,data-net"}});
    s.call("DEL", &ns, "nocache", &conf, ("default", "p"))
        .run()
        .ok();
    assert!(s.held("data-net").is_empty(), "{:?}", s.held("data-net"));
    assert!(links(&ns).is_empty(), "{:?}", links(&ns));
}

/// A pod whose cached list is gone is deleted from its annotation, which a
/// tenant wrote: 128,000 selections there must not become 128,000 delegate
/// DELs (minutes at every retry) when no ADD ever attached more than
/// maxAttachments' highest value allows; a selection repeated with the same
/// interface is one attachment, deleted once.
#[test]
fn del_from_a_128000_selection_annotation_runs_at_most_the_cap() {
    use std::os::unix::fs::PermissionsExt;
    enter_test_host();
    let s = Setup::new();
    let ns = Netns::new();
    let log = TempDir::new("multus-delcount");
    let dels = log.0.join("dels");
    let script = format!(
        "#!/bin/sh\n[ \"$CNI_COMMAND\" = DEL ] && echo \"$CNI_IFNAME\" >> '{}'\n\
         [ \"$CNI_COMMAND\" = VERSION ] && printf '{{\"cniVersion\":\"1.0.0\",\"supportedVersions\":[\"1.0.0\"]}}'\nexit 0\n",
        dels.display()
    );
    std::fs::write(s.bin.0.join("delcount"), script).expect("script");
    let mode = std::fs::Permissions::from_mode(0o755);
    std::fs::set_permissions(s.bin.0.join("delcount"), mode).expect("chmod");
    s.add_nad(
        "default",
        "count-net",
        json!({"cniVersion": "1.0.0", "name": "count-net", "type": "delcount"}),
    );
    let del = |networks: String| {
        let mut conf = s.conf(json!({}));
        conf["runtimeConfig"] = json!({"io.kubernetes.cri.pod-annotations":
            {"k8s.v1.cni.cncf.io/networks": networks}});
        s.call("DEL", &ns, "nocache-many", &conf, ("default", "p"))
            .run()
            .ok();
        let text = std::fs::read_to_string(&dels).unwrap_or_default();
        let _ = std::fs::remove_file(&dels);
        text.lines().map(String::from).collect::<Vec<_>>()
    };
    let ran = del(vec!["count-net"; 128_000].join(","));
    // The default network and 4,095 selections: 4,096, the highest cap.
    assert_eq!(ran.len(), 4095, "{:?}", ran.last());
    assert_eq!((ran[0].as_str(), ran[4094].as_str()), ("net4095", "net1"));
    let same = r#"{"name":"count-net","interface":"dup0"}"#;
    let ran = del(format!("[{same},{same},{same}]"));
    assert_eq!(ran, ["dup0"]);
}

/// Inline `delegates` (no `clusterNetwork`) are the default network; its
/// plugin is found in `binDir` (not on CNI_PATH) and gets multus's
/// `runtimeConfig` as its capability args.
#[test]
fn inline_delegates_run_from_bin_dir_with_the_runtime_config() {
    enter_test_host();
    let s = Setup::new();
    let (bin, log) = (TempDir::new("multus-bindir"), TempDir::new("multus-rec"));
    stdin_recorder_in(&bin.0, "rec", &log.0);
    let caps = [
        "portMappings",
        "bandwidth",
        "ips",
        "mac",
        "infinibandGUID",
        "deviceID",
        "CNIDeviceInfoFile",
    ];
    let caps: serde_json::Map<String, Value> =
        caps.iter().map(|c| (c.to_string(), json!(true))).collect();
    let delegate =
        json!({"cniVersion": "1.0.0", "name": "inline-net", "type": "rec", "capabilities": caps});
    let runtime_config = json!({
        "portMappings": [{"hostPort": 8080, "containerPort": 80, "protocol": "tcp"}],
        "bandwidth": {"ingressRate": 1000, "ingressBurst": 100, "egressRate": 2000, "egressBurst": 200},
        "ips": ["10.1.2.3/24"], "mac": "02:00:00:00:12:34",
        "infinibandGUID": "c2:11:22:33:44:55:66:77", "CNIDeviceInfoFile": "/run/dev-info.json"});
    let mut conf = s.conf(json!({"clusterNetwork": "", "delegates": [delegate], "binDir": bin.0}));
    conf["runtimeConfig"] = runtime_config.clone();
    s.call("ADD", &Netns::new(), "inl-1", &conf, ("default", "p"))
        .run()
        .ok();
    let stdin = read_json(&log.0.join("rec.eth0.stdin"));
    assert_eq!(stdin["name"], "inline-net", "{stdin}");
    assert_eq!(stdin["runtimeConfig"], runtime_config, "{stdin}");
    // A `deviceID` makes the device-info file the spec's path for the attachment.
    conf["runtimeConfig"] = json!({"deviceID": "0000:af:00.4"});
    s.call("ADD", &Netns::new(), "inl-2", &conf, ("default", "p"))
        .run()
        .ok();
    let stdin = read_json(&log.0.join("rec.eth0.stdin"));
    assert_eq!(
        stdin["runtimeConfig"]["deviceID"], "0000:af:00.4",
        "{stdin}"
    );
    let info = stdin["runtimeConfig"]["CNIDeviceInfoFile"]
        .as_str()
        .unwrap_or_default();
    assert!(
        info.starts_with("/var/run/k8s.cni.cncf.io/devinfo/cni/"),
        "{stdin}"
    );
    assert!(info.ends_with("-inl-2_eth0"), "{stdin}");
}

/// `defaultNetworks` are attached after the default network (net1), but not
/// for a pod of a `systemNamespaces` namespace.
#[test]
fn default_networks_skip_the_system_namespaces() {
    enter_test_host();
    let s = Setup::new();
    let conf = s.conf(json!({"defaultNetworks": ["storage-net"], "systemNamespaces": ["infra"]}));
    for (namespace, expected) in [
        ("default", &["eth0", "net1"][..]),
        ("infra", &["eth0"][..]),
        // kube-system is no system namespace here: it gets them too.
        ("kube-system", &["eth0", "net1"][..]),
    ] {
        let ns = Netns::new();
        s.call("ADD", &ns, namespace, &conf, (namespace, "p"))
            .run()
            .ok();
        assert_eq!(links(&ns), expected, "{namespace}");
        s.call("DEL", &ns, namespace, &conf, (namespace, "p"))
            .run()
            .ok();
    }
    assert!(s.held("storage-net").is_empty());
}

/// A `clusterNetwork` name is a NAD of `multusNamespace` (kube-system unless set).
#[test]
fn cluster_network_names_resolve_in_the_multus_namespace() {
    enter_test_host();
    let s = Setup::new();
    s.add_nad(
        "infra",
        "infra-net",
        json!({"cniVersion": "1.0.0", "name": "infra-net", "type": "bridge", "bridge": "br-infra",
               "ipam": {"type": "host-local", "ranges": [[{"subnet": "10.44.0.0/24"}]]}}),
    );
    let ns = Netns::new();
    let conf = s.conf(json!({"clusterNetwork": "infra-net"}));
    let e = s
        .call("ADD", &ns, "mn-1", &conf, ("default", "p"))
        .run()
        .err(7);
    assert!(
        msg(&e).contains("clusterNetwork infra-net in namespace kube-system"),
        "{e}"
    );
    let conf = s.conf(json!({"clusterNetwork": "infra-net", "multusNamespace": "infra"}));
    s.call("ADD", &ns, "mn-2", &conf, ("default", "p"))
        .run()
        .ok();
    assert_eq!(iface(&ns, "eth0").0, ["10.44.0.2/24"]);
    s.call("DEL", &ns, "mn-2", &conf, ("default", "p"))
        .run()
        .ok();
}

/// A delegate whose DEL fails: with `retryDeleteOnError` the cached delegate
/// list stays for the runtime's retry; without it, it goes.
#[test]
fn retry_delete_on_error_keeps_the_cache_when_a_delegate_del_fails() {
    use std::os::unix::fs::PermissionsExt;
    enter_test_host();
    let s = Setup::new();
    let script = "#!/bin/sh\ncase \"$CNI_COMMAND\" in\n\
        VERSION) printf '{\"cniVersion\":\"1.0.0\",\"supportedVersions\":[\"1.0.0\"]}';;\n\
        ADD) printf '{\"cniVersion\":\"1.0.0\"}';;\n\
        DEL) printf '{\"cniVersion\":\"1.0.0\",\"code\":11,\"msg\":\"busy\"}'; exit 1;;\n\
        esac\n";
    let path = s.bin.0.join("faildel");
    std::fs::write(&path, script).expect("script");
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    s.add_nad(
        "default",
        "stuck-net",
        json!({"cniVersion": "1.0.0", "name": "stuck-net", "type": "faildel"}),
    );
    for (retry, kept) in [(true, vec!["r-true"]), (false, vec![])] {
        let id = format!("r-{retry}");
        let ns = Netns::new();
        let (out, conf) = add_selecting(
            &s,
            &ns,
            &id,
            ("default", "p"),
            "stuck-net",
            json!({"retryDeleteOnError": retry}),
        );
        out.ok();
        let e = s
            .call("DEL", &ns, &id, &conf, ("default", "p"))
            .run()
            .err(11);
        assert!(msg(&e).contains("busy"), "{e}");
        assert_eq!(
            s.state()
                .0
                .into_iter()
                .filter(|f| f == &id)
                .collect::<Vec<_>>(),
            kept
        );
    }
}

/// `logLevel` picks the lines, `logFile` and `logToStderr` where they go;
/// `kubeconfig` is said on stderr to be unused.
#[test]
fn log_file_level_and_to_stderr_and_the_kubeconfig_note() {
    enter_test_host();
    let s = Setup::new();
    let dir = TempDir::new("multus-log");
    let file = dir.0.join("multus.log");
    let extra = json!({"logFile": file, "logLevel": "debug", "logToStderr": false,
                       "kubeconfig": "/etc/cni/net.d/multus.kubeconfig"});
    let ns = Netns::new();
    let conf = s.conf(extra);
    let out = s.call("ADD", &ns, "log-1", &conf, ("default", "p")).run();
    let log = std::fs::read_to_string(&file).expect("log file");
    assert!(log.contains("[debug] DelegateAdd: "), "{log}");
    assert!(!out.stderr.contains("[debug]"), "{out:?}");
    assert!(
        out.stderr
            .contains("kubeconfig \"/etc/cni/net.d/multus.kubeconfig\" is not used"),
        "{out:?}"
    );
    out.ok();
    // At "error", to stderr only: a DEL with nothing to go on says so, no debug line.
    let conf = s.conf(json!({"logLevel": "error"}));
    let out = s
        .call("DEL", &ns, "nothing", &conf, ("default", "nobody"))
        .run();
    assert!(
        out.stderr
            .contains("[error] Multus: failed to get the cached delegates file"),
        "{out:?}"
    );
    assert!(!out.stderr.contains("[debug]"), "{out:?}");
    out.ok();
    assert!(
        !std::fs::read_to_string(&file)
            .expect("log")
            .contains("[error]")
    );
    s.call("DEL", &ns, "log-1", &conf, ("default", "p"))
        .run()
        .ok();
}

/// `auxiliaryCNIChainName` needs Multus's passthru plugin: refused, nothing attached.
#[test]
fn auxiliary_cni_chain_name_is_refused_with_7() {
    enter_test_host();
    let s = Setup::new();
    let ns = Netns::new();
    let conf = s.conf(json!({"auxiliaryCNIChainName": "aux-chain"}));
    let e = s
        .call("ADD", &ns, "aux", &conf, ("default", "p"))
        .run()
        .err(7);
    assert!(
        msg(&e).contains("auxiliaryCNIChainName is not supported"),
        "{e}"
    );
    assert!(links(&ns).is_empty(), "{:?}", links(&ns));
    assert_eq!(s.state(), (vec![], vec![]));
}

const TRACE: [(&str, &str); 3] = [
    (
        "TRACEPARENT",
        "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
    ),
    ("TRACESTATE", "congo=t61rcWkgMzE"),
    ("BAGGAGE", "userId=alice,region=eu"),
];

/// A plugin (or IPAM plugin) script that keeps its environment of each verb
/// in `<dir>/<name>.<CNI_COMMAND>.env` and answers ADD with one address.
fn env_recorder_in(bin: &Path, name: &str, dir: &Path) {
    use std::os::unix::fs::PermissionsExt;
    let script = format!(
        "#!/bin/sh\n\
         env > '{dir}/{name}.'\"$CNI_COMMAND\"'.env'\n\
         cat > '{dir}/{name}.'\"$CNI_COMMAND\"'.stdin'\n\
         [ \"$CNI_COMMAND\" = VERSION ] && {{ printf '{{\"cniVersion\":\"1.0.0\",\"supportedVersions\":[\"1.0.0\"]}}'; exit 0; }}\n\
         [ \"$CNI_COMMAND\" = ADD ] && printf '{{\"cniVersion\":\"1.0.0\",\"ips\":[{{\"address\":\"10.77.0.2/24\"}}]}}'\n\
         exit 0\n",
        dir = dir.display()
    );
    let path = bin.join(name);
    std::fs::write(&path, script).expect("script");
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).expect("chmod");
}

fn assert_traced(dir: &Path, name: &str, verb: &str) {
    let path = dir.join(format!("{name}.{verb}.env"));
    let seen = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    for (k, v) in TRACE {
        assert!(
            seen.lines().any(|l| l == format!("{k}={v}")),
            "{name} {verb}: {seen}"
        );
    }
}

/// The trace context of multus's environment reaches an exec'd delegate, and
/// the IPAM plugin of a delegate multus runs in-process (our bridge); the
/// delegate's DEL gets its cached ADD result as prevResult.
#[test]
fn trace_context_reaches_exec_and_in_process_delegates() {
    enter_test_host();
    let s = Setup::new();
    let log = TempDir::new("multus-trace");
    env_recorder_in(&s.bin.0, "envrec", &log.0);
    env_recorder_in(&s.bin.0, "envipam", &log.0);
    let delegates = json!([
        {"cniVersion": "1.0.0", "name": "exec-net", "type": "envrec"},
        {"cniVersion": "1.0.0", "name": "inproc-net", "type": "bridge", "bridge": "trace0",
         "ipam": {"type": "envipam"}}
    ]);
    let conf = s.conf(json!({"clusterNetwork": "", "delegates": delegates}));
    let ns = Netns::new();
    for verb in ["ADD", "DEL"] {
        let mut call = s.call(verb, &ns, "trace-1", &conf, ("default", "p"));
        for (k, v) in TRACE {
            call = call.set(k, v);
        }
        call.run().ok();
        assert_traced(&log.0, "envrec", verb);
        assert_traced(&log.0, "envipam", verb);
    }
    let del = read_json(&log.0.join("envrec.DEL.stdin"));
    assert_eq!(
        del["prevResult"]["ips"][0]["address"], "10.77.0.2/24",
        "{del}"
    );
}

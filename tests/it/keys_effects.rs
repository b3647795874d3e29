//! Config keys that had no test of their own (tests/it/config_keys.rs lists them):
//! each test sets the keys its name gives, through the real binary in throwaway
//! namespaces, and checks what they change. One module per plugin.

use crate::harness;

use harness::{
    Call, Netns, Runtime, TempDir, enter_test_host, first_ip, iptables_table, kernel_supports,
    merged, nft_ruleset, plugin_dir, run_in, sha512_prefix, skip,
};
use serde_json::{Value, json};

fn json_of(s: &str) -> Value {
    serde_json::from_str(s).unwrap_or_else(|e| panic!("{e}: {s}"))
}

/// `ip -j -d link show <name>` in `ns` (None: the test's host).
fn link(ns: Option<&Netns>, name: &str) -> Value {
    let args = ["-j", "-d", "link", "show", "dev", name];
    let out = match ns {
        Some(ns) => ns.sh("ip", &args),
        None => run_in(None, "ip", &args),
    };
    json_of(&out)[0].clone()
}

fn no_eth0(ns: &Netns) -> bool {
    ns.sh("ip", &["-o", "link"])
        .lines()
        .all(|l| !l.contains("eth0"))
}

/// A veth `name` (peer `<name>-p`) in `ns`, up: a master inside the container.
fn master_in(ns: &Netns, name: &str) -> Value {
    let peer = format!("{name}-p");
    ns.sh(
        "ip",
        &["link", "add", name, "type", "veth", "peer", "name", &peer],
    );
    ns.sh("ip", &["link", "set", name, "up"]);
    ns.sh("ip", &["link", "set", &peer, "up"]);
    link(Some(ns), name)
}

/// A host-side veth master `name` (peer `<name>-p`), up.
fn master_on_host(name: &str) {
    let peer = format!("{name}-p");
    run_in(
        None,
        "ip",
        &["link", "add", name, "type", "veth", "peer", "name", &peer],
    );
    run_in(None, "ip", &["link", "set", name, "up"]);
    run_in(None, "ip", &["link", "set", &peer, "up"]);
}

/// eth0, made by a plugin with `linkInContainer`, sits on the master of that
/// name inside the container; without the key the same config fails, since the
/// host has no such master.
fn link_in_container_uses_the_containers_master(plugin: &str, extra: Value) -> Value {
    let bin = plugin_dir();
    let ns = Netns::new();
    let master = master_in(&ns, "cmaster");
    let c = merged(
        json!({
            "cniVersion": "1.0.0", "name": "lic-net", "type": plugin, "master": "cmaster",
            "ipam": {"type": "static", "addresses": [{"address": "10.45.0.2/24"}]}
        }),
        extra,
    );
    let call = |c: &Value, cmd: &str| Call::new(plugin, cmd, ns.path(), &c.to_string()).path(&bin);
    let e = call(&c, "ADD").run().err(999);
    assert!(
        e["msg"].as_str().is_some_and(|m| m.contains("cmaster")),
        "without linkInContainer the master is looked up in the host: {e}"
    );
    assert!(no_eth0(&ns));
    let mut inside = c.clone();
    inside["linkInContainer"] = json!(true);
    let out = call(&inside, "ADD").run().ok();
    assert_eq!(out["ips"][0]["address"], "10.45.0.2/24", "{out}");
    let eth0 = link(Some(&ns), "eth0");
    // iproute2 names the lower link when it is in the same namespace.
    assert!(
        eth0["link"] == "cmaster" || eth0["link_index"] == master["ifindex"],
        "eth0 is on the container's cmaster: {eth0}"
    );
    assert!(eth0.get("link_netnsid").is_none(), "{eth0}");
    let mut checked = inside.clone();
    checked["prevResult"] = out;
    call(&checked, "CHECK").run().ok();
    call(&inside, "DEL").run().ok();
    assert!(no_eth0(&ns));
    eth0
}

mod bridge {
    use super::*;

    fn conf(store: &TempDir, extra: Value) -> Value {
        merged(
            json!({
                "cniVersion": "1.0.0", "name": "kbr-net", "type": "bridge", "bridge": "cni-kbr0",
                "isGateway": true,
                "ipam": {"type": "host-local", "subnet": "10.61.0.0/24", "dataDir": store.0}
            }),
            extra,
        )
    }

    #[test]
    fn bridge_mac_from_args_cni_and_runtime_config_is_eth0s() {
        enter_test_host();
        let (bin, store) = (plugin_dir(), TempDir::new("kbr-mac"));
        for (id, extra, mac) in [
            (
                "ctr-args",
                json!({"args": {"cni": {"mac": "0a:58:0a:3d:00:21"}}}),
                "0a:58:0a:3d:00:21",
            ),
            (
                "ctr-rc",
                json!({"runtimeConfig": {"mac": "0a:58:0a:3d:00:22"}}),
                "0a:58:0a:3d:00:22",
            ),
        ] {
            let ns = Netns::new();
            let c = conf(&store, extra);
            let out = Call::new("bridge", "ADD", ns.path(), &c.to_string())
                .set("CNI_CONTAINERID", id)
                .path(&bin)
                .run()
                .ok();
            assert_eq!(out["interfaces"][2]["name"], "eth0", "{out}");
            assert_eq!(out["interfaces"][2]["mac"], mac, "{out}");
            assert_eq!(link(Some(&ns), "eth0")["address"], mac);
        }
    }

    #[test]
    fn host_local_route_fields_reach_the_result_and_the_containers_routes() {
        enter_test_host();
        let (bin, store) = (plugin_dir(), TempDir::new("kbr-routes"));
        let routes = json!([
            {"dst": "10.123.0.0/16", "gw": "10.61.0.254", "mtu": 1300, "advmss": 1200, "priority": 50},
            {"dst": "10.124.0.0/16", "table": 100},
            {"dst": "10.125.0.0/16", "scope": 253}
        ]);
        let mut c = conf(&store, json!({}));
        c["ipam"]["routes"] = routes.clone();
        // host-local hands the routes on as configured.
        let ipam = Call::new(
            "host-local",
            "ADD",
            "/run/netns/cni-multi-ipam-test",
            &c.to_string(),
        )
        .set("CNI_CONTAINERID", "ipam-only")
        .run()
        .ok();
        assert_eq!(ipam["routes"], routes, "{ipam}");
        Call::new(
            "host-local",
            "DEL",
            "/run/netns/cni-multi-ipam-test",
            &c.to_string(),
        )
        .set("CNI_CONTAINERID", "ipam-only")
        .run()
        .ok();

        // bridge reports them and installs priority, table and scope; mtu and
        // advmss are not put on the kernel route (the reference ignores them too).
        let ns = Netns::new();
        let out = Call::new("bridge", "ADD", ns.path(), &c.to_string())
            .set("CNI_CONTAINERID", "ctr-routes")
            .path(&bin)
            .run()
            .ok();
        assert_eq!(out["routes"], routes, "{out}");
        let main = ns.sh("ip", &["-4", "route", "show"]);
        let via = main
            .lines()
            .find(|l| l.starts_with("10.123.0.0/16"))
            .unwrap_or_else(|| panic!("no 10.123.0.0/16 route:\n{main}"));
        assert!(
            via.contains("via 10.61.0.254 dev eth0") && via.contains("metric 50"),
            "{via}"
        );
        assert!(
            !via.contains("mtu") && !via.contains("advmss"),
            "mtu/advmss ignored: {via}"
        );
        let scoped = main
            .lines()
            .find(|l| l.starts_with("10.125.0.0/16"))
            .unwrap_or_else(|| panic!("no 10.125.0.0/16 route:\n{main}"));
        assert!(scoped.contains("scope link"), "{scoped}");
        assert!(
            !main.contains("10.124.0.0/16"),
            "table 100 route in main:\n{main}"
        );
        let table = ns.sh("ip", &["-4", "route", "show", "table", "100"]);
        // A route without a gateway takes the address's, as in the reference.
        assert!(
            table.contains("10.124.0.0/16 via 10.61.0.1 dev eth0"),
            "{table}"
        );
    }
}

mod ptp {
    use super::*;

    #[test]
    fn ptp_ip_masq_backend_nftables_writes_the_nft_masquerade_rule() {
        enter_test_host();
        let (bin, store) = (plugin_dir(), TempDir::new("kptp-masq"));
        let c = json!({
            "cniVersion": "1.0.0", "name": "pmasq", "type": "ptp",
            "ipMasq": true, "ipMasqBackend": "nftables",
            "ipam": {"type": "host-local", "subnet": "10.42.0.0/24", "dataDir": store.0}
        });
        let before = nft_ruleset();
        let nat_before = iptables_table("nat");
        let ns = Netns::new();
        let call = |cmd: &str, path: &str| {
            Call::new("ptp", cmd, path, &c.to_string())
                .set("CNI_CONTAINERID", "pm1")
                .path(&bin)
        };
        call("ADD", ns.path()).run().ok();
        let rules = nft_ruleset();
        let instance = format!(
            "{}-{}",
            sha512_prefix("pmasq", 16),
            sha512_prefix("eth0:pm1", 16)
        );
        for expected in [
            "table inet cni_plugins_masquerade {".to_string(),
            format!(
                "ip saddr 10.42.0.2 ip daddr != 10.42.0.0/24 masquerade comment \"{instance}, net: pmasq, if: eth0, id: pm1\""
            ),
        ] {
            assert!(rules.contains(&expected), "missing {expected}\n{rules}");
        }
        assert_eq!(iptables_table("nat"), nat_before, "no iptables rule");
        let path = ns.path().to_string();
        ns.destroy();
        call("DEL", &path).run().ok();
        assert_eq!(nft_ruleset(), before);
    }
}

mod macvlan {
    use super::*;

    fn conf(extra: Value) -> Value {
        merged(
            json!({
                "cniVersion": "1.0.0", "name": "kmv-net", "type": "macvlan", "master": "kmv-master",
                "ipam": {"type": "static", "addresses": [{"address": "10.46.0.2/24"}]}
            }),
            extra,
        )
    }

    #[test]
    fn macvlan_bcqueuelen_is_the_links_broadcast_queue_length() {
        enter_test_host();
        master_on_host("kmv-master");
        let bin = plugin_dir();
        let ns = Netns::new();
        let c = conf(json!({"bcqueuelen": 2345}));
        Call::new("macvlan", "ADD", ns.path(), &c.to_string())
            .path(&bin)
            .run()
            .ok();
        let eth0 = link(Some(&ns), "eth0");
        assert_eq!(eth0["linkinfo"]["info_data"]["bcqueuelen"], 2345, "{eth0}");
    }

    #[test]
    fn macvlan_mac_from_cni_args_and_runtime_config_is_eth0s() {
        enter_test_host();
        master_on_host("kmv-master");
        let bin = plugin_dir();
        for (c, cni_args, mac) in [
            (
                conf(json!({})),
                "IgnoreUnknown=1;MAC=0a:58:0a:2e:00:31",
                "0a:58:0a:2e:00:31",
            ),
            (
                conf(json!({"runtimeConfig": {"mac": "0a:58:0a:2e:00:32"}})),
                "",
                "0a:58:0a:2e:00:32",
            ),
        ] {
            let ns = Netns::new();
            let out = Call::new("macvlan", "ADD", ns.path(), &c.to_string())
                .set("CNI_ARGS", cni_args)
                .path(&bin)
                .run()
                .ok();
            assert_eq!(out["interfaces"][0]["mac"], mac, "{out}");
            assert_eq!(link(Some(&ns), "eth0")["address"], mac);
        }
    }

    #[test]
    fn macvlan_link_in_container_uses_the_master_in_the_container() {
        enter_test_host();
        let eth0 = link_in_container_uses_the_containers_master("macvlan", json!({}));
        assert_eq!(eth0["linkinfo"]["info_kind"], "macvlan", "{eth0}");
    }
}

mod ipvlan {
    use super::*;

    #[test]
    fn ipvlan_link_in_container_uses_the_master_in_the_container() {
        enter_test_host();
        if let Err(reason) = kernel_supports("ipvlan", true, &[]) {
            return skip(
                "ipvlan_link_in_container_uses_the_master_in_the_container",
                &reason,
            );
        }
        let eth0 = link_in_container_uses_the_containers_master("ipvlan", json!({"mode": "l2"}));
        assert_eq!(eth0["linkinfo"]["info_kind"], "ipvlan", "{eth0}");
        assert_eq!(eth0["linkinfo"]["info_data"]["mode"], "l2", "{eth0}");
    }
}

mod vlan {
    use super::*;

    #[test]
    fn vlan_link_in_container_uses_the_master_in_the_container() {
        enter_test_host();
        if let Err(reason) = kernel_supports("vlan", true, &["id", "9"]) {
            return skip(
                "vlan_link_in_container_uses_the_master_in_the_container",
                &reason,
            );
        }
        let eth0 = link_in_container_uses_the_containers_master("vlan", json!({"vlanId": 9}));
        assert_eq!(eth0["linkinfo"]["info_kind"], "vlan", "{eth0}");
        assert_eq!(eth0["linkinfo"]["info_data"]["id"], 9, "{eth0}");
    }
}

mod tap {
    use super::*;

    #[test]
    fn tap_mac_from_cni_args_and_runtime_config_is_the_taps() {
        enter_test_host();
        let bin = plugin_dir();
        let base = json!({"cniVersion": "1.0.0", "name": "ktap-net", "type": "tap"});
        for (c, cni_args, mac) in [
            (
                base.clone(),
                "IgnoreUnknown=1;MAC=0a:58:0a:21:00:41",
                "0a:58:0a:21:00:41",
            ),
            (
                merged(
                    base.clone(),
                    json!({"runtimeConfig": {"mac": "0a:58:0a:21:00:42"}}),
                ),
                "",
                "0a:58:0a:21:00:42",
            ),
        ] {
            let ns = Netns::new();
            let out = Call::new("tap", "ADD", ns.path(), &c.to_string())
                .set("CNI_ARGS", cni_args)
                .path(&bin)
                .run()
                .ok();
            assert_eq!(out["interfaces"][0]["mac"], mac, "{out}");
            let tap = link(Some(&ns), "eth0");
            assert_eq!(tap["linkinfo"]["info_kind"], "tun", "{tap}");
            assert_eq!(tap["address"], mac, "{tap}");
        }
    }
}

mod host_local {
    use super::*;

    const NETNS: &str = "/run/netns/cni-multi-ipam-test";

    fn add(stdin: &Value, id: &str) -> harness::Outcome {
        Call::new("host-local", "ADD", NETNS, &stdin.to_string())
            .set("CNI_CONTAINERID", id)
            .run()
    }

    #[test]
    fn host_local_range_start_and_end_bound_the_allocation() {
        enter_test_host();
        let dir = TempDir::new("khl-range");
        let c = json!({"cniVersion": "1.0.0", "name": "khl-net", "type": "bridge", "ipam": {
            "type": "host-local", "dataDir": dir.0, "subnet": "10.62.0.0/24",
            "rangeStart": "10.62.0.10", "rangeEnd": "10.62.0.12"
        }});
        let got: Vec<Value> = (0..3)
            .map(|i| add(&c, &format!("ctr-{i}")).ok()["ips"][0]["address"].clone())
            .collect();
        assert_eq!(
            got,
            [
                json!("10.62.0.10/24"),
                json!("10.62.0.11/24"),
                json!("10.62.0.12/24")
            ]
        );
        let e = add(&c, "ctr-3").err(999);
        assert!(
            e["msg"]
                .as_str()
                .is_some_and(|m| m.contains("10.62.0.10-10.62.0.12")),
            "exhausted at rangeEnd: {e}"
        );
    }

    #[test]
    fn host_local_runtime_config_ip_ranges_come_before_the_configured_ranges() {
        enter_test_host();
        let dir = TempDir::new("khl-ipranges");
        let c = json!({"cniVersion": "1.0.0", "name": "khl-net", "type": "bridge",
        "ipam": {"type": "host-local", "dataDir": dir.0,
                 "ranges": [[{"subnet": "10.63.0.0/24"}]]},
        "runtimeConfig": {"ipRanges": [
            [{"subnet": "10.64.0.0/24", "rangeStart": "10.64.0.50"}],
            [{"subnet": "fd64::/64"}]
        ]}});
        let out = add(&c, "ctr-r").ok();
        let ips: Vec<&str> = out["ips"]
            .as_array()
            .expect("ips")
            .iter()
            .filter_map(|i| i["address"].as_str())
            .collect();
        // As the reference: the runtime's range sets are prepended, not substituted.
        assert_eq!(
            ips,
            ["10.64.0.50/24", "fd64::2/64", "10.63.0.2/24"],
            "{out}"
        );
    }
}

mod portmap {
    use super::*;

    /// bridge + portmap (`extra` keys) with one TCP mapping 8080 -> 80; the
    /// nat table afterwards and the container's IP.
    fn nat_after_add(extra: Value) -> (String, String) {
        let rt = Runtime::new("kpm");
        let list = json!({
            "cniVersion": "1.0.0", "name": "kpm-net",
            "plugins": [
                {"type": "bridge", "bridge": "cni-kpm0", "isGateway": true,
                 "ipam": {"type": "host-local", "subnet": "10.43.0.0/24", "dataDir": "@STORE@"}},
                merged(json!({"type": "portmap", "capabilities": {"portMappings": true}}), extra)
            ]
        });
        rt.write_list("kpm.conflist", &list);
        let ns = Netns::new();
        let caps =
            json!({"portMappings": [{"hostPort": 8080, "containerPort": 80, "protocol": "tcp"}]});
        let out = rt.run(&["add", "kpm-net", ns.path()], &caps).ok();
        (iptables_table("nat"), first_ip(&out))
    }

    fn dnat(ip: &str) -> String {
        format!("-p tcp -m tcp --dport 8080 -j DNAT --to-destination {ip}:80")
    }

    #[test]
    fn portmap_snat_false_writes_no_setmark_or_masquerade_rules() {
        enter_test_host();
        let (nat, ip) = nat_after_add(json!({"snat": false}));
        assert!(nat.contains(&dnat(&ip)), "{nat}");
        assert!(!nat.contains("CNI-HOSTPORT-SETMARK"), "{nat}");
        assert!(!nat.contains("CNI-HOSTPORT-MASQ"), "{nat}");
        assert!(!nat.contains("MARK"), "{nat}");
        let localnet = run_in(
            None,
            "sysctl",
            &["-n", "net.ipv4.conf.cni-kpm0.route_localnet"],
        );
        assert_eq!(localnet.trim(), "0", "no route_localnet without snat");
    }

    #[test]
    fn portmap_masq_all_marks_every_source() {
        enter_test_host();
        let (nat, ip) = nat_after_add(json!({"masqAll": true}));
        assert!(nat.contains(&dnat(&ip)), "{nat}");
        // -s 0.0.0.0/0, which iptables-save prints as no -s at all; no 127.0.0.1 rule.
        assert!(
            nat.lines().any(|l| l.starts_with("-A CNI-DN-")
                && l.ends_with("-p tcp -m tcp --dport 8080 -j CNI-HOSTPORT-SETMARK")
                && !l.contains(" -s ")),
            "{nat}"
        );
        assert!(!nat.contains("-s 10.43.0.0/24"), "{nat}");
        assert!(!nat.contains("-s 127.0.0.1/32"), "{nat}");
    }

    #[test]
    fn portmap_mark_masq_bit_sets_and_matches_that_bit() {
        enter_test_host();
        let (nat, _) = nat_after_add(json!({"markMasqBit": 5}));
        for expected in [
            "-A CNI-HOSTPORT-MASQ -m mark --mark 0x20/0x20 -j MASQUERADE",
            "-A CNI-HOSTPORT-SETMARK -m comment --comment \"CNI portfwd masquerade mark\" -j MARK --set-xmark 0x20/0x20",
        ] {
            assert!(nat.contains(expected), "missing {expected}\n{nat}");
        }
        assert!(!nat.contains("0x2000"), "{nat}");
    }

    #[test]
    fn portmap_external_set_mark_chain_is_jumped_to_instead_of_setmark() {
        enter_test_host();
        run_in(None, "iptables", &["-t", "nat", "-N", "KUBE-MARK-MASQ"]);
        let (nat, ip) = nat_after_add(json!({"externalSetMarkChain": "KUBE-MARK-MASQ"}));
        assert!(nat.contains(&dnat(&ip)), "{nat}");
        for source in ["-s 10.43.0.0/24", "-s 127.0.0.1/32"] {
            let rule = format!("{source} -p tcp -m tcp --dport 8080 -j KUBE-MARK-MASQ");
            assert!(
                nat.lines()
                    .any(|l| l.starts_with("-A CNI-DN-") && l.ends_with(&rule)),
                "missing {rule}\n{nat}"
            );
        }
        assert!(!nat.contains("CNI-HOSTPORT-SETMARK"), "{nat}");
        assert!(!nat.contains("CNI-HOSTPORT-MASQ"), "{nat}");
    }
}

mod bandwidth {
    use super::*;

    #[test]
    fn bandwidth_top_level_rates_and_bursts_shape_and_win_over_runtime_config() {
        enter_test_host();
        let rt = Runtime::new("kbw");
        let list = json!({"cniVersion": "1.0.0", "name": "kbw-net", "plugins": [
            {"type": "bridge", "bridge": "cni-kbw0", "isGateway": true,
             "ipam": {"type": "host-local", "subnet": "10.91.0.0/24", "dataDir": "@STORE@"}},
            {"type": "bandwidth", "capabilities": {"bandwidth": true},
             "ingressRate": 8_000_000, "ingressBurst": 524_288,
             "egressRate": 4_000_000, "egressBurst": 1_048_576}]});
        rt.write_list("kbw.conflist", &list);
        // The runtime's limits lose to the config's.
        let caps = json!({"bandwidth": {"ingressRate": 2_000_000, "ingressBurst": 262_144,
                                        "egressRate": 2_000_000, "egressBurst": 262_144}});
        let ns = Netns::new();
        let out = rt.run(&["add", "kbw-net", ns.path()], &caps).ok();
        let ifs = out["interfaces"].as_array().expect("interfaces");
        let host_veth = ifs[1]["name"].as_str().expect("veth").to_string();
        let ifb = ifs.last().expect("ifb")["name"]
            .as_str()
            .expect("name")
            .to_string();
        assert!(ifb.starts_with("bwp"), "{out}");
        // Ingress (to the container) is the tbf on the host veth, egress the one on the IFB.
        let veth_q = run_in(None, "tc", &["qdisc", "show", "dev", &host_veth]);
        assert!(
            veth_q.contains("qdisc tbf 1: root") && veth_q.contains("rate 8Mbit burst 64Kb"),
            "{veth_q}"
        );
        let ifb_q = run_in(None, "tc", &["qdisc", "show", "dev", &ifb]);
        assert!(
            ifb_q.contains("qdisc tbf 1: root") && ifb_q.contains("rate 4Mbit burst 128Kb"),
            "{ifb_q}"
        );
        rt.run(&["del", "kbw-net", ns.path()], &caps).ok();
        assert!(!run_in(None, "ip", &["-o", "link"]).contains("bwp"));
    }
}

mod tuning {
    use super::*;

    /// A container with eth0 (a veth) and the prevResult naming it.
    fn setup() -> (Netns, Value) {
        let ns = Netns::new();
        ns.sh(
            "ip",
            &[
                "link",
                "add",
                "eth0",
                "address",
                "0a:58:00:00:00:01",
                "type",
                "veth",
                "peer",
                "name",
                "peer0",
            ],
        );
        let prev = json!({
            "cniVersion": "1.0.0",
            "interfaces": [{"name": "eth0", "mac": "0a:58:00:00:00:01", "sandbox": ns.path()}],
            "ips": [{"address": "10.70.0.2/24", "interface": 0}]
        });
        (ns, prev)
    }

    fn conf(prev: &Value, data: &TempDir, extra: Value) -> Value {
        merged(
            json!({"cniVersion": "1.0.0", "name": "ktune", "type": "tuning",
                   "dataDir": data.0, "prevResult": prev}),
            extra,
        )
    }

    #[test]
    fn tuning_args_cni_promisc_allmulti_and_txqlen_override_the_config() {
        enter_test_host();
        let (bin, data) = (plugin_dir(), TempDir::new("ktune-args"));
        let (ns, prev) = setup();
        let c = conf(
            &prev,
            &data,
            json!({"promisc": false, "allmulti": false, "txQLen": 500,
                   "args": {"cni": {"promisc": true, "allmulti": true, "txQLen": 777}}}),
        );
        Call::new("tuning", "ADD", ns.path(), &c.to_string())
            .path(&bin)
            .run()
            .ok();
        let now = link(Some(&ns), "eth0");
        assert_eq!(now["promiscuity"], 1, "{now}");
        assert!(
            now["flags"]
                .as_array()
                .is_some_and(|f| f.contains(&json!("ALLMULTI"))),
            "{now}"
        );
        assert_eq!(now["txqlen"], 777, "{now}");
    }

    #[test]
    fn tuning_mac_from_runtime_config_and_from_cni_args_alone() {
        enter_test_host();
        let bin = plugin_dir();
        for (extra, cni_args, mac) in [
            (
                json!({"runtimeConfig": {"mac": "0a:58:00:00:00:51"}}),
                "",
                "0a:58:00:00:00:51",
            ),
            (
                json!({}),
                "IgnoreUnknown=1;MAC=0a:58:00:00:00:52",
                "0a:58:00:00:00:52",
            ),
        ] {
            let data = TempDir::new("ktune-mac");
            let (ns, prev) = setup();
            let out = Call::new(
                "tuning",
                "ADD",
                ns.path(),
                &conf(&prev, &data, extra).to_string(),
            )
            .set("CNI_ARGS", cni_args)
            .path(&bin)
            .run()
            .ok();
            assert_eq!(out["interfaces"][0]["mac"], mac, "{out}");
            assert_eq!(link(Some(&ns), "eth0")["address"], mac);
        }
    }
}

mod firewall {
    use super::*;

    #[test]
    fn firewall_admin_chain_name_is_the_chain_cni_forward_jumps_to() {
        enter_test_host();
        let rt = Runtime::new("kfw");
        let list = json!({
            "cniVersion": "1.0.0", "name": "kfw-net",
            "plugins": [
                {"type": "bridge", "bridge": "cni-kfw0", "isGateway": true,
                 "ipam": {"type": "host-local", "subnet": "10.53.0.0/24", "dataDir": "@STORE@"}},
                {"type": "firewall", "backend": "iptables", "iptablesAdminChainName": "MY-ADMIN"}
            ]
        });
        rt.write_list("kfw.conflist", &list);
        let ns = Netns::new();
        rt.run(&["add", "kfw-net", ns.path()], &json!({})).ok();
        let filter = iptables_table("filter");
        assert!(filter.contains(":MY-ADMIN - [0:0]"), "{filter}");
        assert!(
            filter.contains(
                "-A CNI-FORWARD -m comment --comment \"CNI firewall plugin admin overrides\" -j MY-ADMIN"
            ),
            "{filter}"
        );
        assert!(!filter.contains("CNI-ADMIN"), "{filter}");
    }
}

mod flannel {
    use super::*;

    #[test]
    fn flannel_runtime_config_reaches_the_delegate() {
        enter_test_host();
        let (bin, state, store, etc) = (
            plugin_dir(),
            TempDir::new("kfl-data"),
            TempDir::new("kfl-store"),
            TempDir::new("kfl-run"),
        );
        let subnet_env = etc.0.join("subnet.env");
        std::fs::copy("testdata/flannel/subnet.env", &subnet_env).expect("subnet.env");
        let conf = json!({
            "cniVersion": "1.0.0", "name": "cbr0", "type": "flannel",
            "subnetFile": subnet_env, "dataDir": state.0, "ipam": {"dataDir": store.0},
            "runtimeConfig": {"mac": "0a:58:0a:f4:01:63", "ips": ["10.244.1.99/24"]}
        });
        let ns = Netns::new();
        let out = Call::new("flannel", "ADD", ns.path(), &conf.to_string())
            .set("CNI_CONTAINERID", "pod-rc")
            .path(&bin)
            .run()
            .ok();
        // The delegate (bridge) took the MAC and its IPAM (host-local) the IP.
        assert_eq!(out["ips"][0]["address"], "10.244.1.99/24", "{out}");
        assert_eq!(link(Some(&ns), "eth0")["address"], "0a:58:0a:f4:01:63");
        let saved = json_of(&std::fs::read_to_string(state.0.join("pod-rc")).expect("saved"));
        assert_eq!(saved["runtimeConfig"], conf["runtimeConfig"], "{saved}");
    }
}

//! `cnitool doctor` and the nftables forms: ipMasq's rules in
//! `inet cni_plugins_masquerade` and the firewall's in `inet cni_firewall` of
//! dead and ownerless attachments are listed and removed, a live pod's are
//! untouched; and ipMasq chains left in the iptables flavour a host switched
//! away from.

mod harness;

use harness::{
    Netns, Outcome, PinnedNetns, Runtime, TempDir, enter_test_host, nft_ruleset, run_in,
    sha512_prefix,
};
use serde_json::{Value, json};

fn container_id(netns: &str) -> String {
    format!("cnitool-{}", sha512_prefix(netns, 20))
}

/// The findings of some kinds of a doctor run.
fn of_kinds(found: &Value, kinds: &[&str]) -> Vec<Value> {
    found["findings"]
        .as_array()
        .expect("findings")
        .iter()
        .filter(|f| kinds.iter().any(|k| f["kind"] == *k))
        .cloned()
        .collect()
}

/// `<h(net)>-<h(ifname:cid)>`, what the attachment's rules' comments start with.
fn instance(network: &str, ifname: &str, id: &str) -> String {
    format!(
        "{}-{}",
        sha512_prefix(network, 16),
        sha512_prefix(&format!("{ifname}:{id}"), 16)
    )
}

#[test]
fn masq_nftables_rules_of_dead_and_ownerless_attachments_are_removed() {
    enter_test_host();
    let rt = Runtime::new("nm");
    let list = json!({
        "cniVersion": "1.0.0",
        "name": "nm-net",
        "plugins": [
            {"type": "bridge", "bridge": "cni-dnm0", "isGateway": true, "ipMasq": true,
             "ipMasqBackend": "nftables",
             "ipam": {"type": "host-local", "subnet": "10.147.0.0/24", "dataDir": "@STORE@"}}
        ]
    });
    rt.write_list("nm.conflist", &list);
    let doctor = |args: &[&str], status: i32| {
        let mut all = vec!["doctor", "--json"];
        all.extend_from_slice(args);
        let out = rt.run(&all, &json!({}));
        assert_eq!(out.status, status, "{out:?}");
        out.json()
    };
    let (gone, forgotten, live) = (PinnedNetns::new(), PinnedNetns::new(), Netns::new());
    let paths = [gone.path(), forgotten.path(), live.path()];
    let ids: Vec<String> = paths.iter().map(|p| container_id(p)).collect();
    for p in paths {
        rt.run(&["add", "nm-net", p], &json!({})).ok();
    }
    let rules = |i: usize| -> Vec<String> {
        nft_ruleset()
            .lines()
            .filter(|l| l.contains(&ids[i]))
            .map(|l| l.trim().to_string())
            .collect()
    };
    let live_before = rules(2);
    assert_eq!(live_before.len(), 1, "{}", nft_ruleset());
    gone.destroy();
    std::fs::remove_file(
        rt.cache
            .0
            .join("results")
            .join(format!("nm-net-{}-eth0", ids[1])),
    )
    .expect("rm cache file");
    forgotten.destroy();

    // An ownerless rule carries no time: the first run only sees it.
    let first = of_kinds(&doctor(&[], 0), &["masq"]);
    assert!(first.is_empty(), "{first:?}");
    let found = of_kinds(&doctor(&["--min-age", "0"], 1), &["masq"]);
    let finding = |i: usize, action: &str| {
        json!({
            "kind": "masq", "network": "nm-net", "containerId": ids[i], "ifname": "eth0",
            "object": format!("nft inet cni_plugins_masquerade {}",
                instance("nm-net", "eth0", &ids[i])),
            "action": action, "fixed": false
        })
    };
    assert_eq!(
        found,
        vec![
            finding(0, "removed by the DEL of its dead attachment"),
            finding(1, "remove the attachment's rules"),
        ]
    );

    let fixed = doctor(&["--fix", "--min-age", "0"], 0);
    let fixed = fixed["findings"].as_array().expect("findings").clone();
    assert!(fixed.iter().all(|f| f["fixed"] == true), "{fixed:?}");
    assert_eq!(rules(0), Vec::<String>::new());
    assert_eq!(rules(1), Vec::<String>::new());
    assert_eq!(rules(2), live_before);
    assert_eq!(doctor(&["--min-age", "0"], 0), json!({"findings": []}));
    rt.run(&["del", "nm-net", live.path()], &json!({})).ok();
}

#[test]
fn firewall_nftables_rules_of_dead_and_ownerless_attachments_are_removed() {
    enter_test_host();
    let rt = Runtime::new("fn");
    let list = json!({
        "cniVersion": "1.0.0",
        "name": "fn-net",
        "plugins": [
            {"type": "bridge", "bridge": "cni-dfn0", "isGateway": true,
             "ipam": {"type": "host-local", "subnet": "10.148.0.0/24", "dataDir": "@STORE@"}},
            {"type": "firewall", "backend": "nftables", "dataDir": "@STORE@/firewall"}
        ]
    });
    rt.write_list("fn.conflist", &list);
    let doctor = |args: &[&str], status: i32| {
        let mut all = vec!["doctor", "--json"];
        all.extend_from_slice(args);
        let out = rt.run(&all, &json!({}));
        assert_eq!(out.status, status, "{out:?}");
        out.json()
    };
    let (gone, forgotten, live) = (PinnedNetns::new(), PinnedNetns::new(), Netns::new());
    let paths = [gone.path(), forgotten.path(), live.path()];
    let ids: Vec<String> = paths.iter().map(|p| container_id(p)).collect();
    for p in paths {
        rt.run(&["add", "fn-net", p], &json!({})).ok();
    }
    let rules = |i: usize| -> Vec<String> {
        nft_ruleset()
            .lines()
            .filter(|l| l.contains(&ids[i]))
            .map(|l| l.trim().to_string())
            .collect()
    };
    let live_before = rules(2);
    assert_eq!(live_before.len(), 2, "{}", nft_ruleset());
    gone.destroy();
    std::fs::remove_file(
        rt.cache
            .0
            .join("results")
            .join(format!("fn-net-{}-eth0", ids[1])),
    )
    .expect("rm cache file");
    forgotten.destroy();

    let first = of_kinds(&doctor(&[], 0), &["firewall"]);
    assert!(first.is_empty(), "{first:?}");
    let found = of_kinds(&doctor(&["--min-age", "0"], 1), &["firewall"]);
    let finding = |i: usize, network: &str, action: &str| {
        json!({
            "kind": "firewall", "network": network, "containerId": ids[i], "ifname": "",
            "object": format!("nft inet cni_firewall {}", ids[i]),
            "action": action, "fixed": false
        })
    };
    assert_eq!(
        found,
        vec![
            finding(0, "fn-net", "removed by the DEL of its dead attachment"),
            finding(1, "", "remove the container's rules"),
        ]
    );

    let fixed = doctor(&["--fix", "--min-age", "0"], 0);
    let fixed = fixed["findings"].as_array().expect("findings").clone();
    assert!(fixed.iter().all(|f| f["fixed"] == true), "{fixed:?}");
    assert_eq!(rules(0), Vec::<String>::new());
    assert_eq!(rules(1), Vec::<String>::new());
    assert_eq!(rules(2), live_before);
    assert_eq!(doctor(&["--min-age", "0"], 0), json!({"findings": []}));
    rt.run(&["del", "fn-net", live.path()], &json!({})).ok();
}

/// `(other flavour, its tool prefix)`: the flavour the default iptables is not.
fn other_flavour() -> (&'static str, &'static str) {
    let default = std::fs::canonicalize("/usr/sbin/iptables-restore").expect("iptables-restore");
    if default.to_string_lossy().contains("nft") {
        ("legacy", "iptables-legacy")
    } else {
        ("nft", "iptables-nft")
    }
}

#[test]
fn masq_chains_left_in_the_other_iptables_flavour_are_removed() {
    enter_test_host();
    let (flavour, tool) = other_flavour();
    // A PATH whose iptables is the other flavour: the host before it switched.
    let before = TempDir::new("flavour");
    for family in ["iptables", "ip6tables"] {
        for what in ["save", "restore"] {
            std::os::unix::fs::symlink(
                format!("/usr/sbin/{family}-{flavour}-{what}"),
                before.0.join(format!("{family}-{what}")),
            )
            .expect("symlink");
        }
    }
    let old_path = format!(
        "{}:{}",
        before.0.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let rt = Runtime::new("fl");
    let list = json!({
        "cniVersion": "1.0.0",
        "name": "fl-net",
        "plugins": [
            {"type": "bridge", "bridge": "cni-dfl0", "isGateway": true, "ipMasq": true,
             "ipMasqBackend": "iptables",
             "ipam": {"type": "host-local", "subnet": "10.146.0.0/24", "dataDir": "@STORE@"}}
        ]
    });
    rt.write_list("fl.conflist", &list);
    let cnitool = |args: &[&str], path: Option<&str>| -> Outcome {
        Outcome::of(
            rt.command(args, &json!({}), path)
                .spawn()
                .expect("spawn cnitool"),
        )
    };
    let doctor = |args: &[&str], status: i32| -> Vec<Value> {
        let mut all = vec!["doctor", "--json"];
        all.extend_from_slice(args);
        let out = cnitool(&all, None);
        assert_eq!(out.status, status, "{out:?}");
        of_kinds(&out.json(), &["masq"])
    };
    let (gone, live) = (PinnedNetns::new(), Netns::new());
    let paths = [gone.path(), live.path()];
    let ids: Vec<String> = paths.iter().map(|p| container_id(p)).collect();
    for p in paths {
        cnitool(&["add", "fl-net", p], Some(&old_path)).ok();
    }
    let chain = |i: usize| format!("CNI-{}", sha512_prefix(&format!("fl-net{}", ids[i]), 24));
    let nat = || run_in(None, &format!("{tool}-save"), &["-t", "nat"]);
    let live_before: Vec<String> = nat()
        .lines()
        .filter(|l| l.contains(&chain(1)))
        .map(str::to_string)
        .collect();
    assert!(live_before.len() >= 3, "{}", nat());
    assert!(nat().contains(&chain(0)), "{}", nat());
    gone.destroy();

    let found = doctor(&["--min-age", "0"], 1);
    assert_eq!(
        found,
        vec![json!({
            "kind": "masq", "network": "fl-net", "containerId": ids[0], "ifname": "",
            "object": format!("{tool} nat {}", chain(0)),
            "action": "remove chain and its POSTROUTING jumps", "fixed": false
        })]
    );
    let fixed = doctor(&["--fix", "--min-age", "0"], 0);
    assert!(fixed.iter().all(|f| f["fixed"] == true), "{fixed:?}");
    assert!(!nat().contains(&chain(0)), "{}", nat());
    let live_after: Vec<String> = nat()
        .lines()
        .filter(|l| l.contains(&chain(1)))
        .map(str::to_string)
        .collect();
    assert_eq!(live_after, live_before);
    assert_eq!(doctor(&["--min-age", "0"], 0), Vec::<Value>::new());
    cnitool(&["del", "fl-net", live.path()], Some(&old_path)).ok();
    // repair gave the live pod the masquerading the default flavour lacked.
    cnitool(&["del", "fl-net", live.path()], None).ok();
}

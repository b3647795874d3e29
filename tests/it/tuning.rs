//! tuning end to end: sysctls and link attributes applied in the container,
//! backed up in the reference's format, restored on DEL; bad keys refused.

use crate::harness;

use harness::{Call, Netns, TempDir, enter_test_host, plugin_dir};
use serde_json::{Value, json};

fn link(ns: &Netns) -> Value {
    serde_json::from_str::<Value>(&ns.sh("ip", &["-j", "-d", "link", "show", "eth0"]))
        .expect("json")[0]
        .clone()
}

fn sysctl(ns: &Netns, key: &str) -> String {
    ns.sh("sysctl", &["-n", key]).trim().to_string()
}

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
    let mut c = json!({"cniVersion": "1.0.0", "name": "tune", "type": "tuning", "dataDir": data.0, "prevResult": prev});
    if let (Some(o), Some(e)) = (c.as_object_mut(), extra.as_object()) {
        for (k, v) in e {
            o.insert(k.clone(), v.clone());
        }
    }
    c
}

#[test]
fn every_key_is_applied_backed_up_and_restored() {
    enter_test_host();
    let bin = plugin_dir();
    let data = TempDir::new("tuning");
    let (ns, prev) = setup();
    let before = link(&ns);
    let c = conf(
        &prev,
        &data,
        json!({
            "sysctl": {"net.ipv4.conf.IFNAME.arp_notify": "1", "net.core.somaxconn": "512"},
            "mac": "0a:58:00:00:00:99", "mtu": 1400, "promisc": true, "allmulti": true, "txQLen": 500
        }),
    );
    let call =
        |cmd: &str, c: &Value| Call::new("tuning", cmd, ns.path(), &c.to_string()).path(&bin);
    let out = call("ADD", &c).run().ok();
    let mut expected = prev.clone();
    expected["interfaces"][0]["mac"] = json!("0a:58:00:00:00:99");
    assert_eq!(out, expected, "prevResult with the new MAC");
    let now = link(&ns);
    assert_eq!(now["address"], "0a:58:00:00:00:99");
    assert_eq!(now["mtu"], 1400);
    assert_eq!(now["promiscuity"], 1);
    assert!(
        now["flags"]
            .as_array()
            .is_some_and(|f| f.contains(&json!("ALLMULTI"))),
        "{now}"
    );
    assert_eq!(now["txqlen"], 500);
    assert_eq!(sysctl(&ns, "net.ipv4.conf.eth0.arp_notify"), "1");
    assert_eq!(sysctl(&ns, "net.core.somaxconn"), "512");
    let backup = std::fs::read_to_string(data.0.join("ctr-1_eth0.json")).expect("backup");
    assert_eq!(
        backup,
        format!(
            "{{\n \"mac\": \"0a:58:00:00:00:01\",\n \"promisc\": false,\n \"mtu\": {},\n \"allmulti\": false,\n \"txQLen\": {},\n \"network\": \"tune\"\n}}",
            before["mtu"], before["txqlen"]
        )
    );
    let mut checked = c.clone();
    checked["prevResult"] = out;
    call("CHECK", &checked).run().ok();
    ns.sh("ip", &["link", "set", "eth0", "mtu", "1300"]);
    call("CHECK", &checked).run().err(999);

    call("DEL", &c).run().ok();
    let after = link(&ns);
    for key in ["address", "mtu", "promiscuity", "txqlen"] {
        assert_eq!(after[key], before[key], "{key} restored");
    }
    assert!(
        !after["flags"]
            .as_array()
            .is_some_and(|f| f.contains(&json!("ALLMULTI")))
    );
    assert!(!data.0.join("ctr-1_eth0.json").exists());
    call("DEL", &c).run().ok();
}

#[test]
fn mac_sources_and_args_overrides() {
    enter_test_host();
    let bin = plugin_dir();
    let data = TempDir::new("tuning-args");
    let (ns, prev) = setup();
    let mut c = conf(
        &prev,
        &data,
        json!({"mac": "0a:58:00:00:00:02", "mtu": 1450}),
    );
    c["args"] = json!({"cni": {"mac": "0a:58:00:00:00:03", "mtu": 1420, "sysctl": {"net.ipv4.conf.IFNAME.arp_ignore": "1"}}});
    Call::new("tuning", "ADD", ns.path(), &c.to_string())
        .set("CNI_ARGS", "IgnoreUnknown=1;MAC=0a:58:00:00:00:04")
        .path(&bin)
        .run()
        .ok();
    let now = link(&ns);
    assert_eq!(now["address"], "0a:58:00:00:00:03", "args.cni wins");
    assert_eq!(now["mtu"], 1420);
    assert_eq!(sysctl(&ns, "net.ipv4.conf.eth0.arp_ignore"), "1");
}

#[test]
fn sysctls_outside_net_are_refused() {
    enter_test_host();
    let bin = plugin_dir();
    let data = TempDir::new("tuning-bad");
    let (ns, prev) = setup();
    for key in [
        "kernel.panic",
        "net.ipv4/../../kernel.panic",
        "net..ipv4",
        "vm.swappiness",
    ] {
        let c = conf(&prev, &data, json!({"sysctl": {key: "1"}}));
        Call::new("tuning", "ADD", ns.path(), &c.to_string())
            .path(&bin)
            .run()
            .err(7);
    }
    let mut unchained = conf(&prev, &data, json!({}));
    unchained.as_object_mut().map(|o| o.remove("prevResult"));
    Call::new("tuning", "ADD", ns.path(), &unchained.to_string())
        .path(&bin)
        .run()
        .err(7);
    Call::new(
        "tuning",
        "ADD",
        ns.path(),
        &conf(&prev, &data, json!({"mac": "zz"})).to_string(),
    )
    .path(&bin)
    .run()
    .err(7);
}

/// With `/etc/cni/tuning/allowlist.conf`, ADD refuses a `sysctl` key no line
/// allows, with the reference's error, before setting anything; keys it
/// allows (IFNAME as written) are set.
#[test]
fn the_allowlist_refuses_a_sysctl_it_does_not_list_and_sets_nothing() {
    enter_test_host();
    let bin = plugin_dir();
    let data = TempDir::new("tuning-allow");
    let etc = TempDir::new("tuning-etc");
    let dir = etc.0.join("cni/tuning");
    std::fs::create_dir_all(&dir).expect("allowlist dir");
    let lines = "^net\\.core\\.somaxconn$\n^net\\.ipv4\\.conf\\.IFNAME\\.arp_notify$\n";
    std::fs::write(dir.join("allowlist.conf"), lines).expect("allowlist");
    let (ns, prev) = setup();
    let somaxconn = sysctl(&ns, "net.core.somaxconn");
    assert_ne!(somaxconn, "600");
    let arp_ignore = sysctl(&ns, "net.ipv4.conf.eth0.arp_ignore");
    let call = |c: Value| Call::new("tuning", "ADD", ns.path(), &c.to_string()).path(&bin);

    let refused = conf(
        &prev,
        &data,
        json!({"sysctl": {"net.core.somaxconn": "600", "net.ipv4.conf.IFNAME.arp_ignore": "2"}}),
    );
    // The allowlist's path is fixed: the plugin sees `etc` as /etc.
    let e = call(refused).run_with_bind(&etc.0, "/etc").err(999);
    assert_eq!(
        e["msg"],
        "Sysctl net.ipv4.conf.IFNAME.arp_ignore is not allowed. Only the following sysctls are \
         allowed: [^net\\.core\\.somaxconn$ ^net\\.ipv4\\.conf\\.IFNAME\\.arp_notify$]"
    );
    assert_eq!(sysctl(&ns, "net.core.somaxconn"), somaxconn, "nothing set");
    assert_eq!(sysctl(&ns, "net.ipv4.conf.eth0.arp_ignore"), arp_ignore);

    let allowed = conf(
        &prev,
        &data,
        json!({"sysctl": {"net.core.somaxconn": "600", "net.ipv4.conf.IFNAME.arp_notify": "1"}}),
    );
    call(allowed).run_with_bind(&etc.0, "/etc").ok();
    assert_eq!(sysctl(&ns, "net.core.somaxconn"), "600");
    assert_eq!(sysctl(&ns, "net.ipv4.conf.eth0.arp_notify"), "1");
}

/// `dataDir` may be relative, as in the reference (Go's os functions): the
/// backup lands under the plugin's working directory.
#[test]
fn a_relative_data_dir_is_relative_to_the_working_directory() {
    enter_test_host();
    let bin = plugin_dir();
    let cwd = TempDir::new("tuning-cwd");
    let (ns, prev) = setup();
    let before = link(&ns);
    let mut c = conf(&prev, &cwd, json!({"mtu": 1400}));
    c["dataDir"] = json!("state/tuning");
    let call = |cmd: &str, c: &Value| {
        Call::new("tuning", cmd, ns.path(), &c.to_string())
            .path(&bin)
            .run_in_dir(&cwd.0)
    };
    call("ADD", &c).ok();
    let backup = cwd.0.join("state/tuning/ctr-1_eth0.json");
    assert!(backup.exists(), "backup under the working directory");
    assert_eq!(link(&ns)["mtu"], 1400);
    call("DEL", &c).ok();
    assert_eq!(link(&ns)["mtu"], before["mtu"]);
    assert!(!backup.exists());
    // `..` stays refused on ADD (7); DEL of such a config has nothing to restore.
    c["dataDir"] = json!("state/../../escape");
    call("ADD", &c).err(7);
    call("DEL", &c).ok();
    assert!(!cwd.0.join("../escape").exists());
}

/// DEL needs only `dataDir`: values ADD would refuse now (a sysctl outside
/// net, a bad MAC) do not keep the backup from being restored.
#[test]
fn del_restores_the_backup_whatever_else_the_config_says() {
    enter_test_host();
    let bin = plugin_dir();
    let data = TempDir::new("tuning-deltol");
    let (ns, prev) = setup();
    let before = link(&ns);
    let c = conf(&prev, &data, json!({"mtu": 1380}));
    let call = |cmd: &str, c: &Value| {
        Call::new("tuning", cmd, ns.path(), &c.to_string())
            .path(&bin)
            .run()
    };
    call("ADD", &c).ok();
    assert_eq!(link(&ns)["mtu"], 1380);
    let refused = conf(
        &prev,
        &data,
        json!({"mtu": -1, "mac": "zz", "sysctl": {"kernel.panic": "1"}}),
    );
    call("ADD", &refused).err(7);
    call("DEL", &refused).ok();
    assert_eq!(link(&ns)["mtu"], before["mtu"], "restored");
    assert!(!data.0.join("ctr-1_eth0.json").exists());
}

/// A restore the kernel refuses (the MTU a macvlan's master no longer allows)
/// does not stop the others: DEL restores them, fails naming the MTU and keeps
/// the backup; once the master allows it again, a retried DEL restores the
/// MTU and removes the backup.
#[test]
fn a_failed_restore_keeps_the_backup_and_restores_the_rest() {
    enter_test_host();
    let bin = plugin_dir();
    let data = TempDir::new("tuning-partial");
    let ns = Netns::new();
    ns.sh(
        "ip",
        &[
            "link", "add", "lower0", "type", "veth", "peer", "name", "lowerp",
        ],
    );
    ns.sh(
        "ip",
        &[
            "link",
            "add",
            "link",
            "lower0",
            "name",
            "eth0",
            "address",
            "0a:58:00:00:00:01",
            "type",
            "macvlan",
            "mode",
            "bridge",
        ],
    );
    let prev = json!({
        "cniVersion": "1.0.0",
        "interfaces": [{"name": "eth0", "mac": "0a:58:00:00:00:01", "sandbox": ns.path()}],
        "ips": [{"address": "10.70.0.2/24", "interface": 0}]
    });
    let before = link(&ns);
    assert_eq!(before["mtu"], 1500);
    let c = conf(
        &prev,
        &data,
        json!({"mac": "0a:58:00:00:00:99", "mtu": 1400, "promisc": true, "allmulti": true, "txQLen": 500}),
    );
    let call = |cmd: &str| {
        Call::new("tuning", cmd, ns.path(), &c.to_string())
            .path(&bin)
            .run()
    };
    call("ADD").ok();
    let backup = data.0.join("ctr-1_eth0.json");
    assert!(backup.exists());
    // The master shrinks below the original MTU: the kernel refuses 1500 now.
    ns.sh("ip", &["link", "set", "lower0", "mtu", "1450"]);
    // As the reference: DEL succeeds, says what it could not restore.
    let out = call("DEL");
    assert_eq!(out.status, 0, "DEL succeeds: {out:?}");
    assert!(out.stderr.contains("failed to restore MTU"), "{out:?}");
    let after = link(&ns);
    assert_eq!(after["mtu"], 1400, "not restored");
    for key in ["address", "promiscuity", "txqlen"] {
        assert_eq!(after[key], before[key], "{key} restored all the same");
    }
    assert!(
        !after["flags"]
            .as_array()
            .is_some_and(|f| f.contains(&json!("ALLMULTI"))),
        "allmulti restored: {after}"
    );
    assert!(
        backup.exists(),
        "the backup stays, as the reference keeps it"
    );
    // The cause removed: another DEL restores the MTU and drops the backup.
    ns.sh("ip", &["link", "set", "lower0", "mtu", "1500"]);
    call("DEL").ok();
    assert_eq!(link(&ns)["mtu"], 1500);
    assert!(!backup.exists());
    call("DEL").ok();
}

/// GC removes this network's backups of attachments not in
/// `cni.dev/valid-attachments`, and nothing else: not a valid attachment's,
/// not another network's in the same `dataDir`, not one naming no network (as
/// the reference writes), never through a symlink. Without the list it
/// changes nothing.
#[test]
fn gc_removes_only_this_networks_backups_of_gone_attachments() {
    enter_test_host();
    let bin = plugin_dir();
    let data = TempDir::new("tuning-gc");
    let add = |id: &str, name: &str| {
        let (ns, prev) = setup();
        let mut c = conf(&prev, &data, json!({"mtu": 1400}));
        c["name"] = json!(name);
        Call::new("tuning", "ADD", ns.path(), &c.to_string())
            .set("CNI_CONTAINERID", id)
            .path(&bin)
            .run()
            .ok();
        ns
    };
    let _a = add("ctr-a", "tune");
    let _b = add("ctr-b", "tune");
    let _c = add("ctr-c", "other");
    let file = |id: &str| data.0.join(format!("{id}_eth0.json"));
    std::fs::write(file("ctr-d"), "{\n \"mtu\": 1500\n}").expect("reference backup");
    let outside = TempDir::new("tuning-gc-outside");
    let target = outside.0.join("backup.json");
    std::fs::write(&target, "{\"mtu\": 1500, \"network\": \"tune\"}").expect("target");
    std::os::unix::fs::symlink(&target, file("ctr-e")).expect("symlink");
    let all = ["ctr-a", "ctr-b", "ctr-c", "ctr-d", "ctr-e"];
    let present = || -> Vec<&str> {
        all.iter()
            .copied()
            .filter(|id| std::fs::symlink_metadata(file(id)).is_ok())
            .collect()
    };
    assert_eq!(present(), all);
    let gc = |valid: Option<Value>| {
        let mut c =
            json!({"cniVersion": "1.1.0", "name": "tune", "type": "tuning", "dataDir": data.0});
        if let Some(v) = valid {
            c["cni.dev/valid-attachments"] = v;
        }
        Call::new("tuning", "GC", "", &c.to_string())
            .unset("CNI_CONTAINERID")
            .unset("CNI_NETNS")
            .unset("CNI_IFNAME")
            .path(&bin)
            .run()
            .ok();
    };
    gc(None);
    assert_eq!(
        present(),
        all,
        "no valid list: nothing is known to be stale"
    );
    gc(Some(json!([{"containerID": "ctr-a", "ifname": "eth0"}])));
    assert_eq!(present(), ["ctr-a", "ctr-c", "ctr-d", "ctr-e"]);
    assert!(target.exists(), "a symlink's target is never touched");
}

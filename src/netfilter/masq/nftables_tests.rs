use super::*;

#[test]
fn multicast_ranges_are_the_references() {
    let nets: Vec<(bool, String)> = MULTICAST
        .iter()
        .map(|(v6, net)| (*v6, net.to_string()))
        .collect();
    assert_eq!(
        nets,
        [(false, "224.0.0.0/4".into()), (true, "ff00::/8".into())]
    );
}

fn rule(handle: u64, comment: String) -> DumpedRule {
    DumpedRule {
        handle,
        comment,
        jumps: Vec::new(),
        iifname: None,
        saddr: None,
    }
}

#[test]
fn check_counts_the_attachments_rules() {
    let p = Plan::new(
        "mynet",
        "ctr1",
        "eth0",
        &[
            "10.88.0.5/16".parse().expect("net"),
            "fd00::5/64".parse().expect("net"),
        ],
    );
    let mine = |h| rule(h, comment("mynet", "eth0", "ctr1"));
    check_rules(&p, &[mine(1), mine(2)]).expect("both");
    let e = check_rules(&p, &[mine(1), rule(2, comment("mynet", "eth0", "ctr2"))])
        .expect_err("one missing")
        .to_string();
    assert!(
        e.contains("1 of 2 rules found in table cni_plugins_masquerade"),
        "{e}"
    );
}

fn kept(cid: &str, ifname: &str) -> Kept {
    Kept {
        container_id: cid.into(),
        ifname: ifname.into(),
    }
}

/// Stale: this network, an attachment not kept, whatever the comment's cut.
#[test]
fn gc_tells_attachments_apart_by_their_instance() {
    let keep = [kept("ctr1", "eth0")];
    assert!(!stale(&comment("mynet", "eth0", "ctr1"), "mynet", &keep));
    assert!(stale(&comment("mynet", "eth0", "old"), "mynet", &keep));
    // The runtime lists every attachment it keeps: an unlisted interface
    // of a kept container is stale.
    assert!(stale(&comment("mynet", "eth1", "ctr1"), "mynet", &keep));
    assert!(!stale(&comment("other", "eth0", "old"), "mynet", &keep));
    let long = "c".repeat(200);
    let cut = comment("mynet", "eth0", &long);
    assert_eq!(cut.chars().count(), 128);
    assert!(!stale(&cut, "mynet", &[kept(&long, "eth0")]));
    assert!(stale(&cut, "mynet", &keep));
    // A network name long enough to cut off the interface and ID.
    let net = "n".repeat(100);
    let cut = comment(&net, "eth0", "old");
    assert!(!cut.contains(", id: "));
    assert!(stale(&cut, &net, &keep));
    assert!(!stale(&cut, &net, &[kept("old", "eth0")]));
    assert!(!stale("unreadable", "mynet", &keep));
    // An entry without ifname keeps all of its container's interfaces,
    // which the hashed comment cannot tell: nothing is collected.
    let no_ifname = [kept("ctr1", "")];
    assert!(!stale(
        &comment("mynet", "eth1", "ctr1"),
        "mynet",
        &no_ifname
    ));
    assert!(!stale(
        &comment("mynet", "eth0", "old"),
        "mynet",
        &no_ifname
    ));
}

#[test]
fn masqueraded_names_whole_owners_and_their_sources() {
    let with = |comment: String, saddr: Option<&str>| DumpedRule {
        saddr: saddr.map(|s| s.parse().expect("ip")),
        ..rule(1, comment)
    };
    let long = "c".repeat(200);
    let rules = [
        with(comment("mynet", "eth0", "ctr1"), Some("10.88.0.5")),
        with(comment("my, if: net", "eth1", "ctr2"), Some("10.88.0.6")),
        with(comment("mynet", "eth0", "ctr1"), Some("fd00::5")),
        with(comment("mynet", "eth0", "ctr1"), Some("10.88.0.5")),
        // Cut: its owner cannot be told.
        with(comment("mynet", "eth0", &long), Some("10.88.0.7")),
        with("net: x, if: eth0, id: y".into(), None),
        with(
            "0000000000000000-0000000000000000, net: x, if: eth0, id: y".into(),
            None,
        ),
    ];
    let ip = |s: &str| s.parse::<IpAddr>().expect("ip");
    assert_eq!(
        masqueraded(&rules),
        vec![
            Masqueraded {
                network: "mynet".into(),
                container_id: "ctr1".into(),
                ifname: "eth0".into(),
                instance: instance("mynet", "eth0", "ctr1"),
                sources: vec![ip("10.88.0.5"), ip("fd00::5")],
            },
            Masqueraded {
                network: "my, if: net".into(),
                container_id: "ctr2".into(),
                ifname: "eth1".into(),
                instance: instance("my, if: net", "eth1", "ctr2"),
                sources: vec![ip("10.88.0.6")],
            },
        ]
    );
}

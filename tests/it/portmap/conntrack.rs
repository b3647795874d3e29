//! UDP conntrack entries of a mapping's host port: removed at ADD and DEL,
//! exactly those, without a dump when the table is empty.

use super::*;

/// Loads conntrack entries into the calling thread's namespace: one conntrack(8)
/// command a line (`-I …`), in one run (`-R`) so thousands take a moment.
fn conntrack_load(commands: &[String]) {
    let dir = TempDir::new("ct");
    let file = dir.0.join("entries");
    std::fs::write(&file, commands.join("\n") + "\n").expect("write conntrack commands");
    run_in(
        None,
        "conntrack",
        &["-R", file.to_str().expect("utf-8 path")],
    );
}

/// `-I` of a UDP (or `tcp`) entry to `dport` of the test's own sources, which
/// nothing else in the namespace uses.
fn ct_entry(family: &str, proto: &str, src: &str, sport: u16, dport: u16) -> String {
    let dst = if family == "ipv6" {
        "fd77::2"
    } else {
        "192.0.2.1"
    };
    let state = if proto == "tcp" {
        " --state ESTABLISHED"
    } else {
        ""
    };
    format!("-I -p {proto} -s {src} -d {dst} --sport {sport} --dport {dport} --timeout 600{state}")
}

/// `n` UDP entries to ports 6000-6999 from 10.77.x.y: what a busy node holds.
fn unrelated_udp(n: usize) -> Vec<String> {
    (0..n)
        .map(|i| {
            let src = format!("10.77.{}.{}", i / 250, i % 250 + 1);
            ct_entry(
                "ipv4",
                "udp",
                &src,
                30000 + (i % 1000) as u16,
                6000 + (i % 1000) as u16,
            )
        })
        .collect()
}

/// The original tuples of the test's entries (sources 10.77.0.0/16, fd77::/16)
/// in both families: `udp src=… dst=… sport=… dport=…`.
fn test_conntrack_tuples() -> std::collections::BTreeSet<String> {
    let keys = ["src=", "dst=", "sport=", "dport="];
    ["ipv4", "ipv6"]
        .iter()
        .flat_map(|f| {
            run_in(None, "conntrack", &["-L", "-f", f])
                .lines()
                .map(|line| {
                    let mut words = line.split_whitespace();
                    let proto = words.next().unwrap_or_default().to_string();
                    let orig: Vec<&str> = words
                        .filter(|w| keys.iter().any(|k| w.starts_with(k)))
                        .take(4)
                        .collect();
                    format!("{proto} {}", orig.join(" "))
                })
                .collect::<Vec<_>>()
        })
        .filter(|t| t.contains("src=10.77.") || t.contains("src=fd77:"))
        .collect()
}

#[test]
fn a_udp_mapping_removes_exactly_the_conntrack_entries_of_its_host_port() {
    enter_test_host();
    let net = network(json!({}));
    let mut entries = unrelated_udp(2000);
    let stale: Vec<String> = (1..=3)
        .map(|i| ct_entry("ipv4", "udp", &format!("10.77.200.{i}"), 40000 + i, 5454))
        .collect();
    entries.extend(stale.iter().cloned());
    // Near misses: the port as source, TCP to it, and IPv6 to it (the container
    // has IPv4 only: the reference flushes the families of its addresses).
    entries.push(ct_entry("ipv4", "udp", "10.77.201.1", 5454, 6000));
    entries.push(ct_entry("ipv4", "tcp", "10.77.201.2", 40000, 5454));
    entries.push(ct_entry("ipv6", "udp", "fd77::1", 40000, 5454));
    conntrack_load(&entries);
    let before = test_conntrack_tuples();
    assert_eq!(before.len(), 2006, "entries loaded");
    let ns = Netns::new();
    net.run(
        &["add", "pm-net", ns.path()],
        &maps(&[(5454, 53, "udp", "")]),
    )
    .ok();
    let after = test_conntrack_tuples();
    let gone: Vec<&String> = before.difference(&after).collect();
    assert_eq!(gone.len(), 3, "removed: {gone:#?}");
    assert!(
        gone.iter()
            .all(|t| t.starts_with("udp src=10.77.200.") && t.ends_with("dport=5454")),
        "removed: {gone:#?}"
    );
    assert!(
        after.is_subset(&before),
        "nothing new among the test's entries"
    );
}

/// DEL drops the UDP conntrack entries to its mappings' host ports (as the
/// reference's DEL): a host port a new pod takes over would otherwise keep
/// sending to the old pod until the entries expire. TCP, and other ports, stay.
#[test]
fn del_removes_the_conntrack_entries_of_its_udp_host_ports() {
    enter_test_host();
    let net = network(json!({}));
    let ns = Netns::new();
    let caps = maps(&[(5455, 53, "udp", ""), (5456, 80, "tcp", "")]);
    net.run(&["add", "pm-net", ns.path()], &caps).ok();
    // Flows to the mapped ports, loaded after ADD (whose flush would take them).
    let mut entries: Vec<String> = (1..=3)
        .map(|i| ct_entry("ipv4", "udp", &format!("10.77.202.{i}"), 40000 + i, 5455))
        .collect();
    entries.push(ct_entry("ipv4", "tcp", "10.77.203.1", 40000, 5456));
    entries.push(ct_entry("ipv4", "udp", "10.77.203.2", 40000, 5457));
    conntrack_load(&entries);
    let before = test_conntrack_tuples();
    assert_eq!(before.len(), 5, "entries loaded: {before:#?}");
    net.run(&["del", "pm-net", ns.path()], &caps).ok();
    let after = test_conntrack_tuples();
    let gone: Vec<&String> = before.difference(&after).collect();
    assert_eq!(gone.len(), 3, "removed: {gone:#?}");
    assert!(
        gone.iter()
            .all(|t| t.starts_with("udp src=10.77.202.") && t.ends_with("dport=5455")),
        "removed: {gone:#?}"
    );
}

/// A namespace without conntrack entries is not dumped (each dump walks the
/// host's whole hash table); one with entries is.
#[test]
fn the_udp_conntrack_flush_skips_the_dump_when_the_table_is_empty() {
    use cni_multi::netlink::conntrack::delete_by_dport;
    enter_test_host();
    // conntrack(8) loads the module (and its per-namespace count) if missing.
    let _ = std::process::Command::new("conntrack").arg("-C").output();
    let ns = Netns::new();
    let ipv4 = nix::libc::NFPROTO_IPV4 as u8;
    let done = harness::in_netns(Some(ns.path()), move || delete_by_dport(ipv4, 17, &[5460]))
        .expect("delete in an empty table");
    assert!(done.table_empty, "{done:?}");
    assert_eq!((done.received, done.deleted), (0, 0));
    let path = ns.path().to_string();
    harness::in_netns(Some(&path), || {
        conntrack_load(&[ct_entry("ipv4", "udp", "10.77.201.1", 40000, 5460)]);
    });
    let done = harness::in_netns(Some(ns.path()), move || delete_by_dport(ipv4, 17, &[5460]))
        .expect("delete in a table with an entry");
    assert!(!done.table_empty, "{done:?}");
    // A filtered flush does not say how many it deleted: the table does.
    assert!(done.flushed || done.deleted == 1, "{done:?}");
    let left = harness::in_netns(Some(&path), test_conntrack_tuples);
    assert!(left.is_empty(), "{left:#?}");
}

#[test]
fn the_udp_conntrack_flush_receives_only_the_matching_entries() {
    use cni_multi::netlink::conntrack::{Dump, delete_by_dport_with};
    enter_test_host();
    let mut entries = unrelated_udp(2000);
    for (i, port) in [5454u16, 5454, 5454, 5455, 5455, 5456, 5456]
        .iter()
        .enumerate()
    {
        entries.push(ct_entry(
            "ipv4",
            "udp",
            &format!("10.77.200.{}", i + 1),
            40000,
            *port,
        ));
    }
    conntrack_load(&entries);
    let ipv4 = nix::libc::NFPROTO_IPV4 as u8;
    // Kernel-filtered dump: only the five entries to delete cross the socket.
    let done =
        delete_by_dport_with(Dump::Filtered, ipv4, 17, &[5454, 5455]).expect("filtered delete");
    assert!(done.filtered, "the kernel took the filter: {done:?}");
    assert_eq!((done.received, done.deleted), (5, 5), "{done:?}");
    // The full dump (the fallback) removes the same kind of entries, reading all.
    let done = delete_by_dport_with(Dump::Full, ipv4, 17, &[5456]).expect("full dump delete");
    assert!(!done.filtered);
    assert_eq!(done.deleted, 2, "{done:?}");
    assert!(done.received >= 2000, "{done:?}");
    let left = test_conntrack_tuples();
    assert_eq!(left.len(), 2000, "only the unrelated entries stay");
    assert!(left.iter().all(|t| !t.contains("dport=545")), "{left:#?}");
}

/// The default way (a filtered flush where the kernel takes it, else the
/// filtered dump) deletes exactly the entries to the ports, of the family, in
/// every zone, as the reference's per-entry deletes do.
#[test]
fn the_udp_conntrack_flush_deletes_only_the_ports_entries() {
    use cni_multi::netlink::conntrack::delete_by_dport;
    enter_test_host();
    let mut entries = unrelated_udp(300);
    for (i, port) in [5457u16, 5457, 5458].iter().enumerate() {
        entries.push(ct_entry(
            "ipv4",
            "udp",
            &format!("10.77.203.{}", i + 1),
            40000,
            *port,
        ));
    }
    // The same port over TCP, over IPv6, and UDP in another zone.
    entries.push(ct_entry("ipv4", "tcp", "10.77.203.9", 40000, 5457));
    entries.push(ct_entry("ipv6", "udp", "fd77::9", 40000, 5457));
    entries.push(ct_entry("ipv4", "udp", "10.77.203.10", 40000, 5457) + " --zone 7");
    conntrack_load(&entries);
    let ipv4 = nix::libc::NFPROTO_IPV4 as u8;
    let done = delete_by_dport(ipv4, 17, &[5457, 5458]).expect("delete");
    assert!(done.flushed || done.deleted == 4, "{done:?}");
    let left = test_conntrack_tuples();
    assert_eq!(left.len(), 302, "{left:#?}");
    assert!(
        left.iter()
            .filter(|t| t.contains("dport=5457") || t.contains("dport=5458"))
            .all(|t| t.starts_with("tcp ") || t.contains("fd77::9")),
        "{left:#?}"
    );
}

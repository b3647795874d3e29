//! host-local end to end: allocation order, the on-disk format, concurrency,
//! dual stack, requested IPs, exhaustion, GC and reference-written stores.

use crate::harness;

use harness::{Call, Outcome, TempDir, enter_test_host};
use serde_json::{Value, json};
use std::collections::BTreeSet;
use std::path::Path;

fn conf(version: &str, data_dir: &Path, ipam: Value) -> String {
    let mut ipam = ipam;
    ipam["type"] = json!("host-local");
    ipam["dataDir"] = json!(data_dir);
    json!({"cniVersion": version, "name": "hl-net", "type": "bridge", "ipam": ipam}).to_string()
}

/// IPAM plugins never enter the netns; any path that is not our own will do.
const NETNS: &str = "/run/netns/cni-multi-ipam-test";

fn call(cmd: &str, id: &str, stdin: &str) -> Call {
    Call::new("host-local", cmd, NETNS, stdin).set("CNI_CONTAINERID", id)
}

fn addresses(out: &Value) -> Vec<String> {
    out["ips"]
        .as_array()
        .map(|a| {
            a.iter()
                .map(|ip| ip["address"].as_str().unwrap_or_default().to_string())
                .collect()
        })
        .unwrap_or_default()
}

fn store_files(dir: &Path) -> BTreeSet<String> {
    std::fs::read_dir(dir.join("hl-net"))
        .expect("store dir")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .collect()
}

#[test]
fn a_thousand_adds_are_distinct_round_robin_and_in_reference_format() {
    enter_test_host();
    let dir = TempDir::new("hl-seq");
    let stdin = conf(
        "1.0.0",
        &dir.0,
        json!({"subnet": "10.10.0.0/22", "gateway": "10.10.0.1"}),
    );
    let mut seen = Vec::new();
    for i in 0..1000 {
        let out = call("ADD", &format!("ctr-{i}"), &stdin).run().ok();
        assert_eq!(out["ips"][0]["gateway"], "10.10.0.1");
        seen.extend(addresses(&out));
    }
    // Round robin from rangeStart, skipping network and gateway.
    let expected: Vec<String> = (2..1002u32)
        .map(|n| format!("10.10.{}.{}/22", n / 256, n % 256))
        .collect();
    assert_eq!(seen, expected);
    let store = dir.0.join("hl-net");
    for i in [0usize, 499, 999] {
        let ip = expected[i].trim_end_matches("/22");
        let bytes = std::fs::read(store.join(ip)).expect("reservation file");
        assert_eq!(bytes, format!("ctr-{i}\r\neth0").into_bytes(), "{ip}");
    }
    assert_eq!(
        std::fs::read(store.join("last_reserved_ip.0")).ok(),
        Some(b"10.10.3.233".to_vec())
    );
    assert!(store.join("lock").exists());
    // DEL then a new ADD continues after the last reserved IP, not at the hole.
    call("DEL", "ctr-0", &stdin).run().ok();
    let out = call("ADD", "ctr-new", &stdin).run().ok();
    assert_eq!(addresses(&out), ["10.10.3.234/22"]);
}

#[test]
fn sixty_four_concurrent_adds_and_dels_are_safe() {
    enter_test_host();
    let dir = TempDir::new("hl-par");
    let stdin = conf(
        "1.1.0",
        &dir.0,
        json!({"ranges": [[{"subnet": "10.20.0.0/24"}]]}),
    );
    let children: Vec<_> = (0..64)
        .map(|i| call("ADD", &format!("c{i}"), &stdin).spawn())
        .collect();
    let mut ips = BTreeSet::new();
    for child in children {
        let out = Outcome::of(child).ok();
        assert!(ips.insert(addresses(&out).remove(0)), "duplicate address");
    }
    assert_eq!(ips.len(), 64);
    assert!(
        store_files(&dir.0).contains(INDEX),
        "our owner index is kept"
    );
    let children: Vec<_> = (0..64)
        .map(|i| call("DEL", &format!("c{i}"), &stdin).spawn())
        .collect();
    for child in children {
        Outcome::of(child).ok();
    }
    let left = store_files(&dir.0);
    assert_eq!(
        left,
        BTreeSet::from(["last_reserved_ip.0".to_string(), "lock".to_string()])
    );
}

#[test]
fn dual_stack_gives_one_address_per_family_and_dns_from_resolv_conf() {
    enter_test_host();
    let dir = TempDir::new("hl-dual");
    let resolv = dir.0.join("resolv.conf");
    std::fs::write(&resolv, "# c\nnameserver 10.96.0.10\nsearch a.svc b.svc\n; x\noptions ndots:5\ndomain cluster.local\n")
        .expect("resolv.conf");
    let stdin = conf(
        "0.4.0",
        &dir.0,
        json!({"ranges": [[{"subnet": "10.30.0.0/24"}], [{"subnet": "fd30::/64"}]],
               "routes": [{"dst": "0.0.0.0/0"}], "resolvConf": resolv}),
    );
    let out = call("ADD", "dual", &stdin).run().ok();
    assert_eq!(
        out,
        json!({"cniVersion": "0.4.0",
            "ips": [{"version": "4", "address": "10.30.0.2/24", "gateway": "10.30.0.1"},
                    {"version": "6", "address": "fd30::2/64", "gateway": "fd30::1"}],
            "routes": [{"dst": "0.0.0.0/0"}],
            "dns": {"nameservers": ["10.96.0.10"], "domain": "cluster.local",
                    "search": ["a.svc", "b.svc"], "options": ["ndots:5"]}})
    );
    call("CHECK", "dual", &stdin).run().ok();
    let e = call("CHECK", "other", &stdin).run().err(999);
    assert_eq!(
        e["msg"],
        "host-local: Failed to find address added by container other"
    );
    // 0.2.0 cannot carry two address sets of one family; one per family is fine.
    let out = call("ADD", "old", &stdin.replace("0.4.0", "0.2.0"))
        .run()
        .ok();
    assert_eq!(out["ip4"]["ip"], "10.30.0.3/24");
    assert_eq!(out["ip6"]["ip"], "fd30::3/64");
}

#[test]
fn requested_ips_are_honoured_or_refused_clearly() {
    enter_test_host();
    let dir = TempDir::new("hl-req");
    let stdin = conf("1.0.0", &dir.0, json!({"subnet": "10.40.0.0/24"}));
    let out = call("ADD", "a", &stdin)
        .set("CNI_ARGS", "IP=10.40.0.77")
        .run()
        .ok();
    assert_eq!(addresses(&out), ["10.40.0.77/24"]);
    let e = call("ADD", "b", &stdin)
        .set("CNI_ARGS", "IP=10.40.0.77")
        .run()
        .err(999);
    assert_eq!(
        e["msg"],
        "failed to allocate for range 0: requested IP address 10.40.0.77 is not available in range set 10.40.0.1-10.40.0.254"
    );
    let e = call("ADD", "b", &stdin)
        .set("CNI_ARGS", "IP=10.99.0.5")
        .run()
        .err(999);
    assert_eq!(e["msg"], "failed to allocate all requested IPs: 10.99.0.5");
    let e = call("ADD", "b", &stdin)
        .set("CNI_ARGS", "IP=10.40.0.1")
        .run()
        .err(999);
    assert!(
        e["msg"]
            .as_str()
            .unwrap_or_default()
            .contains("is subnet's gateway"),
        "{e}"
    );
    // args.cni.ips and runtimeConfig.ips accept ip/prefix.
    let mut v: Value = serde_json::from_str(&stdin).expect("json");
    v["args"] = json!({"cni": {"ips": ["10.40.0.80/24"]}});
    let out = call("ADD", "c", &v.to_string()).run().ok();
    assert_eq!(addresses(&out), ["10.40.0.80/24"]);
    v["args"] = json!(null);
    v["runtimeConfig"] = json!({"ips": ["10.40.0.81"]});
    let out = call("ADD", "d", &v.to_string()).run().ok();
    assert_eq!(addresses(&out), ["10.40.0.81/24"]);
    // A failed ADD leaves nothing of that container behind.
    let held: Vec<String> = store_files(&dir.0)
        .into_iter()
        .filter(|f| f.starts_with("10."))
        .collect();
    assert_eq!(held, ["10.40.0.77", "10.40.0.80", "10.40.0.81"]);
    // A second ADD of the same attachment is refused.
    let e = call("ADD", "a", &stdin).run().err(999);
    assert!(
        e["msg"]
            .as_str()
            .unwrap_or_default()
            .contains("duplicate allocation is not allowed"),
        "{e}"
    );
}

/// Multus sends a selection's `ips` twice: as CNI_ARGS `IP=` (comma-joined)
/// and as the `ips` capability. The reference keys requests by address, so
/// the same address twice is one request.
#[test]
fn a_requested_ip_given_twice_is_one_request() {
    enter_test_host();
    let dir = TempDir::new("hl-twice");
    let mut v: Value =
        serde_json::from_str(&conf("1.0.0", &dir.0, json!({"subnet": "10.41.0.0/24"})))
            .expect("json");
    v["runtimeConfig"] = json!({"ips": ["10.41.0.50/24"]});
    let out = call("ADD", "a", &v.to_string())
        .set("CNI_ARGS", "IgnoreUnknown=true;IP=10.41.0.50")
        .run()
        .ok();
    assert_eq!(addresses(&out), ["10.41.0.50/24"]);
    // args.cni.ips as well, and the three sources together.
    v["args"] = json!({"cni": {"ips": ["10.41.0.51"]}});
    v["runtimeConfig"] = json!({"ips": ["10.41.0.51"]});
    let out = call("ADD", "b", &v.to_string())
        .set("CNI_ARGS", "IP=10.41.0.51")
        .run()
        .ok();
    assert_eq!(addresses(&out), ["10.41.0.51/24"]);
    // Dual stack: IP= lists one address per family, comma-separated.
    let mut v: Value = serde_json::from_str(&conf(
        "1.0.0",
        &dir.0,
        json!({"ranges": [[{"subnet": "10.41.1.0/24"}], [{"subnet": "fd41::/64"}]]}),
    ))
    .expect("json");
    v["runtimeConfig"] = json!({"ips": ["10.41.1.7/24", "fd41::7/64"]});
    let out = call("ADD", "c", &v.to_string())
        .set("CNI_ARGS", "IgnoreUnknown=true;IP=10.41.1.7,fd41::7")
        .run()
        .ok();
    assert_eq!(addresses(&out), ["10.41.1.7/24", "fd41::7/64"]);
    // Two different addresses of one range set are still refused.
    v["runtimeConfig"] = json!(null);
    let e = call("ADD", "d", &v.to_string())
        .set("CNI_ARGS", "IP=10.41.1.8,10.41.1.9")
        .run()
        .err(999);
    assert_eq!(e["msg"], "failed to allocate all requested IPs: 10.41.1.9");
    let e = call("ADD", "d", &v.to_string())
        .set("CNI_ARGS", "IP=10.41.1.8,nope")
        .run()
        .err(4);
    assert_eq!(
        e["msg"],
        "ARGS: error parsing value of pair \"IP=10.41.1.8,nope\": invalid IP address: nope"
    );
}

#[test]
fn exhaustion_names_the_range() {
    enter_test_host();
    let dir = TempDir::new("hl-full");
    let stdin = conf("1.0.0", &dir.0, json!({"subnet": "10.50.0.0/29"}));
    for i in 0..5 {
        call("ADD", &format!("f{i}"), &stdin).run().ok();
    }
    let e = call("ADD", "f5", &stdin).run().err(999);
    assert_eq!(
        e["msg"],
        "failed to allocate for range 0: no IP addresses available in range set: 10.50.0.1-10.50.0.6"
    );
}

#[test]
fn gc_releases_exactly_the_attachments_not_listed() {
    enter_test_host();
    let dir = TempDir::new("hl-gc");
    let stdin = conf("1.1.0", &dir.0, json!({"subnet": "10.60.0.0/24"}));
    for id in ["keep1", "drop1", "keep2", "drop2"] {
        call("ADD", id, &stdin).run().ok();
    }
    // A legacy ID-only file of a live container stays; one of a dead one goes.
    let store = dir.0.join("hl-net");
    std::fs::write(store.join("10.60.0.100"), "keep1").expect("fixture");
    std::fs::write(store.join("10.60.0.101"), "gone").expect("fixture");
    let mut v: Value = serde_json::from_str(&stdin).expect("json");
    v["cni.dev/valid-attachments"] = json!([{"containerID": "keep1", "ifname": "eth0"}, {"containerID": "keep2", "ifname": "eth0"}]);
    Call::new("host-local", "GC", "", &v.to_string())
        .unset("CNI_CONTAINERID")
        .unset("CNI_NETNS")
        .unset("CNI_IFNAME")
        .run()
        .ok();
    let held: Vec<String> = store_files(&dir.0)
        .into_iter()
        .filter(|f| f.starts_with("10."))
        .collect();
    assert_eq!(held, ["10.60.0.100", "10.60.0.2", "10.60.0.4"]);
    // STATUS succeeds on a usable store and fails (50) on an unusable one.
    let status = |s: &str| {
        Call::new("host-local", "STATUS", "", s)
            .unset("CNI_CONTAINERID")
            .run()
    };
    status(&stdin).ok();
    let blocked = dir.0.join("file");
    std::fs::write(&blocked, "").expect("file");
    status(&conf("1.1.0", &blocked, json!({"subnet": "10.60.0.0/24"}))).err(50);
}

#[test]
fn a_store_written_by_the_reference_is_honoured() {
    enter_test_host();
    let dir = TempDir::new("hl-ref");
    let store = dir.0.join("hl-net");
    std::fs::create_dir_all(&store).expect("store");
    // What the Go plugin leaves: CRLF files, a legacy ID-only file, last_reserved_ip, lock.
    std::fs::write(store.join("10.70.0.2"), "ref-a\r\neth0").expect("fixture");
    std::fs::write(store.join("10.70.0.3"), "ref-b").expect("fixture");
    std::fs::write(store.join("10.70.0.5"), "ref-c\r\neth1").expect("fixture");
    std::fs::write(store.join("last_reserved_ip.0"), "10.70.0.3").expect("fixture");
    std::fs::write(store.join("lock"), "").expect("fixture");
    let stdin = conf("1.0.0", &dir.0, json!({"subnet": "10.70.0.0/24"}));
    let mut got = Vec::new();
    for i in 0..3 {
        got.extend(addresses(
            &call("ADD", &format!("new{i}"), &stdin).run().ok(),
        ));
    }
    assert_eq!(got, ["10.70.0.4/24", "10.70.0.6/24", "10.70.0.7/24"]);
    call("CHECK", "ref-a", &stdin).run().ok();
    call("DEL", "ref-b", &stdin).run().ok();
    call("DEL", "ref-c", &stdin)
        .set("CNI_IFNAME", "eth1")
        .run()
        .ok();
    let held: Vec<String> = store_files(&dir.0)
        .into_iter()
        .filter(|f| f.starts_with("10."))
        .collect();
    assert_eq!(held, ["10.70.0.2", "10.70.0.4", "10.70.0.6", "10.70.0.7"]);
}

#[test]
fn names_and_data_dirs_that_escape_the_store_are_refused() {
    enter_test_host();
    let dir = TempDir::new("hl-esc");
    let bad_dir = conf(
        "1.0.0",
        Path::new("/tmp/../etc"),
        json!({"subnet": "10.80.0.0/24"}),
    );
    let e = call("ADD", "x", &bad_dir).run().err(7);
    assert!(
        e["msg"]
            .as_str()
            .unwrap_or_default()
            .starts_with("invalid dataDir"),
        "{e}"
    );
    let mut v: Value =
        serde_json::from_str(&conf("1.0.0", &dir.0, json!({"subnet": "10.80.0.0/24"})))
            .expect("json");
    v["name"] = json!("../../etc");
    call("ADD", "x", &v.to_string()).run().err(7);
    assert!(!dir.0.join("hl-net").exists());
    // DEL of a refused dataDir: nothing of ours is there; success, said on stderr.
    let del = call("DEL", "x", &bad_dir).run();
    assert_eq!(del.status, 0, "{del:?}");
    assert!(del.stderr.contains("invalid dataDir"), "{del:?}");
}

/// A relative `dataDir` resolves against the plugin's working directory, as Go's
/// os functions resolve the reference's.
#[test]
fn a_relative_data_dir_is_relative_to_the_working_directory() {
    enter_test_host();
    let cwd = TempDir::new("hl-rel");
    let c = conf(
        "1.0.0",
        Path::new("state/ipam"),
        json!({"subnet": "10.81.0.0/24"}),
    );
    let out = call("ADD", "rel", &c).run_in_dir(&cwd.0).ok();
    assert_eq!(addresses(&out), ["10.81.0.2/24"]);
    let store = cwd.0.join("state/ipam");
    assert!(store_files(&store).contains("10.81.0.2"));
    call("CHECK", "rel", &c).run_in_dir(&cwd.0).ok();
    call("DEL", "rel", &c).run_in_dir(&cwd.0).ok();
    assert!(!store_files(&store).contains("10.81.0.2"));
}

#[test]
fn a_duplicate_add_fails_and_keeps_the_first_reservation() {
    enter_test_host();
    let dir = TempDir::new("hl-dup");
    let stdin = conf("1.0.0", &dir.0, json!({"subnet": "10.12.0.0/24"}));
    call("ADD", "ctr-a", &stdin).run().ok();
    let e = call("ADD", "ctr-a", &stdin).run().err(999);
    assert!(
        e["msg"].as_str().is_some_and(|m| m.contains("duplicate")),
        "{e}"
    );
    assert_eq!(
        std::fs::read(dir.0.join("hl-net").join("10.12.0.2")).ok(),
        Some(b"ctr-a\r\neth0".to_vec()),
        "the first ADD's reservation is still there"
    );
    call("DEL", "ctr-a", &stdin).run().ok();
    assert!(!dir.0.join("hl-net").join("10.12.0.2").exists());
}

/// The reference's host-local (v1.1.1 in /usr/lib/cni), run on our store.
const REFERENCE: &str = "/usr/lib/cni/host-local";
/// Our owner index in the store directory (see src/ipam/index.rs).
const INDEX: &str = ".cni-multi-owners";

fn reference(cmd: &str, id: &str, stdin: &str) -> std::process::Output {
    assert!(
        Path::new(REFERENCE).exists(),
        "{REFERENCE} missing: install containernetworking-plugins (tests/install-deps.sh)"
    );
    harness::run_other_plugin(REFERENCE, cmd, id, NETNS, stdin)
}

fn reference_ok(cmd: &str, id: &str, stdin: &str) -> Value {
    let out = reference(cmd, id, stdin);
    assert!(out.status.success(), "reference {cmd} {id}: {out:?}");
    serde_json::from_slice(&out.stdout).unwrap_or(Value::Null)
}

fn held(dir: &Path) -> Vec<String> {
    store_files(dir)
        .into_iter()
        .filter(|f| f.parse::<std::net::IpAddr>().is_ok())
        .collect()
}

/// Coarse directory timestamps move once per clock tick (at most 10 ms); pods
/// do not come and go faster than that.
fn next_tick() {
    std::thread::sleep(std::time::Duration::from_millis(25));
}

/// A live switch both ways on one store with our index in it: each side sees
/// the other's reservations, releases them, and refuses duplicates of them.
#[test]
fn the_reference_and_we_share_a_store_with_our_index_in_it() {
    enter_test_host();
    let dir = TempDir::new("hl-interop");
    let stdin = conf("1.0.0", &dir.0, json!({"subnet": "10.13.0.0/24"}));
    for id in ["a1", "a2", "a3"] {
        call("ADD", id, &stdin).run().ok();
    }
    let store = dir.0.join("hl-net");
    assert!(store.join(INDEX).exists(), "our index is written");
    // The reference allocates after our last IP, releases ours, and sees ours
    // as duplicates: the index is no reservation to it.
    let r1 = reference_ok("ADD", "r1", &stdin);
    assert_eq!(addresses(&r1), ["10.13.0.5/24"]);
    let dup = reference("ADD", "a1", &stdin);
    assert!(
        String::from_utf8_lossy(&dup.stdout).contains("duplicate allocation"),
        "{dup:?}"
    );
    reference_ok("CHECK", "a1", &stdin);
    reference_ok("DEL", "a2", &stdin);
    assert_eq!(held(&dir.0), ["10.13.0.2", "10.13.0.4", "10.13.0.5"]);
    // We see the reference's reservation and the hole it made, though our
    // index still lists a2 and not r1.
    call("CHECK", "r1", &stdin).run().ok();
    let e = call("ADD", "r1", &stdin).run().err(999);
    assert!(
        e["msg"].as_str().is_some_and(|m| m.contains("duplicate")),
        "{e}"
    );
    call("CHECK", "a2", &stdin).run().err(999);
    assert_eq!(
        addresses(&call("ADD", "a2", &stdin).run().ok()),
        ["10.13.0.6/24"]
    );
    call("DEL", "r1", &stdin).run().ok();
    assert_eq!(held(&dir.0), ["10.13.0.2", "10.13.0.4", "10.13.0.6"]);
    // And back: the reference releases everything we gave.
    for id in ["a1", "a2", "a3"] {
        reference_ok("DEL", id, &stdin);
    }
    assert!(held(&dir.0).is_empty());
    // Our next call finds nothing held and takes the index away with it.
    call("DEL", "a1", &stdin).run().ok();
    assert_eq!(
        store_files(&dir.0),
        BTreeSet::from(["last_reserved_ip.0".to_string(), "lock".to_string()])
    );
}

/// The reference releases an address and gives the same one (requested) to
/// another container: same file name, maybe the same inode. Our index, which
/// still names the old owner, must not be believed.
#[test]
fn an_ip_the_reference_gives_again_is_not_taken_from_a_stale_index() {
    enter_test_host();
    let dir = TempDir::new("hl-stale");
    let stdin = conf("1.0.0", &dir.0, json!({"subnet": "10.14.0.0/24"}));
    assert_eq!(
        addresses(&call("ADD", "old", &stdin).run().ok()),
        ["10.14.0.2/24"]
    );
    call("ADD", "other", &stdin).run().ok();
    next_tick();
    reference_ok("DEL", "old", &stdin);
    let mut wanted: Value = serde_json::from_str(&stdin).expect("json");
    wanted["runtimeConfig"] = json!({"ips": ["10.14.0.2"]});
    let got = reference_ok("ADD", "new", &wanted.to_string());
    assert_eq!(addresses(&got), ["10.14.0.2/24"]);
    let file = dir.0.join("hl-net").join("10.14.0.2");
    // A DEL of the old owner releases nothing of the new one's.
    call("DEL", "old", &stdin).run().ok();
    assert_eq!(std::fs::read(&file).ok(), Some(b"new\r\neth0".to_vec()));
    call("CHECK", "old", &stdin).run().err(999);
    call("CHECK", "new", &stdin).run().ok();
    let e = call("ADD", "new", &stdin).run().err(999);
    assert!(
        e["msg"].as_str().is_some_and(|m| m.contains("10.14.0.2")),
        "{e}"
    );
    call("DEL", "new", &stdin).run().ok();
    assert!(!file.exists());
    assert_eq!(held(&dir.0), ["10.14.0.3"]);
}

/// Our ADDs and the reference's at once on one store: every address distinct;
/// then each side releases the other's, and nothing is left.
#[test]
fn ours_and_the_reference_adding_at_once_get_distinct_ips() {
    enter_test_host();
    let dir = TempDir::new("hl-mixed");
    let stdin = conf("1.0.0", &dir.0, json!({"subnet": "10.15.0.0/24"}));
    // A store with our index in it before the race starts.
    call("ADD", "seed", &stdin).run().ok();
    let theirs: Vec<_> = (0..12)
        .map(|i| {
            let stdin = stdin.clone();
            std::thread::spawn(move || addresses(&reference_ok("ADD", &format!("r{i}"), &stdin)))
        })
        .collect();
    let ours: Vec<_> = (0..24)
        .map(|i| call("ADD", &format!("o{i}"), &stdin).spawn())
        .collect();
    let mut ips = BTreeSet::from(["10.15.0.2/24".to_string()]);
    for child in ours {
        let got = addresses(&Outcome::of(child).ok());
        assert!(ips.insert(got[0].clone()), "duplicate {got:?}");
    }
    for t in theirs {
        let got = t.join().expect("reference thread");
        assert!(ips.insert(got[0].clone()), "duplicate {got:?}");
    }
    assert_eq!(ips.len(), 37);
    assert_eq!(held(&dir.0).len(), 37);
    // Each releases the other's, concurrently again.
    let theirs: Vec<_> = (0..24)
        .map(|i| {
            let stdin = stdin.clone();
            std::thread::spawn(move || reference_ok("DEL", &format!("o{i}"), &stdin))
        })
        .collect();
    let ours: Vec<_> = (0..12)
        .map(|i| call("DEL", &format!("r{i}"), &stdin).spawn())
        .chain([call("DEL", "seed", &stdin).spawn()])
        .collect();
    for child in ours {
        Outcome::of(child).ok();
    }
    for t in theirs {
        t.join().expect("reference thread");
    }
    assert!(held(&dir.0).is_empty(), "{:?}", held(&dir.0));
    // The index, stale now, is rebuilt by the next call and gives no duplicate.
    call("ADD", "after", &stdin).run().ok();
    call("ADD", "after", &stdin).run().err(999);
    assert_eq!(held(&dir.0).len(), 1);
}

/// Symlinks planted in the store where host-local keeps its state: ADD wrote
/// the address through `last_reserved_ip.0` into the file it pointed at, and
/// opening `lock` narrowed its target's mode to 0600. Now both are refused,
/// naming the link; the targets are untouched and nothing stays reserved.
#[test]
fn symlinks_planted_in_the_store_are_never_followed() {
    use std::os::unix::fs::{PermissionsExt, symlink};
    let dir = TempDir::new("hl-symlink");
    let victim = dir.0.join("victim");
    std::fs::write(&victim, "precious").expect("victim");
    std::fs::set_permissions(&victim, std::fs::Permissions::from_mode(0o644)).expect("chmod");
    let ipam = json!({"subnet": "10.60.0.0/24"});
    let stdin = conf("1.0.0", &dir.0, ipam);
    let store = dir.0.join("hl-net");
    std::fs::create_dir_all(&store).expect("store");
    let refused = |stdin: &str| {
        let out = call("ADD", "ctr-link", stdin).run();
        assert_eq!(out.status, 1, "{out:?}");
        out.json()
    };

    symlink(&victim, store.join("last_reserved_ip.0")).expect("symlink");
    let e = refused(&stdin);
    assert!(e.to_string().contains("last_reserved_ip.0"), "{e}");
    assert_eq!(
        std::fs::read_to_string(&victim).expect("victim"),
        "precious"
    );
    assert!(
        !store.join("10.60.0.2").exists(),
        "the failed ADD left no reservation: {:?}",
        store_files(&store)
    );
    std::fs::remove_file(store.join("last_reserved_ip.0")).expect("unlink");

    std::fs::remove_file(store.join("lock")).expect("lock of the first ADD");
    symlink(&victim, store.join("lock")).expect("symlink");
    let e = refused(&stdin);
    assert!(e.to_string().contains("symbolic link"), "{e}");
    let mode = std::fs::metadata(&victim)
        .expect("stat")
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o644, "the lock's target keeps its mode");
    assert_eq!(
        std::fs::read_to_string(&victim).expect("victim"),
        "precious"
    );
}

use super::*;
use std::net::Ipv4Addr;
use std::os::unix::fs::PermissionsExt;

fn sample(cid: &str) -> (Attachment, Request, Lease) {
    (
        Attachment {
            container_id: cid.into(),
            network: "lan".into(),
            ifname: "eth0".into(),
        },
        Request {
            netns: "/run/netns/x".into(),
            ifname: "eth0".into(),
            client_id: crate::dhcp::options::client_id(cid, "lan", "eth0"),
            provide: vec![(12, b"h".to_vec())],
            request: vec![3, 1],
        },
        Lease {
            address: Ipv4Addr::new(10, 0, 0, 5),
            server: Ipv4Addr::new(10, 0, 0, 1),
            acquired: 100,
            lease_secs: 3600,
            renew_secs: 1800,
            rebind_secs: 3150,
            options: Default::default(),
        },
    )
}

#[test]
fn leases_are_saved_privately_loaded_and_removed() {
    let dir = std::env::temp_dir().join(format!("cni-multi-dhcpstate-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let state = StateDir::open(&dir).expect("open");
    let mode = |p: &Path| std::fs::metadata(p).expect("stat").permissions().mode() & 0o777;
    assert_eq!(mode(&dir), 0o700);
    let (a, r, l) = sample("c1");
    state.save(&a, &r, &l).expect("save");
    let (b, rb, lb) = sample("c2");
    state.save(&b, &rb, &lb).expect("save");
    assert_eq!(mode(&dir.join(state_file_name(&a))), 0o600);
    // Junk is reported, leftovers of a crash are removed.
    std::fs::write(dir.join("junk.json"), "{").expect("junk");
    std::fs::write(dir.join(".x.json.tmp42"), "").expect("tmp");
    let (saved, problems) = state.load().expect("load");
    assert_eq!(saved.len(), 2);
    assert_eq!((&saved[0].attachment, &saved[0].lease), (&a, &l));
    assert_eq!(saved[0].request, r);
    assert_eq!(problems.len(), 1, "{problems:?}");
    assert!(problems[0].contains("junk.json"), "{problems:?}");
    assert!(!dir.join(".x.json.tmp42").exists());
    // A reader beside the daemon sees the same leases, each with its file;
    // one under another attachment's name is left out as the daemon does.
    let copied = dir.join(format!("{}.json", "0".repeat(32)));
    std::fs::copy(dir.join(state_file_name(&a)), &copied).expect("copy");
    let read = read_leases(&dir).expect("read");
    assert_eq!(read.len(), 2);
    assert!(
        read.iter()
            .any(|(p, s)| p == &dir.join(state_file_name(&a)) && s == &saved[0])
    );
    std::fs::remove_file(&copied).expect("rm copy");
    // While the daemon holds the directory, the doctor removes nothing.
    assert!(!remove_unkept(&dir, &b).expect("locked"));
    assert!(dir.join(state_file_name(&b)).exists());
    // A second daemon on the same directory is refused.
    let e = StateDir::open(&dir).err().expect("locked");
    assert!(e.to_string().contains("another dhcp daemon"), "{e}");
    state.remove(&a).expect("remove");
    state.remove(&a).expect("remove again");
    let (saved, _) = state.load().expect("load");
    assert_eq!(saved.len(), 1);
    drop(state);
    assert!(remove_unkept(&dir, &b).expect("unlocked"));
    assert!(read_leases(&dir).expect("read").is_empty());
    let _ = std::fs::remove_dir_all(&dir);
}

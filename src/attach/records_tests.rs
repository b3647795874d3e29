use super::*;

#[test]
fn a_record_names_its_attachment() {
    assert_eq!(record_owner("c1@eth0.json"), Some(("c1", "eth0", None)));
    assert_eq!(
        record_owner("c1@eth0@0123456789abcdef.json"),
        Some(("c1", "eth0", Some("0123456789abcdef")))
    );
    for bad in ["c1.json", "c1@eth0@x@y.json", "../x@eth0.json", "c1@.json"] {
        assert_eq!(record_owner(bad), None, "{bad}");
    }
    // A long ID's record is named by its token and still names its owner.
    let id = "c".repeat(1000);
    let path = record_path(Path::new("/d"), "net", &id, "eth0");
    let name = path.file_name().and_then(|n| n.to_str()).expect("name");
    assert!(name.len() <= crate::files::NAME_MAX, "{name}");
    let token = crate::files::id_token(&id);
    assert_eq!(
        record_owner(name),
        Some((token.as_str(), "eth0", Some(network_hash("net").as_str())))
    );
}

fn rec(network: &str, id: &str, ifname: &str, ip: &str) -> Record {
    Record {
        handles: Vec::new(),
        network: network.into(),
        container_id: id.into(),
        ifname: ifname.into(),
        addresses: vec![ip.parse().expect("ip")],
    }
}

#[test]
fn gc_splits_this_networks_unkept_attachments_from_the_rest() {
    let dir = std::env::temp_dir().join(format!("cni-multi-att-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let records = [
        rec("net", "a", "eth0", "10.0.0.2/24"),
        rec("net", "b", "eth0", "10.0.0.3/24"),
        rec("net", "c", "eth1", "10.0.0.4/24"),
        // Same container and interface on another network sharing the dir.
        rec("other", "b", "eth0", "10.1.0.3/24"),
    ];
    for r in &records {
        let p = record_path(&dir, &r.network, &r.container_id, &r.ifname);
        crate::files::write_private_atomic(&p, &serde_json::to_vec(r).expect("json"))
            .expect("write");
    }
    let valid: Vec<Attachment> =
        crate::cni::json::from_str(r#"[{"containerID":"a","ifname":"eth0"},{"containerID":"c"}]"#)
            .expect("valid");
    let split = Split::read(&dir, "test", "net", &valid).expect("read");
    let stale: Vec<_> = split.stale.iter().map(|(_, r)| r.clone()).collect();
    assert_eq!(stale, vec![records[1].clone()]);
    assert_eq!(split.live.len(), 3);
    assert!(split.container_live("b"));
    let ips: Vec<IpNet> = vec![
        "10.0.0.2/24".parse().expect("ip"),
        "10.0.0.9/24".parse().expect("ip"),
    ];
    assert_eq!(split.not_live(&ips), vec![ips[1]]);
    split.remove_stale().expect("remove");
    assert!(!split.stale[0].0.exists());
    let other = record_path(&dir, "other", "b", "eth0");
    assert!(other.exists(), "the other network's record of b@eth0 stays");
    // A record that cannot be decoded stops GC before it removes anything.
    std::fs::write(dir.join("junk.json"), b"{").expect("junk");
    let err = Split::read(&dir, "test", "net", &valid)
        .err()
        .expect("junk fails GC");
    assert!(err.to_string().contains("junk.json"), "{err}");
    let _ = std::fs::remove_dir_all(&dir);
}

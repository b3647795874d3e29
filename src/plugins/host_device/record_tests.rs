use super::*;

fn link(name: &str, kind: LinkKind, index: u32, parent: Option<u32>, nsid: Option<i32>) -> Link {
    Link {
        index,
        name: name.into(),
        kind,
        parent,
        link_netnsid: nsid,
        mac: vec![0x0a, 0x58, 0x0a, 0x16, 0, 2],
        ..Link::default()
    }
}

#[test]
fn a_record_survives_its_file_and_is_only_this_attachments() {
    let device = link("hd-dev", LinkKind::Veth, 5, Some(4), None);
    let record = Record {
        container_id: "ctr-1".into(),
        ifname: "eth0".into(),
        host_name: "hd-dev".into(),
        identity: Identity::of(&device, String::new()),
    };
    assert_eq!(record.identity.host_link, Some(4));
    let bytes = encode(&record);
    let text = String::from_utf8(bytes.clone()).expect("utf-8");
    assert!(text.contains("\"hostName\": \"hd-dev\""), "{text}");
    assert!(text.contains("\"hostLink\": 4"), "{text}");
    assert!(!text.contains("permAddr"), "empty fields left out: {text}");
    assert_eq!(decode(&bytes, "ctr-1", "eth0").ok(), Some(record.clone()));
    assert!(decode(&bytes, "ctr-2", "eth0").is_err());
    assert!(decode(&bytes, "ctr-1", "eth1").is_err());
    assert!(decode(b"{", "ctr-1", "eth0").is_err());
    let bad_name = Record {
        host_name: "../x".into(),
        ..record
    };
    assert!(decode(&encode(&bad_name), "ctr-1", "eth0").is_err());
}

#[test]
fn a_veth_is_known_by_its_peer_in_the_host() {
    let rec = Identity::of(
        &link("hd-dev", LinkKind::Veth, 5, Some(4), None),
        String::new(),
    );
    let pod = View::Away(Some(0));
    // The real device in the pod: its peer in the host (nsid 0) at 4.
    assert_eq!(
        rec.mismatch(&link("eth0", LinkKind::Veth, 5, Some(4), Some(0)), pod),
        None
    );
    // Its peer's index equal to its own: the kernel sends no IFLA_LINK.
    let same = Identity::of(
        &link("hd-dev", LinkKind::Veth, 4, Some(4), None),
        String::new(),
    );
    assert_eq!(
        same.mismatch(&link("eth0", LinkKind::Veth, 4, None, Some(0)), pod),
        None
    );
    // The container's own veth, whatever its index, name or MAC.
    let fake = link("eth0", LinkKind::Veth, 5, Some(4), None);
    assert!(rec.mismatch(&fake, pod).is_some());
    assert_eq!(
        describe(&fake, pod),
        "veth link \"eth0\" with its peer in the container at index 4, MAC 0a:58:0a:16:00:02"
    );
    // A peer in a namespace of the container's making.
    assert!(
        rec.mismatch(&link("eth0", LinkKind::Veth, 5, Some(4), Some(3)), pod)
            .is_some()
    );
    // A host that has no id in the pod: nothing there can be the host's.
    assert!(
        rec.mismatch(
            &link("eth0", LinkKind::Veth, 5, Some(4), Some(0)),
            View::Away(None)
        )
        .is_some()
    );
    // Home again, in the host.
    assert_eq!(
        rec.mismatch(
            &link("hd-dev", LinkKind::Veth, 5, Some(4), None),
            View::Host
        ),
        None
    );
    assert_eq!(
        rec.to_string(),
        "veth with its peer in the host at index 4, MAC 0a:58:0a:16:00:02"
    );
}

#[test]
fn hardware_is_known_by_bus_device_and_permanent_address() {
    let mut nic = link("ens1f0", LinkKind::Device, 2, None, None);
    nic.parent_bus = "pci".into();
    nic.parent_dev = "0000:01:00.0".into();
    nic.perm_addr = vec![0, 0x1b, 0x21, 1, 2, 3];
    let rec = Identity::of(&nic, "/sys/devices/pci0000:00/0000:01:00.0".into());
    let pod = View::Away(Some(0));
    let mut moved = nic.clone();
    moved.name = "eth0".into();
    moved.index = 9;
    // The container may change the MAC; the device stays the device.
    moved.mac = vec![2, 2, 2, 2, 2, 2];
    assert_eq!(rec.mismatch(&moved, pod), None);
    let mut other_port = moved.clone();
    other_port.perm_addr = vec![0, 0x1b, 0x21, 1, 2, 4];
    assert!(rec.mismatch(&other_port, pod).is_some());
    let mut other_fn = moved.clone();
    other_fn.parent_dev = "0000:01:00.1".into();
    assert!(rec.mismatch(&other_fn, pod).is_some());
    // An ipvlan copies its lower device's address as a permanent one: a
    // kind the container can create is never hardware.
    let mut ipvlan = link("eth0", LinkKind::Ipvlan, 9, Some(3), None);
    ipvlan.perm_addr = nic.perm_addr.clone();
    let bare_nic = Identity::of(
        &Link {
            parent_bus: String::new(),
            parent_dev: String::new(),
            ..nic.clone()
        },
        String::new(),
    );
    assert!(bare_nic.mismatch(&ipvlan, pod).is_some());
    assert!(rec.to_string().contains("pci device 0000:01:00.0"));
    assert_eq!(rec.unprovable(Owner::Pod), None);
    assert_eq!(bare_nic.unprovable(Owner::Pod), None);
    // A link built on the device (an IPoIB child shares its bus device)
    // has the device as its lower device; the device has none.
    let mut child = moved.clone();
    child.index = 10;
    child.parent = Some(9);
    assert!(rec.mismatch(&child, pod).is_some());
}

#[test]
fn only_a_bus_device_permanent_mac_or_host_peer_proves_a_link() {
    let pod = View::Away(Some(0));
    let mut nic = link("eth0", LinkKind::Device, 9, None, None);
    nic.perm_addr = vec![0, 0x1b, 0x21, 1, 2, 3];
    let host = Owner::Host;
    assert_eq!(unprovable(&nic, pod, Owner::Pod), None);
    let mut vf = link("eth0", LinkKind::Device, 9, None, None);
    vf.parent_bus = "pci".into();
    vf.parent_dev = "0000:01:10.0".into();
    assert_eq!(unprovable(&vf, pod, Owner::Pod), None);
    assert_eq!(
        unprovable(
            &link("eth0", LinkKind::Veth, 9, Some(4), Some(0)),
            pod,
            host
        ),
        None
    );
    // On a host link: a pod in its own user namespace can build a macvlan
    // there (on the device it was given), not an ipvlan or a vlan.
    for kind in [LinkKind::Macvlan, LinkKind::Ipvlan, LinkKind::Vlan] {
        let on_host = link("eth0", kind.clone(), 9, Some(2), Some(0));
        assert_eq!(unprovable(&on_host, pod, host), None, "{kind}");
        let theirs = unprovable(&on_host, pod, Owner::Pod);
        assert_eq!(
            theirs.is_some(),
            kind == LinkKind::Macvlan,
            "{kind}: {theirs:?}"
        );
    }
    // What a container can make, or copy.
    let mut ipvlan = link("eth0", LinkKind::Ipvlan, 9, Some(3), None);
    ipvlan.perm_addr = nic.perm_addr.clone();
    for made in [
        link("eth0", LinkKind::Tun, 9, None, None),
        link("eth0", LinkKind::Vxlan, 9, None, None),
        link("eth0", LinkKind::Device, 9, None, None),
        link("eth0", LinkKind::Veth, 9, Some(4), None),
        link("eth0", LinkKind::Veth, 9, Some(4), Some(3)),
        ipvlan,
    ] {
        assert!(unprovable(&made, pod, host).is_some(), "{made:?}");
    }
    assert_eq!(
        unprovable(&link("eth0", LinkKind::Tun, 9, None, None), pod, host).as_deref(),
        Some("a tun link with no bus device or peer in the host, which the container can make")
    );
}

#[test]
fn without_a_proof_kind_and_mac_must_match_and_nothing_built_in_the_pod() {
    // A tun moved in from the host: nothing the container could not copy.
    let rec = Identity::of(&link("tap0", LinkKind::Tun, 7, None, None), String::new());
    let pod = View::Away(Some(0));
    assert_eq!(
        rec.mismatch(&link("eth0", LinkKind::Tun, 7, None, None), pod),
        None
    );
    let mut other_mac = link("eth0", LinkKind::Tun, 7, None, None);
    other_mac.mac = vec![2, 0, 0, 0, 0, 1];
    assert!(rec.mismatch(&other_mac, pod).is_some());
    assert!(
        rec.mismatch(&link("eth0", LinkKind::Dummy, 7, None, None), pod)
            .is_some()
    );
    // A veth whose peer was in a third namespace: never one whose peer is in the pod.
    let far = Identity::of(
        &link("v0", LinkKind::Veth, 7, Some(2), Some(5)),
        String::new(),
    );
    assert_eq!(far.host_link, None);
    // Neither is anything DEL may move back.
    for owner in [Owner::Host, Owner::Pod] {
        assert!(rec.unprovable(owner).is_some() && far.unprovable(owner).is_some());
    }
    assert!(
        far.mismatch(&link("eth0", LinkKind::Veth, 7, Some(2), None), pod)
            .is_some()
    );
    assert_eq!(
        far.mismatch(&link("eth0", LinkKind::Veth, 7, Some(2), Some(4)), pod),
        None
    );
}

#[test]
fn a_link_on_a_host_device_is_known_by_it_and_by_the_index_add_left_it_at() {
    let pod = View::Away(Some(0));
    for kind in [LinkKind::Macvlan, LinkKind::Ipvlan, LinkKind::Vlan] {
        // As the host saw it: on host link 2. ADD left it at index 6.
        let mut rec = Identity::of(
            &link("hd-dev", kind.clone(), 5, Some(2), None),
            String::new(),
        );
        let old = rec.clone();
        rec.pod_index = Some(6);
        let device = link("eth0", kind.clone(), 6, Some(2), Some(0));
        assert_eq!(rec.mismatch(&device, pod), None, "{kind}");
        // One the pod built on it: the kernel puts a macvlan on a macvlan
        // (an ipvlan on an ipvlan) on the same host link; its index differs.
        let copy = link("eth0", kind.clone(), 7, Some(2), Some(0));
        assert_eq!(
            rec.mismatch(&copy, pod).as_deref(),
            Some("not at index 6, where ADD left the device"),
            "{kind}"
        );
        // A record without the index (an older cni-multi's): the host link alone.
        assert_eq!(old.mismatch(&copy, pod), None, "{kind}");
        // Home, the host numbers it as it likes.
        assert_eq!(
            rec.mismatch(&link("hd-dev", kind.clone(), 9, Some(2), None), View::Host),
            None
        );
        assert!(
            rec.to_string().ends_with(", index 6 in the container"),
            "{rec}"
        );
        assert_eq!(rec.unprovable(Owner::Host), None);
        // In a pod's own user namespace a macvlan copy can take the index too.
        assert_eq!(
            rec.unprovable(Owner::Pod).is_some(),
            kind == LinkKind::Macvlan,
            "{kind}"
        );
    }
    // A veth's pair is confirmed from the host; its index is not compared.
    let mut veth = Identity::of(
        &link("hd-dev", LinkKind::Veth, 5, Some(4), None),
        String::new(),
    );
    veth.pod_index = Some(6);
    assert_eq!(
        veth.mismatch(&link("eth0", LinkKind::Veth, 8, Some(4), Some(0)), pod),
        None
    );
    assert!(!veth.to_string().contains("index 6"), "{veth}");
}

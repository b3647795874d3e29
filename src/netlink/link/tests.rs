use super::*;

#[test]
fn macs() {
    assert_eq!(
        parse_mac("0A:58:0a:f4:00:01"),
        Some([10, 0x58, 10, 0xf4, 0, 1])
    );
    assert_eq!(parse_mac("0a:58:0a:f4:00"), None);
    assert_eq!(parse_mac("0a:58:0a:f4:00:01:02"), None);
    assert_eq!(parse_mac("0a-58-0a-f4-00-01"), None);
    assert_eq!(format_mac(&[10, 0x58, 0, 1, 2, 255]), "0a:58:00:01:02:ff");
}

#[test]
fn describes_changes_as_sentences() {
    let by_index = LinkRef::from(12).to_string();
    let veth = Link {
        index: 12,
        name: "veth1".into(),
        ..Link::default()
    };
    let named = LinkRef::from(&veth).to_string();
    let cases = [
        (
            Change::Master(Some(3)),
            &by_index,
            "set master of link 12 to 3",
        ),
        (
            Change::Master(None),
            &named,
            "release link \"veth1\" (12) from its master",
        ),
        (Change::Up(true), &named, "set link \"veth1\" (12) up"),
        (Change::Mtu(1400), &by_index, "set mtu of link 12 to 1400"),
        (
            Change::Mac([10, 0x58, 0, 0, 0, 1]),
            &by_index,
            "set mac of link 12 to 0a:58:00:00:00:01",
        ),
        (
            Change::Name("net1"),
            &by_index,
            "rename link 12 to \"net1\"",
        ),
        (Change::Alias(""), &by_index, "clear alias of link 12"),
        (
            Change::Promisc(true),
            &by_index,
            "turn on promiscuous mode of link 12",
        ),
        (
            Change::Ipv4Conf(IPV4_DEVCONF_ARP_NOTIFY, 1),
            &by_index,
            "set ipv4 arp_notify of link 12 to 1",
        ),
    ];
    for (change, link, want) in cases {
        assert_eq!(change.describe(link), want);
    }
}

#[test]
fn vlan_flags_are_bridge_vlan_info_bits() {
    assert_eq!(VlanFlags::TAGGED.bits(), 0);
    assert_eq!(
        VlanFlags::ACCESS.bits(),
        BRIDGE_VLAN_INFO_PVID | BRIDGE_VLAN_INFO_UNTAGGED
    );
}

#[test]
fn parses_a_bridge_ports_vlans() {
    let info = |flags: u16, vid: u16| {
        let mut v = flags.to_ne_bytes().to_vec();
        v.extend_from_slice(&vid.to_ne_bytes());
        v
    };
    let msg = Body::new(
        &IfInfoMsg {
            family: AF_BRIDGE,
            index: 9,
            ..IfInfoMsg::default()
        }
        .bytes(),
    )
    .str(IFLA_IFNAME, "veth0")
    .nest(IFLA_AF_SPEC, |s| {
        s.u16(0, 0)
            .attr(IFLA_BRIDGE_VLAN_INFO, &info(BRIDGE_VLAN_INFO_PVID, 5))
            .attr(
                IFLA_BRIDGE_VLAN_INFO,
                &info(BRIDGE_VLAN_INFO_RANGE_BEGIN, 100),
            )
            .attr(
                IFLA_BRIDGE_VLAN_INFO,
                &info(BRIDGE_VLAN_INFO_RANGE_END, 102),
            )
    })
    .into_bytes();
    assert_eq!(port_vlans(&msg), Some((9, vec![5, 100, 101, 102])));
    let bare = Body::new(
        &IfInfoMsg {
            family: AF_BRIDGE,
            index: 4,
            ..IfInfoMsg::default()
        }
        .bytes(),
    )
    .into_bytes();
    assert_eq!(port_vlans(&bare), Some((4, vec![])));
    assert_eq!(port_vlans(&[1, 2, 3]), None);
}

#[test]
fn parses_a_link_message() {
    let msg = Body::new(
        &IfInfoMsg {
            index: 7,
            flags: IFF_UP,
            ..IfInfoMsg::default()
        }
        .bytes(),
    )
    .str(IFLA_IFNAME, "eth0")
    .u32(IFLA_MTU, 1400)
    .u32(IFLA_MASTER, 3)
    .nest(IFLA_LINKINFO, |i| {
        i.str(IFLA_INFO_KIND, "macvlan")
            .nest(IFLA_INFO_DATA, |d| d.u32(IFLA_MACVLAN_MODE, 4))
    })
    .into_bytes();
    let link = Link::parse(&msg).expect("parsed");
    assert_eq!(
        (
            link.index,
            link.name.as_str(),
            link.mtu,
            link.master,
            &link.kind
        ),
        (7, "eth0", 1400, Some(3), &LinkKind::Macvlan)
    );
    assert!(link.is_up());
    assert_eq!(link.macvlan_mode(), Some(MacvlanMode::BRIDGE));
    assert!(link.perm_addr.is_empty() && link.parent_dev.is_empty());
    let nic = Body::new(
        &IfInfoMsg {
            index: 2,
            ..IfInfoMsg::default()
        }
        .bytes(),
    )
    .str(IFLA_IFNAME, "ens1f0")
    .attr(IFLA_PERM_ADDRESS, &[0, 0x1b, 0x21, 1, 2, 3])
    .str(IFLA_PARENT_DEV_NAME, "0000:01:00.0")
    .str(IFLA_PARENT_DEV_BUS_NAME, "pci")
    .into_bytes();
    let nic = Link::parse(&nic).expect("parsed");
    assert_eq!(nic.perm_addr, [0, 0x1b, 0x21, 1, 2, 3]);
    assert_eq!((&nic.kind, &nic.info), (&LinkKind::Device, &InfoData::None));
    assert_eq!(
        (nic.parent_bus.as_str(), nic.parent_dev.as_str()),
        ("pci", "0000:01:00.0")
    );
    assert_eq!(link.ipv4_conf(IPV4_DEVCONF_ARP_NOTIFY), None);
}

#[test]
fn reads_ipv4_devconf_from_af_spec() {
    // The kernel sends the whole table: value of devconf id n at index n - 1.
    let table: Vec<u8> = (1..=33u32).flat_map(|id| (id * 10).to_ne_bytes()).collect();
    let msg = Body::new(
        &IfInfoMsg {
            index: 7,
            ..IfInfoMsg::default()
        }
        .bytes(),
    )
    .str(IFLA_IFNAME, "eth0")
    .nest(IFLA_AF_SPEC, |spec| {
        spec.nest(AF_INET.into(), |inet| inet.attr(IFLA_INET_CONF, &table))
    })
    .into_bytes();
    let link = Link::parse(&msg).expect("parsed");
    assert_eq!(link.ipv4_conf(IPV4_DEVCONF_ARP_NOTIFY), Some(220));
    assert_eq!(link.ipv4_conf(IPV4_DEVCONF_ROUTE_LOCALNET), Some(260));
    assert_eq!(link.ipv4_conf(0), None);
    assert_eq!(link.ipv4_conf(99), None);
}

/// `ip link add flannel.1 mtu 1450 address 0e:11:22:33:44:55 type vxlan id 1
/// local 10.9.0.1 dev veth0 dstport 8472 nolearning` (veth0 = link 3): the
/// request iproute2 6.1 sent (`strace -e trace=sendmsg -e write=3`), byte for
/// byte, its sequence number included.
#[test]
#[cfg(target_endian = "little")]
fn a_vxlan_link_is_iproute2s_request() {
    #[rustfmt::skip]
    let iproute2: Vec<u8> = vec![
        0x80, 0, 0, 0, 0x10, 0, 0x05, 0x06,     // len 128, RTM_NEWLINK, REQUEST|ACK|EXCL|CREATE
        0x39, 0xb7, 0x0b, 0x6b, 0, 0, 0, 0,     // seq, pid
        0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, // ifinfomsg
        8, 0, 4, 0, 0xaa, 0x05, 0, 0,           // IFLA_MTU 1450
        10, 0, 1, 0, 0x0e, 0x11, 0x22, 0x33, 0x44, 0x55, 0, 0, // IFLA_ADDRESS
        14, 0, 3, 0, b'f', b'l', b'a', b'n', b'n', b'e', b'l', b'.', b'1', 0, 0, 0, // IFLA_IFNAME
        60, 0, 18, 0,                           // IFLA_LINKINFO
          9, 0, 1, 0, b'v', b'x', b'l', b'a', b'n', 0, 0, 0, // IFLA_INFO_KIND, no NUL
          44, 0, 2, 0,                          // IFLA_INFO_DATA
            8, 0, 3, 0, 3, 0, 0, 0,             // IFLA_VXLAN_LINK
            8, 0, 1, 0, 1, 0, 0, 0,             // IFLA_VXLAN_ID
            8, 0, 4, 0, 10, 9, 0, 1,            // IFLA_VXLAN_LOCAL
            5, 0, 7, 0, 0, 0, 0, 0,             // IFLA_VXLAN_LEARNING 0
            6, 0, 15, 0, 0x21, 0x18, 0, 0,      // IFLA_VXLAN_PORT 8472, big-endian
    ];
    let mut spec = NewLink::new(
        "flannel.1",
        Kind::Vxlan(VxlanInfo::new(
            1,
            Some(3),
            Some("10.9.0.1".parse().expect("ip")),
            8472,
        )),
    );
    spec.mtu = Some(1450);
    spec.mac = Some([0x0e, 0x11, 0x22, 0x33, 0x44, 0x55]);
    assert_eq!(new_link_request(&spec).bytes(0x6b0b_b739), iproute2);
}

/// `ip link add vx6 type vxlan id 5 local fd00::1 dev veth0 dstport 4789 gbp
/// learning`: IPv6 source, GBP (a flag attribute), learning on; byte for byte
/// as iproute2 6.1 sent it.
#[test]
#[cfg(target_endian = "little")]
fn an_ipv6_gbp_vxlan_link_is_iproute2s_request() {
    #[rustfmt::skip]
    let iproute2: Vec<u8> = vec![
        0x74, 0, 0, 0, 0x10, 0, 0x05, 0x06,     // len 116, RTM_NEWLINK, REQUEST|ACK|EXCL|CREATE
        0x3b, 0xb7, 0x0b, 0x6b, 0, 0, 0, 0,     // seq, pid
        0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, // ifinfomsg
        8, 0, 3, 0, b'v', b'x', b'6', 0,        // IFLA_IFNAME
        76, 0, 18, 0,                           // IFLA_LINKINFO
          9, 0, 1, 0, b'v', b'x', b'l', b'a', b'n', 0, 0, 0, // IFLA_INFO_KIND
          60, 0, 2, 0,                          // IFLA_INFO_DATA
            8, 0, 3, 0, 3, 0, 0, 0,             // IFLA_VXLAN_LINK
            4, 0, 23, 0,                        // IFLA_VXLAN_GBP
            8, 0, 1, 0, 5, 0, 0, 0,             // IFLA_VXLAN_ID
            20, 0, 17, 0, 0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, // IFLA_VXLAN_LOCAL6
            5, 0, 7, 0, 1, 0, 0, 0,             // IFLA_VXLAN_LEARNING 1
            6, 0, 15, 0, 0x12, 0xb5, 0, 0,      // IFLA_VXLAN_PORT 4789
    ];
    let vxlan = VxlanInfo {
        learning: true,
        gbp: true,
        ..VxlanInfo::new(5, Some(3), Some("fd00::1".parse().expect("ip")), 4789)
    };
    let spec = NewLink::new("vx6", Kind::Vxlan(vxlan));
    assert_eq!(new_link_request(&spec).bytes(0x6b0b_b73b), iproute2);
    // A dump of the link reports INFO_DATA as written.
    let link = Link::parse(&iproute2[16..]).expect("parsed");
    assert_eq!(link.vxlan(), Some(vxlan));
}

/// A link is created with the kind name a dump of it reads back: one
/// spelling, `LinkKind`'s.
#[test]
fn a_created_kind_reads_back_as_its_link_kind() {
    let kinds = [
        Kind::Veth {
            peer: "p".into(),
            peer_netns: None,
        },
        Kind::Bridge {
            vlan_filtering: false,
            group_fwd_mask: None,
        },
        Kind::Macvlan {
            parent: 1,
            mode: MACVLAN_MODE_BRIDGE,
            bc_queue_len: None,
        },
        Kind::Ipvlan { parent: 1, mode: 0 },
        Kind::Vlan { parent: 1, id: 7 },
        Kind::Dummy,
        Kind::Vrf { table: 10 },
        Kind::Ifb,
        Kind::Vxlan(VxlanInfo::new(1, None, None, 0)),
    ];
    for kind in kinds {
        assert!(!kind.name().is_empty(), "{kind:?}");
        assert_eq!(LinkKind::parse(kind.name()), kind.link_kind(), "{kind:?}");
    }
}

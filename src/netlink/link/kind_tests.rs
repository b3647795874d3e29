use super::*;

#[test]
fn kinds_read_back_by_name_and_unknown_ones_keep_it() {
    for (kind, name) in &NAMES {
        assert_eq!(kind.name(), *name);
        assert_eq!(LinkKind::parse(name), *kind);
    }
    assert_eq!(LinkKind::parse("macvlan"), LinkKind::Macvlan);
    let geneve = LinkKind::parse("geneve");
    assert_eq!(geneve, LinkKind::Other("geneve".into()));
    assert_eq!(
        (geneve.name(), geneve.to_string()),
        ("geneve", "geneve".into())
    );
    assert_eq!(LinkKind::Device.to_string(), "device");
    // In a state file: the kernel's name, empty for a device.
    let json = serde_json::to_string(&[LinkKind::Veth, LinkKind::Device]).expect("json");
    assert_eq!(json, r#"["veth",""]"#);
    let back: Vec<LinkKind> = serde_json::from_str(r#"["macvtap","","bond"]"#).expect("json");
    assert_eq!(
        back,
        [
            LinkKind::Macvtap,
            LinkKind::Device,
            LinkKind::Other("bond".into())
        ]
    );
}

#[test]
fn info_data_is_read_for_its_kind_only() {
    let u16_attr = |ty, v: u16| wire::Body::default().u16(ty, v).into_bytes();
    let u32_attr = |ty, v: u32| wire::Body::default().u32(ty, v).into_bytes();
    let cases = [
        (
            LinkKind::Macvlan,
            u32_attr(IFLA_MACVLAN_MODE, 4),
            InfoData::Macvlan { mode: 4 },
        ),
        (
            LinkKind::Ipvlan,
            u16_attr(IFLA_IPVLAN_MODE, 1),
            InfoData::Ipvlan { mode: 1 },
        ),
        (
            LinkKind::Vlan,
            u16_attr(IFLA_VLAN_ID, 7),
            InfoData::Vlan { id: 7 },
        ),
        (
            LinkKind::Vrf,
            u32_attr(IFLA_VRF_TABLE, 100),
            InfoData::Vrf { table: 100 },
        ),
        // Same attribute number, another kind: not read as a mode.
        (
            LinkKind::Veth,
            u32_attr(IFLA_MACVLAN_MODE, 4),
            InfoData::None,
        ),
        // Truncated: no value rather than a wrong one.
        (
            LinkKind::Macvlan,
            vec![5, 0, 1, 0, 4, 0, 0, 0],
            InfoData::None,
        ),
    ];
    for (kind, data, want) in cases {
        assert_eq!(InfoData::parse(&kind, &data), want, "{kind}");
    }
}

use super::super::{InfoData, Link, LinkKind};
use super::*;

#[test]
fn reads_back_what_it_writes() {
    let cases = [
        VxlanInfo::new(1, Some(3), Some("10.9.0.1".parse().expect("ip")), 8472),
        VxlanInfo {
            learning: true,
            gbp: true,
            ..VxlanInfo::new(0xff_ffff, None, Some("fd00::1".parse().expect("ip")), 4789)
        },
    ];
    for info in cases {
        let data = info.data(wire::Body::default()).into_bytes();
        assert_eq!(VxlanInfo::parse(&data), Some(info));
    }
    // Port 0 is left out: the kernel picks its default.
    let data = VxlanInfo::new(7, None, None, 0)
        .data(wire::Body::default())
        .into_bytes();
    assert_eq!(wire::find(&data, IFLA_VXLAN_PORT), None);
}

#[test]
fn a_dump_without_a_vni_or_of_another_kind_is_no_vxlan() {
    let no_vni = wire::Body::default()
        .u8(IFLA_VXLAN_LEARNING, 0)
        .into_bytes();
    assert_eq!(VxlanInfo::parse(&no_vni), None);
    let data = VxlanInfo::new(1, None, None, 8472)
        .data(wire::Body::default())
        .into_bytes();
    let link = |kind: LinkKind| Link {
        info: InfoData::parse(&kind, &data),
        kind,
        ..Link::default()
    };
    assert_eq!(link(LinkKind::Vxlan).vxlan().map(|v| v.port), Some(8472));
    assert_eq!(link(LinkKind::parse("geneve")).vxlan(), None);
    // Truncated attributes are not read past their end.
    assert_eq!(
        VxlanInfo::parse(&[8, 0, 1, 0, 1, 0, 0, 0, 5, 0, 15, 0, 0x21]).map(|v| v.port),
        Some(0)
    );
}

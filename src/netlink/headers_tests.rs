use super::*;

#[test]
fn each_header_reads_back_what_it_writes_and_stops_at_its_end() {
    let link = IfInfoMsg {
        family: 7,
        link_type: 1,
        index: 9,
        flags: 0x1003,
        change: 1,
    };
    let mut msg = link.bytes().to_vec();
    msg.extend_from_slice(&[8, 0, 3, 0]);
    assert_eq!(IfInfoMsg::parse(&msg), Some((link, &[8u8, 0, 3, 0][..])));
    let addr = IfAddrMsg {
        family: 10,
        prefix_len: 64,
        flags: 0x80,
        scope: 253,
        index: 3,
    };
    assert_eq!(IfAddrMsg::parse(&addr.bytes()), Some((addr, &[][..])));
    let route = RtMsg {
        family: 2,
        dst_len: 24,
        src_len: 8,
        tos: 0,
        table: 254,
        protocol: 3,
        scope: 253,
        route_type: 1,
        flags: 4,
    };
    assert_eq!(RtMsg::parse(&route.bytes()), Some((route, &[][..])));
    let neigh = NdMsg {
        family: 7,
        index: 5,
        state: 0x80,
        flags: 2,
        ndm_type: 1,
    };
    assert_eq!(NdMsg::parse(&neigh.bytes()), Some((neigh, &[][..])));
    let tc = TcMsg {
        family: 0,
        index: 7,
        handle: 0x1_0000,
        parent: 0xffff_ffff,
        info: 3,
    };
    assert_eq!(TcMsg::parse(&tc.bytes()), Some((tc, &[][..])));
    // Short input is no header.
    assert_eq!(RtMsg::parse(&[2, 24, 0]), None);
    assert_eq!(TcMsg::parse(&tc.bytes()[..19]), None);
}

#[test]
#[cfg(target_endian = "little")]
fn layouts_are_the_kernels() {
    let route = RtMsg {
        family: 2,
        dst_len: 24,
        table: 254,
        protocol: 3,
        route_type: 1,
        flags: 4,
        ..RtMsg::default()
    };
    assert_eq!(route.bytes(), [2, 24, 0, 0, 254, 3, 0, 1, 4, 0, 0, 0]);
    let nf = NfGenMsg {
        family: 0,
        version: 0,
        res_id: 10,
    };
    assert_eq!(nf.bytes(), [0, 0, 0, 10]);
    let genl = GenlMsgHdr { cmd: 5, version: 1 };
    assert_eq!(genl.bytes(), [5, 1, 0, 0]);
    let link = IfInfoMsg {
        index: 0x0102_0304,
        ..IfInfoMsg::default()
    };
    assert_eq!(link.bytes()[4..8], [4, 3, 2, 1]);
}

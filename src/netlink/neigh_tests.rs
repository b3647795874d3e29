use super::*;

const MAC: [u8; 6] = [0x0e, 0xaa, 0xbb, 0xcc, 0xdd, 0xee];

/// The request of `ip neigh replace 10.244.1.0 lladdr 0e:aa:bb:cc:dd:ee
/// dev flannel.1 nud permanent` (flannel.1 = link 4), byte for byte as
/// iproute2 6.1 sent it (`strace -e trace=sendmsg -e write=3`), its
/// sequence number included.
#[test]
#[cfg(target_endian = "little")]
fn a_permanent_neighbour_is_iproute2s_request() {
    #[rustfmt::skip]
    let iproute2: Vec<u8> = vec![
        0x30, 0, 0, 0, 0x1c, 0, 0x05, 0x05,     // len 48, RTM_NEWNEIGH, REQUEST|ACK|REPLACE|CREATE
        0x3a, 0xb7, 0x0b, 0x6b, 0, 0, 0, 0,     // seq, pid
        2, 0, 0, 0, 4, 0, 0, 0,                 // AF_INET, ifindex 4
        0x80, 0, 0, 0,                          // NUD_PERMANENT, flags 0, type 0
        8, 0, 1, 0, 10, 244, 1, 0,              // NDA_DST
        10, 0, 2, 0, 0x0e, 0xaa, 0xbb, 0xcc, 0xdd, 0xee, 0, 0, // NDA_LLADDR
    ];
    let ip: IpAddr = "10.244.1.0".parse().expect("ip");
    assert_eq!(
        replace_neighbour_request(4, ip, MAC).bytes(0x6b0b_b73a),
        iproute2
    );
    // As the kernel dumps it back.
    let n = Neighbour::parse(&iproute2[16..]).expect("parsed");
    assert_eq!((n.index, n.ip, n.mac), (4, ip, Some(MAC)));
    assert!(n.is_permanent());
}

/// The request of `bridge fdb replace 0e:aa:bb:cc:dd:ee dev flannel.1 dst
/// 10.9.0.2 self permanent`, byte for byte as iproute2 6.1 sent it.
#[test]
#[cfg(target_endian = "little")]
fn an_fdb_entry_is_iproute2s_request() {
    #[rustfmt::skip]
    let iproute2: Vec<u8> = vec![
        0x30, 0, 0, 0, 0x1c, 0, 0x05, 0x05,     // len 48, RTM_NEWNEIGH, REQUEST|ACK|REPLACE|CREATE
        0x3a, 0xb7, 0x0b, 0x6b, 0, 0, 0, 0,     // seq, pid
        7, 0, 0, 0, 4, 0, 0, 0,                 // AF_BRIDGE, ifindex 4
        0xc0, 0, 0x02, 0,                       // NUD_NOARP|NUD_PERMANENT, NTF_SELF, type 0
        10, 0, 2, 0, 0x0e, 0xaa, 0xbb, 0xcc, 0xdd, 0xee, 0, 0, // NDA_LLADDR
        8, 0, 1, 0, 10, 9, 0, 2,                // NDA_DST
    ];
    let dst: IpAddr = "10.9.0.2".parse().expect("ip");
    assert_eq!(
        replace_fdb_request(4, MAC, dst).bytes(0x6b0b_b73a),
        iproute2
    );
    let f = Fdb::parse(&iproute2[16..]).expect("parsed");
    assert_eq!(
        (f.index, f.mac, f.dst, f.flags),
        (4, MAC, Some(dst), NTF_SELF)
    );
    assert!(f.is_permanent());
}

#[test]
fn deletes_name_the_entry_and_dumps_without_an_address_are_skipped() {
    let v6: IpAddr = "fd00::2".parse().expect("ip");
    let del = del_neighbour_request(9, v6);
    let (header, attrs) = NdMsg::parse(&del.body).expect("ndmsg");
    let want = NdMsg {
        family: 10,
        index: 9,
        ..NdMsg::default()
    };
    assert_eq!(header, want);
    assert_eq!(wire::find(attrs, NDA_DST).and_then(wire::as_ip), Some(v6));
    let del = del_fdb_request(9, MAC, v6);
    let want = NdMsg {
        family: AF_BRIDGE,
        index: 9,
        flags: NTF_SELF,
        ..NdMsg::default()
    };
    assert_eq!(NdMsg::parse(&del.body).map(|(h, _)| h), Some(want));
    // An unresolved neighbour has no MAC; an FDB entry needs one.
    let incomplete = NdMsg {
        family: 2,
        index: 3,
        state: 0x01,
        ..NdMsg::default()
    };
    let incomplete = Body::new(&incomplete.bytes()).ip(NDA_DST, v6).into_bytes();
    assert_eq!(Neighbour::parse(&incomplete).map(|n| n.mac), Some(None));
    assert_eq!(Fdb::parse(&incomplete), None);
    assert_eq!(Neighbour::parse(&[2, 0, 0]), None);
}

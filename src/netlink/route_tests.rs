use super::*;

/// `ip route replace 10.244.1.0/24 via 10.244.1.0 dev flannel.1 onlink
/// proto 0x7a` (flannel.1 = link 4): the request iproute2 6.1 sent
/// (`strace -e trace=sendmsg -e write=3`), byte for byte, but for the one
/// attribute we add to every route, RTA_TABLE (tables above 255 fit only
/// there), which makes it 8 bytes longer.
#[test]
#[cfg(target_endian = "little")]
fn an_onlink_route_with_a_protocol_is_iproute2s_request() {
    #[rustfmt::skip]
    let ours: Vec<u8> = vec![
        0x34 + 8, 0, 0, 0, 0x18, 0, 0x05, 0x05, // len, RTM_NEWROUTE, REQUEST|ACK|REPLACE|CREATE
        0x39, 0xb7, 0x0b, 0x6b, 0, 0, 0, 0,     // seq, pid
        2, 24, 0, 0,                            // AF_INET, /24, src_len, tos
        254, 0x7a, 0, 1,                        // main, proto 0x7a, scope universe, unicast
        4, 0, 0, 0,                             // RTNH_F_ONLINK
        8, 0, 15, 0, 254, 0, 0, 0,              // RTA_TABLE (ours only)
        8, 0, 1, 0, 10, 244, 1, 0,              // RTA_DST
        8, 0, 5, 0, 10, 244, 1, 0,              // RTA_GATEWAY
        8, 0, 4, 0, 4, 0, 0, 0,                 // RTA_OIF
    ];
    let mut route = Route::new("10.244.1.0/24".parse().expect("net"));
    route.gw = Some("10.244.1.0".parse().expect("ip"));
    route.oif = Some(4);
    route.onlink = true;
    route.protocol = 0x7a;
    assert_eq!(replace_request(&route).bytes(0x6b0b_b739), ours);
    // Read back as the kernel dumps it: protocol and onlink kept.
    assert_eq!(Route::parse(&ours[16..]), Some(route));
    assert_eq!(
        Route::parse(&ours[16..]).expect("parsed").to_string(),
        "10.244.1.0/24 via 10.244.1.0 dev 4 onlink"
    );
}

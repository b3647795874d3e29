//! What a DHCP server (or anyone on the LAN) sends: a DHCP message, or an
//! IPv4 + UDP packet carrying one, as arbitrary bytes. A message that decodes
//! encodes and decodes back to itself (the message type moved first), and the
//! lease and CNI result built from it never panic; the lease survives JSON.
#![no_main]

use cni_multi::dhcp::lease::{self, Lease};
use cni_multi::dhcp::wire::{self, Message, code};
use libfuzzer_sys::fuzz_target;
use std::net::Ipv4Addr;

fn check(data: &[u8]) {
    let Ok(m) = Message::decode(data) else {
        return;
    };
    let bytes = m.encode();
    let back = Message::decode(&bytes).expect("an encoded message decodes");
    let mut want = m.clone();
    want.options.sort_by_key(|o| o.0 != code::MESSAGE_TYPE);
    assert_eq!(back, want, "round trip");
    assert_eq!(back.encode(), bytes, "encoding is stable");
    assert!(bytes.len() >= wire::BOOTP_MIN_LEN);

    let _ = (m.message_type(), m.server_id(), m.text());
    let l = Lease::from_ack(&m, Ipv4Addr::new(10, 0, 0, 1), 1_700_000_000);
    let _ = (l.renew_at(), l.rebind_at(), l.expires_at());
    let _ = l.to_result(Some(10));
    let _ = l.to_result(None);
    let json = serde_json::to_string(&l).expect("lease to JSON");
    let again: Lease = serde_json::from_str(&json).expect("lease from JSON");
    assert_eq!(again, l, "lease JSON round trip");
}

fuzz_target!(|data: &[u8]| {
    check(data);
    if let Ok(d) = wire::parse_ipv4_udp(data) {
        check(d.payload);
    }
    let _ = wire::reply_in_packet(data, 0x12345678, &[2, 0, 0, 0, 0, 1]);
    let _ = lease::classless_routes(data);
    let _ = lease::static_routes(data);
    let _ = lease::domain_search(data);
});

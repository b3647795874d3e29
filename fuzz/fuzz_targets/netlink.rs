//! What the kernel sends back, as arbitrary bytes: rtnetlink and nfnetlink
//! framing, error and extended-ACK decoding, link (VXLAN settings too),
//! address, route, rule, neighbour and FDB replies,
//! nf_tables rule verdicts and conntrack tuples.
#![no_main]

use cni_multi::netlink::neigh::{Fdb, Neighbour};
use cni_multi::netlink::{addr::Address, link::Link, route::Route, rule::Rule, wire};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    for msg in wire::messages(data) {
        let _ = wire::error_of(&msg);
        let _ = Link::parse(msg.payload).map(|l| l.vxlan());
        let _ = Address::parse(msg.payload);
        let _ = Route::parse(msg.payload);
        let _ = Rule::parse(msg.payload);
        let _ = Neighbour::parse(msg.payload);
        let _ = Fdb::parse(msg.payload);
        if let Some(attrs) = msg.payload.get(4..) {
            let _ = cni_multi::netfilter::nft::verdict_chains(attrs);
            let _ = cni_multi::netfilter::nft::iifname_match(attrs);
            let _ = cni_multi::netfilter::nft::saddr_match(attrs);
            let _ = cni_multi::netfilter::nft::xt_comment(attrs);
            let _ = cni_multi::netlink::conntrack::matches(attrs, 17, 53);
        }
    }
    let _ = Link::parse(data).map(|l| l.vxlan());
    let _ = Route::parse(data);
    for (_, payload) in wire::attrs(data) {
        let _ = wire::as_str(payload);
        let _ = wire::as_ip(payload);
    }
});

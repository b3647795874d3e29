use super::*;

/// The filtered dump's attributes, byte for byte (as libnetfilter_conntrack
/// writes them): orig tuple { proto { num 17, dport 5353 (be16) } },
/// filter { orig flags PROTO_NUM|PROTO_DST_PORT (host order u32) }.
#[test]
#[cfg(target_endian = "little")]
fn the_dump_filter_is_proto_and_destination_port_of_the_original_tuple() {
    #[rustfmt::skip]
    let expected: Vec<u8> = vec![
        24, 0, 0x01, 0x80,          // CTA_TUPLE_ORIG | NLA_F_NESTED
          20, 0, 0x02, 0x80,        //   CTA_TUPLE_PROTO | NLA_F_NESTED
            5, 0, 1, 0, 17, 0, 0, 0,        // CTA_PROTO_NUM = UDP
            6, 0, 3, 0, 0x14, 0xe9, 0, 0,   // CTA_PROTO_DST_PORT = 5353
        12, 0, 0x19, 0x80,          // CTA_FILTER | NLA_F_NESTED
          8, 0, 1, 0, 0x28, 0, 0, 0,        // CTA_FILTER_ORIG_FLAGS = 1<<3 | 1<<5
    ];
    assert_eq!(filter_attrs(17, 5353).into_bytes(), expected);
}

#[test]
fn no_port_opens_no_socket() {
    assert_eq!(delete_by_dport(2, 17, &[]).ok(), Some(Deleted::default()));
}

#[test]
fn a_dumped_entry_matches_its_protocol_and_destination_port() {
    let entry = Body::default()
        .nest(CTA_TUPLE_ORIG | wire::NESTED, |t| {
            t.nest(CTA_TUPLE_PROTO | wire::NESTED, |p| {
                p.u8(CTA_PROTO_NUM, 17)
                    .attr(CTA_PROTO_DST_PORT, &53u16.to_be_bytes())
            })
        })
        .into_bytes();
    assert!(matches(&entry, 17, 53).is_some());
    assert!(matches(&entry, 6, 53).is_none());
    assert!(matches(&entry, 17, 54).is_none());
    assert!(matches(&entry[..8], 17, 53).is_none());
}

use super::*;

#[test]
fn the_id_is_read_from_the_reply_and_not_assigned_is_minus_one() {
    let reply = Body::new(&[0u8; RTGENMSG_LEN])
        .u32(NETNSA_NSID, 3)
        .into_bytes();
    assert_eq!(nsid_of_reply(&reply), Some(3));
    let none = Body::new(&[0u8; RTGENMSG_LEN])
        .u32(NETNSA_NSID, NETNSA_NSID_NOT_ASSIGNED.cast_unsigned())
        .into_bytes();
    assert_eq!(nsid_of_reply(&none), Some(NETNSA_NSID_NOT_ASSIGNED));
    assert_eq!(nsid_of_reply(&[0, 0]), None);
}

use super::*;

#[test]
fn a_generic_message_is_its_header_then_attributes() {
    let attrs = Body::default().u32(3, 2).into_bytes();
    let header = GenlMsgHdr { cmd: 5, version: 1 };
    assert_eq!(
        body(header, &attrs),
        vec![5, 1, 0, 0, 8, 0, 3, 0, 2, 0, 0, 0]
    );
}

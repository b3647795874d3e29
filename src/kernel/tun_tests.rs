#[test]
fn ifreq_has_the_c_size() {
    assert_eq!(std::mem::size_of::<super::IfReq>(), 40);
}

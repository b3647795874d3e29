use super::*;

#[test]
fn flag_names_and_the_pair_the_kernel_refuses() {
    let names = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    assert_eq!(flags(&names(&["signal", "backup"])).ok(), Some(0b101));
    assert_eq!(flags(&names(&["subflow", "fullmesh"])).ok(), Some(0b1010));
    assert!(flags(&names(&["signal", "fullmesh"])).is_err());
    assert!(flags(&names(&["Signal"])).is_err());
    assert_eq!(flags(&[]).ok(), Some(0));
}

use super::*;

#[test]
fn nobody_is_named_by_default() {
    assert_eq!(Named::nobody(), Named::new("", "", ""));
    assert_eq!(Named::new("n", "c", "i").container_id, "c");
}

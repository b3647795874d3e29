use super::*;

#[test]
fn owners_of_device_info_names() {
    let known: BTreeSet<String> = ["abc", "abc_d", "x-y"].map(String::from).into();
    let owner = |name| device_info_owner(name, &known);
    assert_eq!(owner("ns-nad-abc_net1"), Some(("abc", "net1")));
    // The longest known ID wins where two fit.
    assert_eq!(owner("ns-nad-abc_d_net1"), Some(("abc_d", "net1")));
    assert_eq!(owner("ns-nad-x-y_eth_1"), Some(("x-y", "eth_1")));
    let hex = "0123456789abcdef".repeat(4);
    let name = format!("ns-nad-{hex}_net2");
    assert_eq!(owner(&name), Some((hex.as_str(), "net2")));
    assert_eq!(owner("ns-nad-other_net1"), None);
    assert_eq!(owner("abc_net1"), None);
}

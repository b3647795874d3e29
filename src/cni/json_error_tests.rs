use super::*;

#[test]
fn rust_types_by_their_go_names() {
    let go = |t: &str| go_type(t);
    assert_eq!(go(std::any::type_name::<bool>()), "bool");
    assert_eq!(go(std::any::type_name::<Option<i64>>()), "int");
    assert_eq!(go(std::any::type_name::<u16>()), "uint16");
    assert_eq!(go(std::any::type_name::<Vec<String>>()), "[]string");
    assert_eq!(
        go(std::any::type_name::<Option<Vec<Vec<u32>>>>()),
        "[][]uint32"
    );
    assert_eq!(
        go(std::any::type_name::<
            serde_json::Map<String, serde_json::Value>,
        >()),
        "map[string]interface {}"
    );
    assert_eq!(
        go(std::any::type_name::<
            std::collections::BTreeMap<String, bool>,
        >()),
        "map[string]bool"
    );
    assert_eq!(go(std::any::type_name::<std::net::IpAddr>()), "net.IP");
    assert_eq!(go(std::any::type_name::<[u8; 6]>()), "[6]uint8");
    assert_eq!(go("cni_multi::ipam::range::Range"), "Range");
    assert_eq!(
        go("alloc::vec::Vec<cni_multi::plugins::x::EndpointKeys>"),
        "[]Endpoint"
    );
    assert_eq!(go("cni_multi::plugins::x::Keys"), "Keys");
    assert!(is_go_number("int") && is_go_number("uint16") && is_go_number("float64"));
    assert!(!is_go_number("interface {}") && !is_go_number("string"));
}

use super::*;
use crate::cni::json;

fn result(v: &str) -> NetResult {
    json::from_str(v).expect("result")
}

#[test]
fn one_interface_and_several() {
    let r = result(
        r#"{"cniVersion":"1.1.0","interfaces":[{"name":"net1","mac":"02:00:00:00:00:01","mtu":1400,"sandbox":"/ns"}],
                "ips":[{"address":"10.1.1.5/24","interface":0}],"routes":[{"dst":"0.0.0.0/0","gw":"10.1.1.1"},{"dst":"10.0.0.0/8"}],
                "dns":{"nameservers":["10.1.1.53"]}}"#,
    );
    let s = statuses(Some(&r), "ns/macvlan", false, "net1", None);
    assert_eq!(
        render(&s),
        "[{\n    \"name\": \"ns/macvlan\",\n    \"interface\": \"net1\",\n    \"ips\": [\n        \"10.1.1.5\"\n    ],\n    \"mac\": \"02:00:00:00:00:01\",\n    \"mtu\": 1400,\n    \"dns\": {\n        \"nameservers\": [\n            \"10.1.1.53\"\n        ]\n    },\n    \"gateway\": [\n        \"10.1.1.1\"\n    ]\n}]"
    );
    let r = result(
        r#"{"cniVersion":"1.1.0","interfaces":[{"name":"br0","mac":"aa:aa:aa:aa:aa:aa"},{"name":"veth1"},{"name":"eth0","mac":"02:00:00:00:00:02","sandbox":"/ns"}],
                "ips":[{"address":"10.2.0.5/16","gateway":"10.2.0.1","interface":2},{"address":"fd00::5/64","interface":2}]}"#,
    );
    let s = statuses(Some(&r), "cbr0", true, "eth0", None);
    assert_eq!(s.len(), 1);
    assert_eq!(
        (s[0].interface.as_str(), s[0].default, s[0].ips.clone()),
        (
            "eth0",
            true,
            vec!["10.2.0.5".to_string(), "fd00::5".to_string()]
        )
    );
    assert_eq!(
        render(&statuses(None, "n", false, "net3", None)),
        "[{\n    \"name\": \"n\",\n    \"interface\": \"net3\",\n    \"dns\": {}\n}]"
    );
}

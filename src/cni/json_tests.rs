//! Expected values are what Go's `encoding/json` decodes from the same bytes
//! into the reference's structs (checked against Go 1.19's decoder).

use super::*;
use crate::cni::NetConf;
use crate::cni::capabilities::{Bandwidth, Dns, PortMapping};
use crate::cni::config::{Attachment, CommonKeys};
use crate::cni::result::{NetResult, Versioned};
use crate::ipam::range::Range;

fn port(text: &str) -> PortMapping {
    from_str(text).unwrap_or_else(|e| panic!("{text}: {e}"))
}

#[test]
fn port_mappings_as_containerd_sends_them() {
    // go-cni's PortMapping has no JSON tags: the keys arrive capitalised.
    let m = port(r#"{"HostPort":18200,"ContainerPort":80,"Protocol":"tcp","HostIP":""}"#);
    assert_eq!(
        m,
        PortMapping {
            host_port: 18200,
            container_port: 80,
            protocol: "tcp".into(),
            host_ip: String::new(),
        }
    );
}

#[test]
fn port_mapping_keys_in_any_case() {
    let m = port(r#"{"hostport":1,"CONTAINERPORT":2,"pRoToCoL":"udp","hostIp":"10.1.2.3"}"#);
    assert_eq!((m.host_port, m.container_port), (1, 2));
    assert_eq!(
        (m.protocol.as_str(), m.host_ip.as_str()),
        ("udp", "10.1.2.3")
    );
}

#[test]
fn duplicated_keys_last_in_document_order_wins() {
    assert_eq!(port(r#"{"hostPort":1,"hostPort":3}"#).host_port, 3);
    // Exact and folded spellings are the same field: order decides, not case.
    assert_eq!(port(r#"{"hostPort":1,"HostPort":2}"#).host_port, 2);
    assert_eq!(port(r#"{"HostPort":2,"hostPort":1}"#).host_port, 1);
    assert_eq!(port(r#"{"HOSTPORT":2,"HostPort":7}"#).host_port, 7);
}

#[test]
fn null_leaves_the_field_as_it_was() {
    assert_eq!(port(r#"{"hostPort":5,"hostPort":null}"#).host_port, 5);
    assert_eq!(port(r#"{"protocol":null}"#).protocol, "");
    let r: Range = from_str(r#"{"subnet":"10.0.0.0/24","gateway":null}"#).expect("range");
    assert_eq!(r.gateway, None);
}

#[test]
fn unknown_keys_are_ignored() {
    let m = port(r#"{"hostPort":1,"ContainerPort":2,"Extra":{"x":[1,2]},"host_port":9}"#);
    assert_eq!((m.host_port, m.container_port), (1, 2));
}

#[test]
fn type_errors_stay_errors() {
    assert!(from_str::<PortMapping>(r#"{"HostPort":"80"}"#).is_err());
    assert!(from_str::<PortMapping>(r#"{"HostPort":1.5}"#).is_err());
    assert!(from_str::<Bandwidth>(r#"{"IngressRate":-1}"#).is_err());
}

#[test]
fn unicode_simple_folding_as_go() {
    // U+212A KELVIN SIGN folds with k, U+017F LONG S with s, as in Go.
    assert!(fold_eq("\u{212A}ind", "kind"));
    assert!(fold_eq("hostPort", "HOSTPORT"));
    assert!(fold_eq("\u{17F}ervers", "Servers"));
    assert!(!fold_eq("hostPorts", "hostPort"));
    assert!(!fold_eq("host_port", "hostPort"));
    let d: Dns = from_str("{\"\u{17F}ervers\":[\"10.0.0.10\"]}").expect("dns");
    assert_eq!(d.servers, ["10.0.0.10"]);
}

#[test]
fn bandwidth_as_containerd_sends_it() {
    let b: Bandwidth = from_str(
        r#"{"IngressRate":1000000,"IngressBurst":4294967295,"EgressRate":2000000,"EgressBurst":4294967295}"#,
    )
    .expect("bandwidth");
    assert_eq!(
        b,
        Bandwidth {
            ingress_rate: 1_000_000,
            ingress_burst: 4_294_967_295,
            egress_rate: 2_000_000,
            egress_burst: 4_294_967_295,
        }
    );
    let mixed: Bandwidth =
        from_str(r#"{"ingressrate":1,"INGRESSBURST":2,"egressRate":3,"EgressRate":4}"#)
            .expect("mixed");
    assert_eq!(
        (mixed.ingress_rate, mixed.ingress_burst, mixed.egress_rate),
        (1, 2, 4)
    );
    assert!(
        from_str::<Bandwidth>(r#"{"ingress_rate":1}"#)
            .expect("unknown")
            .is_empty()
    );
}

#[test]
fn dns_as_containerd_sends_it() {
    let d: Dns = from_str(
        r#"{"Servers":["10.96.0.10"],"Searches":["default.svc.cluster.local","svc.cluster.local"],"Options":["ndots:5"]}"#,
    )
    .expect("dns");
    assert_eq!(d.servers, ["10.96.0.10"]);
    assert_eq!(d.searches.len(), 2);
    assert_eq!(d.options, ["ndots:5"]);
}

#[test]
fn other_capabilities_through_the_config() {
    let conf = NetConf::parse(
        br#"{"cniVersion":"1.0.0","name":"n","type":"x","RuntimeConfig":{
            "IPs":["10.0.0.5/24"],"Mac":"c2:11:22:33:44:55","DeviceID":"0000:00:1f.6",
            "IPRanges":[[{"Subnet":"10.1.0.0/16","RangeStart":"10.1.0.10"}]],
            "PortMappings":[{"HostPort":8080,"ContainerPort":80}],
            "Bandwidth":{"IngressRate":8,"IngressBurst":16}}}"#,
    )
    .expect("config");
    let ips: Vec<String> = conf.runtime_config("ips").ok().flatten().expect("ips");
    assert_eq!(ips, ["10.0.0.5/24"]);
    let mac: Option<String> = conf.runtime_config("mac").expect("mac");
    assert_eq!(mac.as_deref(), Some("c2:11:22:33:44:55"));
    let dev: Option<String> = conf.runtime_config("deviceID").expect("deviceID");
    assert_eq!(dev.as_deref(), Some("0000:00:1f.6"));
    let ranges: Vec<Vec<Range>> = conf
        .runtime_config("ipRanges")
        .ok()
        .flatten()
        .expect("ipRanges");
    assert_eq!(ranges[0][0].subnet.to_string(), "10.1.0.0/16");
    assert_eq!(
        ranges[0][0].range_start.map(|a| a.to_string()).as_deref(),
        Some("10.1.0.10")
    );
    let maps: Vec<PortMapping> = conf
        .runtime_config("portMappings")
        .ok()
        .flatten()
        .expect("portMappings");
    assert_eq!(maps[0].host_port, 8080);
    let bw: Bandwidth = conf
        .runtime_config("bandwidth")
        .ok()
        .flatten()
        .expect("bandwidth");
    assert_eq!((bw.ingress_rate, bw.ingress_burst), (8, 16));
}

#[test]
fn common_keys_in_any_case() {
    let c: CommonKeys = from_str(
        r#"{"CNIVersion":"0.4.0","Name":"net","TYPE":"bridge","IPAM":{"type":"host-local"},
            "Args":{"cni":{"ips":["10.0.0.2"]}},"name":"last"}"#,
    )
    .expect("common");
    assert_eq!(c.cni_version, "0.4.0");
    assert_eq!(c.name, "last");
    assert_eq!(c.plugin_type, "bridge");
    assert!(c.ipam.is_some() && c.args.is_some());
    let conf = NetConf::parse(br#"{"cniVersion":"1.0.0","Name":"n","IPAM":{"Type":"static"}}"#)
        .expect("config");
    assert_eq!(conf.name(), "n");
    assert_eq!(conf.ipam_type(), Some("static"));
}

#[test]
fn valid_attachments_in_any_case() {
    let a: Vec<Attachment> =
        from_str(r#"[{"ContainerID":"c1","IFNAME":"eth0"},{"containerid":"c2"}]"#).expect("gc");
    assert_eq!(a[0].container_id, "c1");
    assert_eq!(a[0].ifname, "eth0");
    assert_eq!(a[1].container_id, "c2");
}

#[test]
fn prev_result_keys_in_any_case() {
    let conf = NetConf::parse(
        br#"{"cniVersion":"1.0.0","name":"n","PrevResult":{"CNIVersion":"1.0.0",
            "Interfaces":[{"Name":"eth0","Sandbox":"/var/run/netns/x","MAC":"aa:bb:cc:dd:ee:ff"}],
            "IPs":[{"Interface":0,"Address":"10.0.0.2/24","Gateway":"10.0.0.1"}]}}"#,
    )
    .expect("config");
    let prev: NetResult = conf.prev_result().ok().flatten().expect("prevResult");
    assert_eq!(prev.interfaces[0].name, "eth0");
    assert_eq!(prev.ips[0].interface, Some(0));
    assert_eq!(prev.ips[0].address.to_string(), "10.0.0.2/24");
    let v = Versioned::parse(
        serde_json::json!({"IPs":[{"Address":"10.0.0.3/24"}]}),
        "1.0.0",
    )
    .expect("stamped");
    assert_eq!(v.version(), "1.0.0");
}

#[test]
fn maps_keep_their_keys_exactly() {
    // A Go map is not a struct: its keys are data and are not folded.
    let m: Map<String, Value> = from_str(r#"{"a":1,"A":2,"a":3}"#).expect("map");
    assert_eq!(m.get("a"), Some(&Value::from(3)));
    assert_eq!(m.get("A"), Some(&Value::from(2)));
}

#[test]
fn field_lookup_follows_the_same_rules() {
    let doc = parse(br#"{"runtimeConfig":{"a":1},"RuntimeConfig":{"b":2},"x":null}"#).expect("doc");
    let rc = doc.field("runtimeConfig").expect("field");
    assert!(rc.field("b").is_some() && rc.field("a").is_none());
    assert!(doc.field("x").is_none());
    let mut map = Map::new();
    map.insert("Delegate".into(), Value::from(1));
    assert_eq!(map_field(&map, "delegate"), Some(&Value::from(1)));
}

/// Input is decoded in one place: no `serde_json::from_*` outside this module
/// (test code aside), so no plugin can read a runtime's keys differently.
#[test]
fn no_json_decoding_outside_the_go_compatible_reader() {
    let mut offenders = Vec::new();
    let mut stack = vec![std::path::PathBuf::from(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/src"
    ))];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).expect("src dir").flatten() {
            let path = entry.path();
            if path.is_dir() {
                stack.push(path);
                continue;
            }
            let name = path.to_string_lossy().into_owned();
            if !name.ends_with(".rs")
                || crate::source_scan::is_test_file(&name)
                || name.ends_with("cni/json.rs")
            {
                continue;
            }
            let text = std::fs::read_to_string(&path).expect("source");
            let production = crate::source_scan::without_test_items(&text);
            for (i, line) in production.lines().enumerate() {
                if ["serde_json::from_", "serde_json::Deserializer"]
                    .iter()
                    .any(|p| line.contains(p))
                {
                    offenders.push(format!("{name}:{}: {}", i + 1, line.trim()));
                }
            }
        }
    }
    assert!(
        offenders.is_empty(),
        "decode through cni::json:\n{}",
        offenders.join("\n")
    );
}

#[test]
fn integer_map_keys_are_read_from_their_strings_as_go_does() {
    use std::collections::BTreeMap;
    let m: BTreeMap<u8, String> = from_str(r#"{"51":"a","3":"b"}"#).expect("u8 keys");
    assert_eq!(
        m,
        BTreeMap::from([(3, "b".to_string()), (51, "a".to_string())])
    );
    assert!(from_str::<BTreeMap<u8, String>>(r#"{"256":"x"}"#).is_err());
    assert!(from_str::<BTreeMap<i32, String>>(r#"{"x":"y"}"#).is_err());
    let m: BTreeMap<i32, u8> = from_str(r#"{"-4":1}"#).expect("i32 keys");
    assert_eq!(m.get(&-4), Some(&1));
    // String keys and struct fields are as before.
    let m: BTreeMap<String, u8> = from_str(r#"{"51":1}"#).expect("string keys");
    assert_eq!(m.get("51"), Some(&1));
}

/// An object of 100k keys (the fuzz corpus has one): decoded as Go does, its
/// duplicates (exact and folded) resolved last-wins among the junk. The keys
/// are indexed, not searched, so this is linear (timed by fuzz-smoke).
#[test]
fn an_object_of_100k_keys_decodes_with_go_rules() {
    let mut text = String::from(r#"{"hostPort":1,"containerPort":2"#);
    for i in 0..100_000 {
        text.push_str(&format!(r#","junk{i}":{i}"#));
        if i == 50_000 {
            text.push_str(r#","HOSTPORT":3"#);
        }
    }
    text.push_str(r#","protocol":"udp","hostport":4,"junk7":null}"#);
    let p = port(&text);
    assert_eq!(
        (p.host_port, p.container_port, p.protocol.as_str()),
        (4, 2, "udp")
    );
    let corpus = include_bytes!("../../fuzz/corpus/json_object/object-with-100k-keys.json");
    let conf = NetConf::parse(corpus).expect("the corpus entry is a config");
    assert_eq!(conf.name(), "many-keys");
}

#[derive(Debug, Default, serde::Deserialize)]
#[serde(rename = "NetConf", rename_all = "camelCase", default)]
struct Conf {
    is_gateway: bool,
    mtu: i64,
    vlan: u16,
    names: Vec<String>,
    ipam: Option<Ipam>,
    capabilities: std::collections::BTreeMap<String, bool>,
}

#[derive(Debug, Default, serde::Deserialize)]
#[serde(rename = "allocator.IPAMConfig", rename_all = "camelCase", default)]
struct Ipam {
    gateway: Option<std::net::IpAddr>,
    subnet: Option<ipnet::IpNet>,
    ranges: Vec<Vec<Range>>,
}

fn conf_error(text: &str) -> (String, Option<String>, bool) {
    let e = from_str::<Conf>(text).expect_err(text);
    (
        e.to_string(),
        e.path().map(str::to_string),
        e.is_invalid_value(),
    )
}

/// Type errors read as Go's decoder words them (checked against the
/// reference plugins built with Go 1.19), the value's path kept beside.
#[test]
fn type_errors_read_as_go_s() {
    let cases = [
        (
            r#"{"isGateway":"yes"}"#,
            "json: cannot unmarshal string into Go struct field NetConf.isGateway of type bool",
            "isGateway",
        ),
        (
            r#"{"MTU":"x"}"#,
            "json: cannot unmarshal string into Go struct field NetConf.mtu of type int",
            "mtu",
        ),
        (
            r#"{"mtu":1.5}"#,
            "json: cannot unmarshal number 1.5 into Go struct field NetConf.mtu of type int",
            "mtu",
        ),
        (
            r#"{"vlan":70000}"#,
            "json: cannot unmarshal number 70000 into Go struct field NetConf.vlan of type uint16",
            "vlan",
        ),
        (
            r#"{"vlan":-1}"#,
            "json: cannot unmarshal number -1 into Go struct field NetConf.vlan of type uint16",
            "vlan",
        ),
        (
            r#"{"names":"a"}"#,
            "json: cannot unmarshal string into Go struct field NetConf.names of type []string",
            "names",
        ),
        (
            r#"{"names":["a",1]}"#,
            "json: cannot unmarshal number into Go struct field NetConf.names of type string",
            "names[1]",
        ),
        (
            r#"{"ipam":{"ranges":[[{"subnet":5}]]}}"#,
            "json: cannot unmarshal number into Go struct field Range.ipam.ranges.subnet of type string",
            "ipam.ranges[0][0].subnet",
        ),
        (
            r#"{"ipam":{"ranges":[[{"subnet":"10.0.0.0/24"}],[[1]]]}}"#,
            "json: cannot unmarshal array into Go struct field IPAMConfig.ipam.ranges of type allocator.Range",
            "ipam.ranges[1][0]",
        ),
        (
            r#"{"ipam":"x"}"#,
            "json: cannot unmarshal string into Go struct field NetConf.ipam of type allocator.IPAMConfig",
            "ipam",
        ),
        (
            r#"{"ipam":{"gateway":5}}"#,
            "json: cannot unmarshal number into Go struct field IPAMConfig.ipam.gateway of type net.IP",
            "ipam.gateway",
        ),
        (
            r#"{"capabilities":{"portMappings":"yes"}}"#,
            "json: cannot unmarshal string into Go struct field NetConf.capabilities of type bool",
            "capabilities.portMappings",
        ),
    ];
    for (text, msg, path) in cases {
        assert_eq!(
            conf_error(text),
            (msg.to_string(), Some(path.to_string()), false),
            "{text}"
        );
    }
    let e = from_str::<u8>("300").expect_err("u8");
    assert_eq!(
        e.to_string(),
        "json: cannot unmarshal number 300 into Go value of type uint8"
    );
    assert_eq!(e.path(), None);
}

/// An address its type refuses is named as Go's parsers name it, and is a
/// value error (a config that cannot work), not a type error.
#[test]
fn unparsable_addresses_name_the_value_and_the_key() {
    assert_eq!(
        conf_error(
            r#"{"ipam":{"ranges":[[{"subnet":"10.0.0.0/24"},{"subnet":"10.300.0.0/24"}]]}}"#
        ),
        (
            "invalid CIDR address: 10.300.0.0/24".into(),
            Some("ipam.ranges[0][1].subnet".into()),
            true
        )
    );
    assert_eq!(
        conf_error(r#"{"ipam":{"subnet":"10.0.0.1"}}"#),
        (
            "invalid CIDR address: 10.0.0.1".into(),
            Some("ipam.subnet".into()),
            true
        )
    );
    assert_eq!(
        conf_error(r#"{"ipam":{"gateway":"10.0.0.300"}}"#),
        (
            "invalid IP address: 10.0.0.300".into(),
            Some("ipam.gateway".into()),
            true
        )
    );
}

#[test]
fn a_missing_required_key_is_named_with_its_path() {
    let e = from_str::<Conf>(r#"{"ipam":{"ranges":[[{"gateway":"10.0.0.1"}]]}}"#)
        .expect_err("no subnet");
    assert_eq!(e.to_string(), "missing required key \"subnet\"");
    assert_eq!(e.path(), Some("ipam.ranges[0][0].subnet"));
    assert_eq!(e.missing_key(), Some("subnet"));
}

#[test]
fn an_array_is_not_a_struct() {
    // serde would take the array as the fields in order; Go refuses it.
    let e = from_str::<Range>(r#"["10.0.0.0/24"]"#).expect_err("array");
    assert_eq!(
        e.to_string(),
        "json: cannot unmarshal array into Go value of type allocator.Range"
    );
}

#[test]
fn errors_below_a_known_path_carry_it() {
    let doc = parse(br#"{"runtimeConfig":{"mac":5}}"#).expect("doc");
    let mac = doc
        .field("runtimeConfig")
        .and_then(|r| r.field("mac"))
        .expect("mac");
    let e = mac
        .decode_at::<String>(&["runtimeConfig", "mac"], None)
        .expect_err("number");
    // Go's own text for its anonymous runtimeConfig struct.
    assert_eq!(
        e.to_string(),
        "json: cannot unmarshal number into Go struct field .runtimeConfig.mac of type string"
    );
    assert_eq!(e.path(), Some("runtimeConfig.mac"));
}

#[test]
fn syntax_errors_stay_serde_json_s() {
    let e = parse(b"{\"a\":").expect_err("truncated");
    assert!(e.to_string().contains("EOF"), "{e}");
    assert_eq!(e.path(), None);
}

/// The recorder lists the keys no struct decoded from their object reads,
/// case-folded as Go matches them; maps take any key.
#[test]
fn the_recorder_lists_keys_no_struct_reads() {
    let doc = parse(
        br#"{"isGatway":true,"MTU":1400,"capabilities":{"anything":true},
            "ipam":{"subnett":"10.0.0.0/24","ranges":[[{"subnet":"10.1.0.0/24","gatway":null}]]},
            "name":"n"}"#,
    )
    .expect("doc");
    let r = Recorder::default();
    let _: Conf = doc.decode_at(&[], Some(&r)).expect("decodes");
    r.know("", "name");
    let unknown: Vec<String> = r.unknown_keys().iter().map(UnknownKey::path).collect();
    assert_eq!(
        unknown,
        ["isGatway", "ipam.subnett", "ipam.ranges[0][0].gatway"]
    );
    let first = &r.unknown_keys()[0];
    assert!(first.known.contains(&"isGateway".to_string()), "{first:?}");
    // A second struct decoded from the same object adds what it reads.
    #[derive(serde::Deserialize)]
    #[allow(dead_code)]
    struct Other {
        #[serde(rename = "isGatway")]
        typo_reader: Option<bool>,
    }
    let _: Other = doc.decode_at(&[], Some(&r)).expect("decodes");
    let unknown: Vec<String> = r.unknown_keys().iter().map(UnknownKey::path).collect();
    assert_eq!(unknown, ["ipam.subnett", "ipam.ranges[0][0].gatway"]);
}

use super::*;

/// The value flannel stored in its own documentation
/// (`Documentation/reservations.md`, key `/coreos.com/network/subnets/10.5.52.0-24`).
const FLANNEL_VALUE: &str = r#"{"PublicIP":"192.168.64.3","PublicIPv6":null,"BackendType":"vxlan","BackendData":{"VNI":1,"VtepMAC":"c6:d2:32:6f:8f:44"}}"#;
const FLANNEL_KEY: &str = "/coreos.com/network/subnets/10.5.52.0-24";

fn v4(s: &str) -> Ipv4Net {
    s.parse().expect("net")
}

fn v6(s: &str) -> Ipv6Net {
    s.parse().expect("net")
}

const MAC: [u8; 6] = [0xc6, 0xd2, 0x32, 0x6f, 0x8f, 0x44];

/// Golden: our vxlan attrs are flannel's bytes, and flannel's bytes parse
/// back to them.
#[test]
fn vxlan_value_is_flannels_bytes() {
    let ours = LeaseAttrs::vxlan(
        "192.168.64.3".parse().expect("ip"),
        VxlanData {
            vni: 1,
            vtep_mac: MAC,
        },
        None,
    );
    assert_eq!(ours.to_json(), FLANNEL_VALUE);
    let theirs = LeaseAttrs::parse(FLANNEL_VALUE.as_bytes()).expect("parse");
    assert_eq!(theirs, ours);
    assert_eq!(
        theirs.vxlan_data(),
        Ok(VxlanData {
            vni: 1,
            vtep_mac: MAC
        })
    );
}

/// Dual-stack vxlan: PublicIPv6 set, BackendV6Data after BackendData
/// (`pkg/lease/lease.go` field order); host-gw has no backend data.
#[test]
fn dual_stack_and_host_gw_values() {
    let mac6 = [0x0a, 0, 0, 0, 0, 0x01];
    let ours = LeaseAttrs::vxlan(
        "192.168.64.3".parse().expect("ip"),
        VxlanData {
            vni: 4096,
            vtep_mac: MAC,
        },
        Some((
            "fd00::3".parse().expect("ip"),
            VxlanData {
                vni: 4096,
                vtep_mac: mac6,
            },
        )),
    );
    let text = ours.to_json();
    assert_eq!(
        text,
        r#"{"PublicIP":"192.168.64.3","PublicIPv6":"fd00::3","BackendType":"vxlan","BackendData":{"VNI":4096,"VtepMAC":"c6:d2:32:6f:8f:44"},"BackendV6Data":{"VNI":4096,"VtepMAC":"0a:00:00:00:00:01"}}"#
    );
    let back = LeaseAttrs::parse(text.as_bytes()).expect("parse");
    assert_eq!(
        back.vxlan_v6_data(),
        Ok(VxlanData {
            vni: 4096,
            vtep_mac: mac6
        })
    );
    assert_eq!(back, ours);
    let gw = LeaseAttrs::host_gw("10.0.0.2".parse().expect("ip"), None);
    assert_eq!(
        gw.to_json(),
        r#"{"PublicIP":"10.0.0.2","PublicIPv6":null,"BackendType":"host-gw"}"#
    );
    assert!(gw.vxlan_data().is_err());
}

/// Read as Go reads it: case-insensitive, last entry wins, unknown keys
/// ignored; `PublicIP: null` fails (flannel's IP4 unmarshaller).
#[test]
fn values_are_read_leniently_as_go_reads_them() {
    let a = LeaseAttrs::parse(
        br#"{"publicip":"10.0.0.1","PUBLICIP":"10.0.0.9","backendtype":"host-gw",
            "Extra":{"a":[1]},"publicipv6":"fd00::1","PublicIPv6":null,"BackendType":null}"#,
    )
    .expect("parse");
    assert_eq!(a.public_ip, "10.0.0.9".parse::<Ipv4Addr>().expect("ip"));
    assert_eq!(a.public_ipv6, None);
    assert_eq!(a.backend_type, "host-gw");
    let a = LeaseAttrs::parse(
        br#"{"BackendType":"vxlan","backenddata":{"vni":3,"vtepmac":"AA-BB-CC-DD-EE-FF"}}"#,
    )
    .expect("parse");
    assert_eq!(a.public_ip, Ipv4Addr::UNSPECIFIED);
    assert_eq!(
        a.vxlan_data(),
        Ok(VxlanData {
            vni: 3,
            vtep_mac: [0xaa, 0xbb, 0xcc, 0xdd, 0xee, 0xff]
        })
    );
    for bad in [
        r#"{"PublicIP":null}"#,
        r#"{"PublicIP":"10.0.0.1","publicIP":null}"#,
        r#"{"PublicIP":"fd00::1"}"#,
        r#"{"PublicIP":17}"#,
        r#"{"PublicIP":"10.0.0.1","PublicIPv6":3}"#,
        r#"{"BackendType":[]}"#,
        r#"[]"#,
        r#"{"PublicIP":"10.0.0.1""#,
    ] {
        assert!(LeaseAttrs::parse(bad.as_bytes()).is_err(), "{bad}");
    }
    let err = LeaseAttrs::parse(br#"{"PublicIP":null}"#).expect_err("null");
    assert!(err.to_string().contains("PublicIP"), "{err}");
    for bad in [
        r#"{"VNI":1}"#,
        r#"{"VNI":1,"VtepMAC":null}"#,
        r#"{"VNI":-1,"VtepMAC":"c6:d2:32:6f:8f:44"}"#,
        r#"{"VNI":1,"VtepMAC":"c6:d2:32:6f:8f"}"#,
        r#"{"VNI":1,"VtepMAC":"+6:d2:32:6f:8f:44"}"#,
        r#""x""#,
    ] {
        let attrs = LeaseAttrs::parse(
            format!(r#"{{"PublicIP":"1.2.3.4","BackendData":{bad}}}"#).as_bytes(),
        )
        .expect("attrs");
        assert!(attrs.vxlan_data().is_err(), "{bad}");
    }
}

/// Foreign backend data is kept and written back as Go compacts a
/// RawMessage (order kept, HTML-safe escapes).
#[test]
fn foreign_backend_data_round_trips() {
    let text = r#"{"PublicIP":"10.0.0.1","PublicIPv6":null,"BackendType":"wireguard","BackendData":{"PublicKey":"a\u003cb","Z":[1,2.5,true,null],"A":"\n"}}"#;
    let attrs = LeaseAttrs::parse(text.as_bytes()).expect("parse");
    assert_eq!(attrs.to_json(), text);
}

/// `pkg/subnet/subnet.go` MakeSubnetKey / ParseSubnetKey.
#[test]
fn subnet_keys_are_flannels() {
    assert_eq!(subnet_key(v4("10.5.52.0/24"), None), "10.5.52.0-24");
    assert_eq!(
        subnet_key(v4("10.5.72.0/24"), Some(v6("fc00:0:0:3::/64"))),
        "10.5.72.0-24&fc00:0:0:3::-64"
    );
    // Go's compressed form: the longest zero run, leftmost on a tie.
    assert_eq!(
        subnet_key(v4("10.5.72.0/24"), Some(v6("1:0:0:2:0:0:3:4/126"))),
        "10.5.72.0-24&1::2:0:0:3:4-126"
    );
    assert_eq!(
        parse_subnet_key(FLANNEL_KEY),
        Some((v4("10.5.52.0/24"), None))
    );
    assert_eq!(
        parse_subnet_key("10.5.52.0-24"),
        Some((v4("10.5.52.0/24"), None))
    );
    assert_eq!(
        parse_subnet_key("/coreos.com/network/subnets/10.5.72.0-24&fc00:0:0:3::-64"),
        Some((v4("10.5.72.0/24"), Some(v6("fc00:0:0:3::/64"))))
    );
    for key in [
        "/coreos.com/network/config",
        "/coreos.com/network/subnets/fc00::-64",
        "10.5.52.0-32",
        "10.5.52.0-24&fc00::-128",
        "10.5.52.0-24&FC00::-64",
        "10.5.52.0-24/",
        "300.5.52.0-24",
        "10.5.52.0-24\n",
    ] {
        assert_eq!(parse_subnet_key(key), None, "{key:?}");
    }
    // Kept as written: such a key never equals a subnet we make.
    assert_eq!(
        parse_subnet_key("10.5.52.7-24"),
        Some((v4("10.5.52.7/24"), None))
    );
    for (sn, sn6) in [
        (v4("10.244.3.0/24"), None),
        (v4("192.168.0.4/30"), Some(v6("fd00:abcd:0:10::/64"))),
    ] {
        assert_eq!(parse_subnet_key(&subnet_key(sn, sn6)), Some((sn, sn6)));
    }
}

#[test]
fn macs_format_as_go() {
    assert_eq!(format_mac(MAC), "c6:d2:32:6f:8f:44");
    assert_eq!(parse_mac("C6:D2:32:6F:8F:44"), Some(MAC));
    assert_eq!(parse_mac("c6:d2:32:6f:8f:44:00"), None);
    assert_eq!(parse_mac("c6:d2:32:6f:8f-44"), None);
}

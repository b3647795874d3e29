use super::*;
use crate::flanneld::config;

fn config(text: &str) -> NetworkConfig {
    config::parse(text.as_bytes()).expect("config")
}

fn net<T: std::str::FromStr>(s: &str) -> T
where
    T::Err: std::fmt::Debug,
{
    s.parse().expect("net")
}

/// flannel's own example (`Documentation/reservations.md`): the same
/// bytes, keys in WriteSubnetFile's order.
#[test]
fn renders_flannels_file() {
    let c = config(r#"{"Network":"10.5.0.0/16","Backend":{"Type":"vxlan"}}"#);
    assert_eq!(
        render(&c, net("10.5.52.0/24"), None, 1450, false),
        "FLANNEL_NETWORK=10.5.0.0/16\nFLANNEL_SUBNET=10.5.52.1/24\nFLANNEL_MTU=1450\nFLANNEL_IPMASQ=false\n"
    );
    let c = config(r#"{"Network":"10.5.0.0/16","EnableIPv6":true,"IPv6Network":"fc00::/48"}"#);
    assert_eq!(
        render(
            &c,
            net("10.5.52.0/24"),
            Some(net("fc00:0:0:3::/64")),
            1450,
            true
        ),
        "FLANNEL_NETWORK=10.5.0.0/16\nFLANNEL_SUBNET=10.5.52.1/24\n\
             FLANNEL_IPV6_NETWORK=fc00::/48\nFLANNEL_IPV6_SUBNET=fc00:0:0:3::1/64\n\
             FLANNEL_MTU=1450\nFLANNEL_IPMASQ=true\n"
    );
}

/// Our `flannel` plugin reads what is written, and the previous subnet
/// comes back as its network address; the file is 0644 in a 0755 dir.
#[test]
fn the_plugin_reads_what_is_written_and_the_subnet_comes_back() {
    use std::os::unix::fs::PermissionsExt;
    let root = std::env::temp_dir().join(format!("cni-multi-subnet-env-{}", std::process::id()));
    let path = root.join("flannel").join("subnet.env");
    assert_eq!(
        read_previous(&path).ok(),
        Some(Previous::default()),
        "no file yet"
    );
    let c = config(r#"{"Network":"10.5.0.0/16","EnableIPv6":true,"IPv6Network":"fc00::/48"}"#);
    let text = render(
        &c,
        net("10.5.72.0/24"),
        Some(net("fc00:0:0:3::/64")),
        1410,
        true,
    );
    write(&path, &text).expect("write");
    let mode = |p: &Path| fs_err::metadata(p).expect("stat").permissions().mode() & 0o7777;
    assert_eq!(mode(&path), 0o644);
    assert_eq!(mode(path.parent().expect("dir")), 0o755);
    let env = parse_subnet_env(&fs_err::read_to_string(&path).expect("read"), "t").expect("parse");
    assert_eq!(env.networks, vec![net::<IpNet>("10.5.0.0/16")]);
    assert_eq!(env.subnet, Some(net("10.5.72.0/24")));
    assert_eq!(env.ipv6_networks, vec![net::<IpNet>("fc00::/48")]);
    assert_eq!(env.ipv6_subnet, Some(net("fc00:0:0:3::/64")));
    assert_eq!((env.mtu, env.ipmasq), (1410, true));
    assert_eq!(
        read_previous(&path).ok(),
        Some(Previous {
            subnet: Some(net("10.5.72.0/24")),
            ipv6_subnet: Some(net("fc00:0:0:3::/64")),
        })
    );
    // Rewritten in place: no temporary file left beside it.
    write(&path, &render(&c, net("10.5.9.0/24"), None, 1450, false)).expect("rewrite");
    let names: Vec<_> = fs_err::read_dir(path.parent().expect("dir"))
        .expect("ls")
        .filter_map(|e| e.ok().map(|e| e.file_name()))
        .collect();
    assert_eq!(names, vec![std::ffi::OsString::from("subnet.env")]);
    assert_eq!(
        read_previous(&path).ok().map(|p| p.subnet),
        Some(Some(net("10.5.9.0/24")))
    );
    fs_err::write(&path, "FLANNEL_SUBNET=nonsense\n").expect("garble");
    assert!(matches!(read_previous(&path), Err(PreviousError::Parse(_))));
    let _ = fs_err::remove_dir_all(&root);
}

use super::*;

fn parse(args: &[&str], env: &[(&str, &str)]) -> Result<Flags, clap::Error> {
    let args: Vec<OsString> = args.iter().map(OsString::from).collect();
    let env: Vec<(String, String)> = env
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    Flags::parse(&args, &|k| {
        env.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone())
    })
}

#[test]
fn defaults_are_flannels() {
    let f = parse(&[], &[]).expect("flags");
    assert_eq!(
        f.endpoints(),
        ["http://127.0.0.1:4001", "http://127.0.0.1:2379"]
    );
    assert_eq!(f.config_key(), "/coreos.com/network/config");
    assert_eq!(f.subnets_prefix(), "/coreos.com/network/subnets/");
    assert_eq!(f.subnet_file, PathBuf::from("/run/flannel/subnet.env"));
    assert!(!f.ip_masq);
    assert!(f.iptables_forward_rules);
    assert_eq!(f.subnet_lease_renew_margin, 60);
    assert_eq!(f.healthz_port, 0);
}

#[test]
fn go_syntax_and_repeated_iface() {
    let f = parse(
        &[
            "-etcd-endpoints",
            "http://10.0.0.1:2379",
            "-iface=eth1",
            "--iface",
            "10.0.0.5",
            "-ip-masq",
            "-v=2",
        ],
        &[],
    )
    .expect("flags");
    assert_eq!(f.endpoints(), ["http://10.0.0.1:2379"]);
    assert_eq!(f.iface, ["eth1", "10.0.0.5"]);
    assert!(f.ip_masq);
    assert!(parse(&["-subnet-lease-renew-margin=1440"], &[]).is_err());
    assert!(parse(&["-public-ip=10.0.0"], &[]).is_err());
}

#[test]
fn environment_fills_flags_not_given() {
    let env = [
        ("FLANNELD_ETCD_ENDPOINTS", "http://e1:2379,http://e2:2379"),
        ("FLANNELD_ETCD_PREFIX", "/x/network"),
        ("FLANNELD_IP_MASQ", "true"),
        ("FLANNELD_IFACE", "eth0,eth1"),
        ("FLANNELD_PUBLIC_IP", ""),
    ];
    let f = parse(&["--etcd-prefix=/given"], &env).expect("flags");
    assert_eq!(f.endpoints(), ["http://e1:2379", "http://e2:2379"]);
    assert_eq!(f.etcd_prefix, "/given", "the command line wins");
    assert!(f.ip_masq);
    assert_eq!(f.iface, ["eth0", "eth1"]);
    assert_eq!(f.public_ip, None, "empty values are ignored");
}

#[test]
fn iface_can_reach_from_flags_or_environment() {
    let f = parse(&["-iface-can-reach=10.0.0.9"], &[]).expect("flags");
    assert_eq!(f.iface_can_reach, Some("10.0.0.9".parse().expect("ip")));
    let env = [("FLANNELD_IFACE_CAN_REACH", "10.0.0.7")];
    let f = parse(&[], &env).expect("flags");
    assert_eq!(f.iface_can_reach, Some("10.0.0.7".parse().expect("ip")));
    assert!(parse(&["-iface-can-reach", "eth0"], &[]).is_err());
}

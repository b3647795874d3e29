use super::*;

#[test]
fn keys_stay_under_net() {
    assert_eq!(
        path("net.ipv4.conf.eth0.arp_notify").ok(),
        Some(PathBuf::from("/proc/sys/net/ipv4/conf/eth0/arp_notify"))
    );
    assert_eq!(
        path(&conf_key("ipv4", "br0.100", "forwarding")).ok(),
        Some(PathBuf::from("/proc/sys/net/ipv4/conf/br0.100/forwarding"))
    );
    for bad in [
        "kernel.panic",
        "net..x",
        "net/../kernel",
        "net",
        "net.a\0b",
        "",
    ] {
        assert!(path(bad).is_err(), "{bad:?}");
    }
}

use super::*;

#[test]
fn sysctl_keys_stay_in_net() {
    assert_eq!(
        sysctl_key("net.ipv4.conf.IFNAME.arp_notify", "eth0.5")
            .ok()
            .as_deref(),
        Some("net/ipv4/conf/eth0.5/arp_notify")
    );
    assert_eq!(
        sysctl_key("net.core.somaxconn", "eth0").ok().as_deref(),
        Some("net/core/somaxconn")
    );
    for bad in [
        "kernel.panic",
        "net..x",
        "net/../kernel/panic",
        "net",
        "vm.net.x",
    ] {
        assert_eq!(sysctl_key(bad, "eth0").map_err(|e| e.code), Err(7), "{bad}");
    }
}

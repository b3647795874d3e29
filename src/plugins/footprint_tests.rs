use super::*;
use crate::netfilter::{Backend, Choice};

fn of(conf: Value) -> Footprint {
    let raw = conf.as_object().cloned().unwrap_or_default();
    let plugin_type = text(&raw, "type").unwrap_or_default().to_string();
    Footprint::of(&PluginConf { plugin_type, raw })
}

#[test]
fn footprints_of_configured_plugins() {
    let b = of(serde_json::json!({"type": "bridge", "IPMASQ": true,
        "ipam": {"type": "host-local", "subnet": "10.1.0.0/24",
            "ranges": [[{"subnet": "10.2.0.0/24"}], [{"subnet": "fd00::/64"}, {"x": 1}]]}}));
    assert_eq!(b.bridge.as_deref(), Some("cni0"));
    assert_eq!(b.masquerade, Masquerade::On(Choice::Detect));
    assert_eq!(b.host_local, Some(PathBuf::from("/var/lib/cni/networks")));
    let nets: Vec<String> = b.subnets.iter().map(ToString::to_string).collect();
    assert_eq!(nets, ["10.1.0.0/24", "10.2.0.0/24", "fd00::/64"]);
    assert!(!b.iptables && b.data_dir.is_none());
    let p = of(serde_json::json!({"type": "portmap", "dataDir": "relative"}));
    assert!(p.iptables && p.files == Files::Records);
    assert_eq!(p.data_dir, Some(PathBuf::from("/run/cni/portmap")));
    let f = of(serde_json::json!({"type": "firewall", "backend": "iptables"}));
    assert!(f.iptables && f.firewalld_zone.is_none());
    let f = of(serde_json::json!({"type": "firewall", "firewalldZone": "cni"}));
    assert_eq!(f.firewalld_zone.as_deref(), Some("cni"));
    assert!(!f.iptables);
    let d = of(serde_json::json!({"type": "macvlan", "ipam": {"type": "dhcp"}}));
    assert_eq!(d.dhcp_socket, Some(PathBuf::from("/run/cni/dhcp.sock")));
    let m = of(serde_json::json!({"type": "multus", "cniDir": "/x/multus"}));
    assert_eq!(m.cni_dir, Some(PathBuf::from("/x/multus")));
    let p = of(serde_json::json!({"type": "ptp", "ipMasq": true, "ipMasqBackend": "nftables"}));
    assert_eq!(
        p.masquerade,
        Masquerade::On(Choice::Configured(Backend::Nftables))
    );
    let p = of(serde_json::json!({"type": "ptp", "ipMasq": true, "ipMasqBackend": "bogus"}));
    assert_eq!(
        p.masquerade,
        Masquerade::Off,
        "ADD refuses it: none written"
    );
}

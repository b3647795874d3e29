use super::*;

/// Only firewalld's "not in this zone" codes count as already removed.
#[test]
fn only_not_in_zone_answers_are_success_for_del() {
    let remote = |name: &str, message: &str| dbus::Error::Remote {
        name: name.into(),
        message: message.into(),
    };
    for message in [
        "UNKNOWN_SOURCE: '10.0.0.5/32' is not in any zone",
        "ZONE_CONFLICT: remove_source(trusted, 10.0.0.5/32): zos='internal'",
        "NOT_ENABLED: '10.0.0.5/32' is not in 'trusted'",
        "INVALID_ZONE: nosuch",
    ] {
        assert!(not_in_zone(&remote(EXCEPTION, message)), "{message}");
    }
    for e in [
        remote(EXCEPTION, "COMMAND_FAILED: nft"),
        remote(EXCEPTION, "RUNNING_BUT_FAILED"),
        remote("org.freedesktop.DBus.Error.AccessDenied", "UNKNOWN_SOURCE"),
        remote("org.fedoraproject.FirewallD1.NotAuthorizedException", ""),
        dbus::Error::Closed,
    ] {
        assert!(!not_in_zone(&e), "{e:?}");
    }
}

#[test]
fn sources_are_host_prefixes() {
    let v4: IpNet = "10.1.2.3/24".parse().expect("v4");
    let v6: IpNet = "fd00::5/64".parse().expect("v6");
    assert_eq!(source(&v4), "10.1.2.3/32");
    assert_eq!(source(&v6), "fd00::5/128");
}

#[test]
fn only_host_sources_are_containers() {
    let got = host_sources(&[
        "10.0.0.5/32".into(),
        "10.0.0.0/24".into(),
        "fd00::5/128".into(),
        "ipset:foo".into(),
        "52:54:00:00:00:01".into(),
    ]);
    let want: Vec<IpNet> = vec![
        "10.0.0.5/32".parse().expect("net"),
        "fd00::5/128".parse().expect("net"),
    ];
    assert_eq!(got, want);
}

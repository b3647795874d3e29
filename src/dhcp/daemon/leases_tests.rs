use super::*;
use std::net::Ipv4Addr;
use std::path::Path;

fn lease(acquired: u64) -> Lease {
    Lease {
        address: Ipv4Addr::new(10, 0, 0, 5),
        server: Ipv4Addr::new(10, 0, 0, 1),
        acquired,
        lease_secs: 100,
        renew_secs: 50,
        rebind_secs: 87,
        options: Default::default(),
    }
}

#[test]
fn keepers_act_at_t1_then_retry_but_never_past_t2_or_expiry() {
    let l = lease(1000);
    assert_eq!(next_due(&l, None, 1000), 1050);
    assert_eq!(next_due(&l, Some(2000), 1010), 1050, "T1 first");
    assert_eq!(next_due(&l, None, 1050), 1050, "due now");
    assert_eq!(next_due(&l, Some(1060), 1051), 1060, "a retry");
    assert_eq!(
        next_due(&l, Some(1095), 1060),
        1087,
        "rebinding starts on time"
    );
    assert_eq!(next_due(&l, Some(1200), 1090), 1100, "expiry on time");
    assert_eq!(next_due(&l, Some(1200), 1100), 1100, "expired: at once");
}

#[test]
fn gc_keeps_what_is_listed_per_container_and_interface() {
    let a = Attachment {
        container_id: "c1".into(),
        network: "n".into(),
        ifname: "eth1".into(),
    };
    let keep = |c: &str, i: &str| Keep {
        container_id: c.into(),
        ifname: i.into(),
    };
    assert!(is_kept(&a, &[keep("c1", "eth1")]));
    assert!(is_kept(&a, &[keep("c1", "")]));
    assert!(!is_kept(&a, &[keep("c1", "eth0")]));
    assert!(!is_kept(&a, &[keep("c2", "eth1")]));
    assert!(!is_kept(&a, &[]));
}

#[test]
fn calls_are_checked_before_anything_is_done() {
    let a = Attachment {
        container_id: "c1".into(),
        network: "n".into(),
        ifname: "eth0".into(),
    };
    let r = Request {
        netns: "/run/netns/x".into(),
        ifname: "eth0".into(),
        client_id: vec![0, 1],
        provide: vec![],
        request: vec![],
    };
    assert!(check_attachment(&a).is_ok());
    assert!(check_request(&a, &r).is_ok());
    let bad_id = Attachment {
        container_id: "../x".into(),
        ..a.clone()
    };
    assert_eq!(
        check_attachment(&bad_id).map_err(|f| f.kind),
        Err(Kind::BadCall)
    );
    for r in [
        Request {
            netns: "relative".into(),
            ..r.clone()
        },
        Request {
            ifname: "eth1".into(),
            ..r.clone()
        },
        Request {
            client_id: vec![],
            ..r.clone()
        },
    ] {
        assert_eq!(
            check_request(&a, &r).map_err(|f| f.kind),
            Err(Kind::BadCall)
        );
    }
}

#[test]
fn a_netns_path_with_dotdot_or_any_non_canonical_part_is_refused() {
    for ok in [
        "/proc/1234/ns/net",
        "/proc/1/task/1/ns/net",
        "/var/run/netns/x",
        "/run/netns/cni-1a2b",
        "/run/netns/..x",
        "/run/netns/x..",
    ] {
        assert_eq!(check_netns(Path::new(ok)), Ok(()), "{ok}");
    }
    for bad in [
        "",
        "/",
        "relative",
        "run/netns/x",
        "/..",
        "/../../proc/1/ns/net",
        "/run/netns/../../proc/1/ns/net",
        "/run/netns/x/..",
        "/run/./netns/x",
        "/./run/netns/x",
        "/run/netns/x/.",
        "//run/netns/x",
        "/run//netns/x",
        "/run/netns/x/",
        "/run/netns/x\0",
    ] {
        assert!(check_netns(Path::new(bad)).is_err(), "{bad:?} accepted");
    }
    // What the daemon opens with -hostprefix is the prefix + an accepted
    // path: it cannot have a `..` that climbs out of the prefix.
    let a = Attachment {
        container_id: "c1".into(),
        network: "n".into(),
        ifname: "eth0".into(),
    };
    let r = Request {
        netns: "/../../proc/1/ns/net".into(),
        ifname: "eth0".into(),
        client_id: vec![0, 1],
        provide: vec![],
        request: vec![],
    };
    let f = check_request(&a, &r).expect_err("escaping netns");
    assert_eq!(f.kind, Kind::BadCall);
    assert!(f.message.contains("canonical"), "{f}");
}

#[test]
fn gone_links_and_namespaces_are_told_from_other_failures() {
    assert!(link_gone(&DhcpError::Netns(crate::netns::Error::NotFound(
        "/x".into()
    ))));
    assert!(link_gone(&DhcpError::Io {
        op: "bind".into(),
        source: std::io::Error::from_raw_os_error(nix::libc::ENODEV),
    }));
    assert!(!link_gone(&DhcpError::NoAnswer {
        ifname: "eth0".into(),
        after: Duration::from_secs(1),
    }));
}

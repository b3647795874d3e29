use super::*;
use crate::netfilter;
use std::error::Error as _;

#[test]
fn netfilter_errors_keep_their_codes_text_and_cause() {
    let e = Error::from(netfilter::Backend::parse("ebtables").expect_err("unknown"));
    assert_eq!(
        (e.code, e.msg.as_str()),
        (7, "unknown backend \"ebtables\" (iptables or nftables)")
    );
    let e = Error::from(netfilter::Error::NoBackend);
    assert_eq!(e.code, 50);
    assert!(e.msg.starts_with("no usable netfilter backend"), "{e}");
    let e = Error::from(netfilter::Error::Lock {
        path: netfilter::LOCK_PATH.into(),
        source: std::io::Error::from_raw_os_error(13),
    });
    assert_eq!((e.code, e.msg.as_str()), (999, "Permission denied"));
    // The chain: CNI error -> netfilter error -> io error, whose errno is kept.
    let io = e.source().and_then(|nf| nf.source()).expect("the io error");
    assert_eq!(io.to_string(), "Permission denied (os error 13)");
}

/// A layer error's hint goes into the details, by errno and by what the
/// operation did; the message stays the layer's sentence.
#[test]
fn layer_errors_carry_the_hint_for_their_errno_in_the_details() {
    use crate::netlink::Error as Nl;
    use nix::errno::Errno;
    let taken =
        Nl::os("create veth link \"eth0\"", Errno::EEXIST).about(Object::Link("eth0".into()));
    let e = Error::from(taken);
    assert_eq!(
        (e.code, e.msg.as_str()),
        (999, "create veth link \"eth0\": File exists")
    );
    assert_eq!(e.details, hint::link_exists("eth0"));
    let route = Error::from(Nl::os("add route x", Errno::EEXIST).about(Object::Route));
    assert!(
        route.details.starts_with("an equal route already exists"),
        "{route}"
    );
    let denied = Error::from(Nl::os("create bridge link \"cni0\"", Errno::EPERM));
    assert!(
        denied
            .details
            .ends_with("this needs CAP_NET_ADMIN to change the network"),
        "{denied}"
    );
    // An errno with nothing to do about it, or no errno: no details.
    assert_eq!(Error::from(Nl::os("get link 3", Errno::ENODEV)).details, "");
    assert_eq!(Error::from(Nl::os("x", Errno::EEXIST)).details, "");
    let ns = |e| Error::from(e).details;
    let entering = ns(crate::netns::Error::Enter(
        "/run/netns/x".into(),
        Errno::EPERM,
    ));
    assert!(entering.ends_with("this needs CAP_SYS_ADMIN to enter or mount network namespaces"));
    let gone = ns(crate::netns::Error::NotFound("/run/netns/x".into()));
    assert!(gone.starts_with("CNI_NETNS must name an existing network namespace"));
    // Through the netfilter layer, the netlink error's hint.
    let nft = Error::from(netfilter::Error::Netlink(Nl::os("add rule", Errno::EPERM)));
    assert!(nft.details.contains("CAP_NET_ADMIN"), "{nft}");
}

#[test]
fn firewalld_errors_are_999_and_keep_the_bus_error() {
    let e = Error::from(netfilter::Error::Firewalld {
        what: "failed to add the address 10.1.2.3/32 to x zone".into(),
        source: crate::dbus::Error::Remote {
            name: "org.fedoraproject.FirewallD1.Exception".into(),
            message: "INVALID_ZONE: x".into(),
        },
    });
    assert_eq!(
        (e.code, e.msg.as_str()),
        (
            999,
            "failed to add the address 10.1.2.3/32 to x zone: INVALID_ZONE: x"
        )
    );
    let bus = e
        .source()
        .and_then(|nf| nf.source())
        .expect("the bus error");
    assert_eq!(bus.to_string(), "INVALID_ZONE: x");
}

#[test]
fn dhcp_option_errors_are_config_errors_and_the_rest_999_with_their_cause() {
    use crate::dhcp::error::Error as Dhcp;
    let e = Error::from(Dhcp::UnknownOption("no-such".into()));
    assert_eq!(e.code, 7);
    assert!(e.msg.contains("no-such"), "{e}");
    assert_eq!(Error::from(Dhcp::InvalidOption("x".into())).code, 7);
    let e = Error::from(Dhcp::NoAnswer {
        ifname: "eth0".into(),
        after: std::time::Duration::from_secs(10),
    });
    assert_eq!(e.code, 999);
    assert!(e.msg.contains("eth0"), "{e}");
    let e = Error::from(Dhcp::Io {
        op: "bind".into(),
        source: std::io::Error::from_raw_os_error(13),
    });
    assert_eq!(e.code, 999);
    let io = e.source().and_then(|d| d.source()).expect("the io error");
    assert_eq!(io.to_string(), "Permission denied (os error 13)");
}

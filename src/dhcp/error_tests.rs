use super::*;

#[test]
fn messages_name_the_interface_and_keep_the_cause() {
    let e = Error::NoAnswer {
        ifname: "eth0".into(),
        after: Duration::from_millis(3050),
    };
    assert_eq!(
        e.to_string(),
        "no answer from a DHCP server on eth0 within 3.0 s"
    );
    let e = Error::io(
        "bind a UDP socket",
        std::io::Error::from_raw_os_error(nix::libc::EADDRNOTAVAIL),
    );
    assert!(e.to_string().starts_with("bind a UDP socket: "), "{e}");
    let cause = std::error::Error::source(&e).expect("source");
    assert!(cause.to_string().contains("os error"), "{cause}");
}

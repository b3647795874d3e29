use super::*;

#[test]
fn only_denials_of_a_user_get_the_hint() {
    let io = |errno| std::io::Error::from_raw_os_error(errno).to_string();
    let eperm = format!("could not add \"cni0\": {}", io(libc::EPERM));
    assert_eq!(
        with_root_hint(eperm.clone(), false),
        format!("{eperm} (operation not permitted: run as root)")
    );
    assert_eq!(with_root_hint(eperm.clone(), true), eperm);
    // The C library's words, as the netlink layer prints the kernel's errno.
    let netlink = "create bridge link \"cni0\": Operation not permitted";
    assert!(
        with_root_hint(netlink.into(), false).ends_with("(operation not permitted: run as root)")
    );
    let nix = format!(
        "make a shared mount of /run/netns: {}",
        nix::errno::Errno::EPERM
    );
    assert!(with_root_hint(nix, false).ends_with("(operation not permitted: run as root)"));
    let eacces = format!(
        "failed to create /var/lib/cni/networks/x: {}",
        io(libc::EACCES)
    );
    assert!(with_root_hint(eacces, false).ends_with("(permission denied: run as root)"));
    let other = "no net configuration with name \"x\" in /etc/cni/net.d".to_string();
    assert_eq!(with_root_hint(other.clone(), false), other);
    // EPERM's number must not match EACCES's or EEXIST's.
    let exists = io(libc::EEXIST);
    assert_eq!(with_root_hint(exists.clone(), false), exists);
    let denied = io(libc::EACCES);
    assert_eq!(
        with_root_hint(denied.clone(), false),
        format!("{denied} (permission denied: run as root)")
    );
}

/// A plugin's error that carries its own hint (in its details, which the
/// runtime's text ends with) gets no second one.
#[test]
fn a_plugins_hint_is_not_repeated() {
    let plugin =
        crate::cni::Error::internal("create bridge link \"cni0\": Operation not permitted")
            .with_hint(hint::for_errno(libc::EPERM, Doing::Network, false));
    let text = plugin.to_string();
    assert!(
        text.ends_with("; run as root: this needs CAP_NET_ADMIN to change the network"),
        "{text}"
    );
    assert_eq!(with_root_hint(text.clone(), false), text);
}

use super::*;

#[test]
fn a_stale_socket_is_replaced_and_a_live_one_refused() {
    let dir = std::env::temp_dir().join(format!("cni-multi-dhcpsock-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let path = dir.join("sub").join("d.sock");
    let (live, _) = listen(&path).expect("first");
    let mode = |p: &Path| {
        std::os::unix::fs::PermissionsExt::mode(&std::fs::metadata(p).expect("stat").permissions())
            & 0o777
    };
    assert_eq!(mode(&dir.join("sub")), 0o700);
    assert_eq!(mode(&path), 0o600);
    let e = listen(&path).err().expect("live socket");
    assert!(e.to_string().contains("another dhcp daemon"), "{e}");
    drop(live);
    // A daemon that died leaves its socket file with nothing listening.
    // Other tests of this binary fork, and a child may briefly hold the
    // dropped listener, so the stale file is made by a socket that is
    // bound but never listens: connecting to it is refused either way.
    std::fs::remove_file(&path).expect("rm live");
    let stale = nix::sys::socket::socket(
        nix::sys::socket::AddressFamily::Unix,
        nix::sys::socket::SockType::Stream,
        nix::sys::socket::SockFlag::SOCK_CLOEXEC,
        None,
    )
    .expect("socket");
    nix::sys::socket::bind(
        std::os::fd::AsRawFd::as_raw_fd(&stale),
        &nix::sys::socket::UnixAddr::new(&path).expect("addr"),
    )
    .expect("bind");
    drop(stale);
    assert!(path.exists());
    let (_again, own) = listen(&path).expect("stale socket replaced");
    assert_eq!(own.path, path);
    std::fs::remove_file(&path).expect("rm");
    std::fs::write(&path, "x").expect("plain file");
    let e = listen(&path).err().expect("not a socket");
    assert!(e.to_string().contains("is not a socket"), "{e}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn the_host_prefix_is_put_before_the_path() {
    assert_eq!(
        prefixed("/host", Path::new("/run/cni/dhcp.sock")),
        Path::new("/host/run/cni/dhcp.sock")
    );
    assert_eq!(
        prefixed("", Path::new("/run/cni/dhcp.sock")),
        Path::new("/run/cni/dhcp.sock")
    );
}

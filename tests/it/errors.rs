//! Errors keep their cause: the kernel's errno text and a file's path reach the
//! CNI error the runtime reads.

use crate::harness;

use harness::{Call, Netns, enter_test_host, plugin_dir, run_in};
use serde_json::json;

/// A link created twice: the kernel's EEXIST, with its text and number and
/// the operation and link it was for, reaches the CNI error (code 999 as in
/// the reference) through the netlink layer's error.
#[test]
fn an_eexist_from_the_kernel_reaches_the_message_with_its_errno_text() {
    use cni_multi::netlink::Socket;
    use cni_multi::netlink::link::{Kind, NewLink};
    enter_test_host();
    let mut sock = Socket::open().expect("netlink");
    let spec = NewLink::new(
        "veth-eexist",
        Kind::Veth {
            peer: "veth-eexist-p".into(),
            peer_netns: None,
        },
    );
    sock.create_link(&spec).expect("first");
    let e = sock.create_link(&spec).expect_err("second");
    assert_eq!(e.errno, nix::libc::EEXIST);
    let cni: cni_multi::cni::Error = e.into();
    assert_eq!(cni.code, 999);
    assert!(cni.msg.contains("File exists (os error 17)"), "{cni}");
    assert!(
        cni.msg.contains("create veth link \"veth-eexist\""),
        "{cni}"
    );
    // The chain is kept: CNI error -> netlink error -> the errno itself.
    let netlink = std::error::Error::source(&cni).expect("the netlink error");
    assert!(netlink.to_string().contains("veth-eexist"), "{netlink}");
    let errno = netlink.source().expect("the errno");
    assert_eq!(
        errno.downcast_ref::<nix::errno::Errno>(),
        Some(&nix::errno::Errno::EEXIST)
    );
    let _ = run_in(None, "ip", &["link", "del", "veth-eexist"]);
}

/// A file the config names that does not exist: the error names its path.
#[test]
fn a_missing_file_error_names_its_path() {
    enter_test_host();
    let bin = plugin_dir();
    let ns = Netns::new();
    let ipam = json!({"cniVersion": "1.0.0", "name": "errs2", "type": "bridge", "ipam": {
        "type": "host-local", "subnet": "10.96.8.0/24", "dataDir": "/run/cni-multi-test-errors2",
        "resolvConf": "/nonexistent/cni-multi/resolv.conf"}});
    let out = Call::new("host-local", "ADD", ns.path(), &ipam.to_string())
        .path(&bin)
        .run();
    assert_eq!(out.status, 1, "{out:?}");
    let msg = out.json()["msg"].as_str().unwrap_or_default().to_string();
    assert!(msg.contains("/nonexistent/cni-multi/resolv.conf"), "{msg}");
    assert!(msg.contains("No such file or directory"), "{msg}");
    let _ = std::fs::remove_dir_all("/run/cni-multi-test-errors2");
}

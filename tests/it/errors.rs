//! Errors keep their cause: the kernel's errno text and a file's path reach the
//! CNI error the runtime reads, and where the user can act the details say how.

use crate::harness;

use harness::{Call, Netns, enter_test_host, plugin_dir, run_in};
use serde_json::json;

/// A link created twice: the kernel's EEXIST reaches the CNI error (code 999
/// as in the reference) as a sentence naming the operation and the link, in
/// the C library's words (no Rust "(os error N)"), with the errno kept as the
/// cause and what to do about it in the details.
#[test]
fn an_eexist_from_the_kernel_reaches_the_error_with_what_to_do() {
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
    assert_eq!(cni.msg, "create veth link \"veth-eexist\": File exists");
    assert_eq!(cni.details, link_in_use("veth-eexist"));
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

/// The hint a taken link name gets, word for word.
fn link_in_use(name: &str) -> String {
    format!(
        "a link named \"{name}\" already exists in that namespace: choose another interface \
         name, or delete the stale link"
    )
}

/// An ADD whose interface name is taken in the container (a link an earlier
/// ADD left): the plugin's binary answers with the reference's message and,
/// in the details, what to do; it leaves nothing behind. macvlan meets the
/// kernel's EEXIST renaming its new link; bridge finds the name taken first.
#[test]
fn an_add_whose_interface_name_is_taken_says_what_to_do() {
    enter_test_host();
    let bin = plugin_dir();
    run_in(
        None,
        "ip",
        &[
            "link",
            "add",
            "hint-master",
            "type",
            "veth",
            "peer",
            "name",
            "hint-peer",
        ],
    );
    let ipam = json!({"type": "static", "addresses": [{"address": "10.96.9.2/24"}]});
    let cases = [
        (
            json!({"type": "macvlan", "master": "hint-master", "ipam": ipam}),
            "failed to rename macvlan to \"eth0\": ",
        ),
        (
            json!({"type": "bridge", "bridge": "hint-br0", "ipam": ipam}),
            "container veth name provided (eth0) already exists",
        ),
    ];
    for (mut conf, msg) in cases {
        let plugin = conf["type"].as_str().unwrap_or_default().to_string();
        conf["cniVersion"] = json!("1.0.0");
        conf["name"] = json!("hints");
        let ns = Netns::new();
        ns.sh(
            "ip",
            &[
                "link",
                "add",
                "eth0",
                "type",
                "veth",
                "peer",
                "name",
                "stale-peer",
            ],
        );
        let before = ns.sh("ip", &["-o", "link"]);
        let e = Call::new(&plugin, "ADD", ns.path(), &conf.to_string())
            .path(&bin)
            .run()
            .err(999);
        let text = e["msg"].as_str().unwrap_or_default();
        assert!(text.starts_with(msg), "{plugin}: {e}");
        assert!(!text.contains("os error"), "{plugin}: {e}");
        assert_eq!(e["details"], link_in_use("eth0"), "{plugin}: {e}");
        assert_eq!(ns.sh("ip", &["-o", "link"]), before, "{plugin} left a link");
    }
}

/// A master that is not there: the reference's message, and in the details
/// which key to fix.
#[test]
fn a_missing_master_names_the_key_to_fix() {
    enter_test_host();
    let bin = plugin_dir();
    let ns = Netns::new();
    let conf = json!({"cniVersion": "1.0.0", "name": "hints", "type": "macvlan",
        "master": "no-such0", "ipam": {}});
    let e = Call::new("macvlan", "ADD", ns.path(), &conf.to_string())
        .path(&bin)
        .run()
        .err(999);
    assert_eq!(
        e["msg"],
        "failed to lookup master \"no-such0\": get link \"no-such0\": No such device"
    );
    assert_eq!(
        e["details"],
        "the config's master must name an existing link (`ip link` lists them)"
    );
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

/// A file error reaches the CNI error in the C library's words, without
/// Rust's "(os error N)": host-local's store under a regular file.
#[test]
fn a_file_error_reads_as_the_c_library_words_it() {
    enter_test_host();
    let dir = harness::TempDir::new("errtext");
    let file = dir.0.join("file");
    std::fs::write(&file, "").expect("write");
    let conf = json!({"cniVersion": "1.0.0", "name": "errtext", "type": "host-local",
        "ipam": {"type": "host-local", "subnet": "10.99.7.0/24", "dataDir": file.join("store")}});
    let ns = Netns::new();
    let e = Call::new("host-local", "ADD", ns.path(), &conf.to_string())
        .run()
        .err(999);
    let msg = e["msg"].as_str().unwrap_or_default();
    assert!(msg.contains("Not a directory"), "{e}");
    assert!(!msg.contains("os error"), "{e}");
}

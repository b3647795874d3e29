use super::*;

#[test]
fn each_errno_gets_the_hint_for_what_was_done() {
    let cases: [(&str, i32, Doing, bool, Option<&str>); 11] = [
        (
            "a link name in use",
            libc::EEXIST,
            Doing::Link("eth0"),
            true,
            Some(
                "a link named \"eth0\" already exists in that namespace: choose another \
                     interface name, or delete the stale link",
            ),
        ),
        (
            "an address there",
            libc::EEXIST,
            Doing::AddAddress,
            true,
            Some("the link already has that address: delete it, or give the link another one"),
        ),
        (
            "a route there",
            libc::EEXIST,
            Doing::AddRoute,
            true,
            Some(
                "an equal route already exists: delete the stale route, or change the \
                     configured routes",
            ),
        ),
        (
            "a user changing the network",
            libc::EPERM,
            Doing::Link("eth0"),
            false,
            Some("run as root: this needs CAP_NET_ADMIN to change the network"),
        ),
        (
            "root without the capability",
            libc::EPERM,
            Doing::Network,
            true,
            Some("this needs CAP_NET_ADMIN to change the network"),
        ),
        (
            "a user entering a namespace",
            libc::EPERM,
            Doing::Netns,
            false,
            Some("run as root: this needs CAP_SYS_ADMIN to enter or mount network namespaces"),
        ),
        (
            "root mounting a namespace",
            libc::EACCES,
            Doing::Netns,
            true,
            Some("this needs CAP_SYS_ADMIN to enter or mount network namespaces"),
        ),
        (
            "a user denied a file",
            libc::EACCES,
            Doing::Files,
            false,
            Some("run as root"),
        ),
        // Root denied a file: read-only or a security module; no advice.
        ("root denied a file", libc::EACCES, Doing::Files, true, None),
        ("EEXIST elsewhere", libc::EEXIST, Doing::Network, true, None),
        (
            "another errno",
            libc::ENODEV,
            Doing::Link("eth0"),
            true,
            None,
        ),
    ];
    for (name, errno, doing, root, want) in cases {
        assert_eq!(for_errno(errno, doing, root).as_deref(), want, "{name}");
    }
}

#[test]
fn a_missing_link_names_the_key() {
    assert_eq!(
        missing_link("master"),
        "the config's master must name an existing link (`ip link` lists them)"
    );
}

#[test]
fn a_text_with_the_root_hint_is_recognised() {
    let hint = for_errno(libc::EPERM, Doing::Network, false).unwrap_or_default();
    assert!(says_run_as_root(&format!("failed; {hint}")));
    assert!(!says_run_as_root(
        "failed to create \"cni0\": Operation not permitted"
    ));
}

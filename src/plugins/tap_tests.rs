use super::*;

#[test]
fn selinux_labels_are_never_ignored() {
    assert_eq!(selinux_label_refused("a\nb").map_err(|e| e.code), Err(7));
    let e = selinux_label_refused("system_u:system_r:container_t:s0").expect_err("label");
    match try_exec_label("system_u:system_r:container_t:s0") {
        Ok(()) => assert_eq!(e.code, 7, "{e:?}"),
        Err(refusal) => assert_eq!(
            (e.code, e.msg),
            (999, format!("failed set socket label: {refusal}"))
        ),
    }
}

#[test]
fn errnos_read_as_go_prints_them() {
    let e = std::io::Error::from_raw_os_error(nix::libc::EINVAL);
    assert_eq!(go_errno(&e), "invalid argument");
    let e = std::io::Error::from_raw_os_error(nix::libc::EROFS);
    assert_eq!(go_errno(&e), "read-only file system");
}

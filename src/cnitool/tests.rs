use super::*;

#[test]
fn cni_args_are_strict() {
    assert_eq!(
        parse_cni_args("A=1;B=2").ok(),
        Some(vec![("A".into(), "1".into()), ("B".into(), "2".into())])
    );
    assert!(parse_cni_args("A=").is_err());
    assert!(parse_cni_args("=1").is_err());
    assert!(parse_cni_args("A=1;").is_err());
    assert!(parse_cap_args("[1]").is_err());
}

/// A CNI error's message already carries its cause's text; its details
/// (a hint) end the report.
#[test]
fn a_report_names_each_cause_once() {
    use crate::cni::hint::{Doing, for_errno};
    let netlink = crate::netlink::Error::os("create veth link \"x\"", nix::errno::Errno::EEXIST)
        .about(crate::netlink::Object::Link("x".into()));
    let cni = crate::cni::Error::from(netlink).context("failed to make veth pair");
    let e = anyhow::Error::new(cni);
    let hint = for_errno(nix::libc::EEXIST, Doing::Link("x"), true).unwrap_or_default();
    assert_eq!(
        report(&e),
        format!("failed to make veth pair: create veth link \"x\": File exists; {hint}")
    );
    let io = std::io::Error::from_raw_os_error(nix::libc::ENOENT);
    let e = Err::<(), _>(io).context("invalid netns path").unwrap_err();
    assert_eq!(report(&e), "invalid netns path: No such file or directory");
}

#[test]
fn flags_override_env() {
    let cli = Cli::try_parse_from([
        "cnitool",
        "add",
        "n",
        "/x",
        "--ifname",
        "net1",
        "--conf-dir",
        "/c",
    ])
    .expect("parse");
    let env = |k: &str| match k {
        "CNI_IFNAME" => Some("eth9".to_string()),
        "NETCONFPATH" => Some("/env".to_string()),
        "CNI_ARGS" => Some("A=1".to_string()),
        _ => None,
    };
    let s = settings(&cli.opts, &env).expect("settings");
    assert_eq!(s.ifname, "net1");
    assert_eq!(s.conf_dir, PathBuf::from("/c"));
    assert_eq!(s.args, vec![("A".into(), "1".into())]);
    let cli = Cli::try_parse_from(["cnitool", "list"]).expect("parse");
    let s = settings(&cli.opts, &|_| None).expect("settings");
    assert_eq!(s.ifname, "eth0");
    assert_eq!(s.conf_dir, PathBuf::from("/etc/cni/net.d"));
}

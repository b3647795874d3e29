use super::*;

#[test]
fn a_stub_round_trips_and_nothing_else_parses() {
    let t = text("/opt/cni/bin/cni-multi").expect("stub");
    assert!(t.starts_with("#!/opt/cni/bin/cni-multi --stub\n"));
    assert_eq!(parse(t.as_bytes()), Some("/opt/cni/bin/cni-multi"));
    for bad in [
        "",
        "#!/opt/cni/bin/cni-multi --stub\n",
        "#!/opt/cni/bin/cni-multi\n# cni-multi plugin stub: runs the binary above as the plugin this file is named after\n",
        "I am flannel-cni-plugin",
    ] {
        assert_eq!(parse(bad.as_bytes()), None, "{bad:?}");
    }
    let mut extra = t.clone();
    extra.push('x');
    assert_eq!(parse(extra.as_bytes()), None);
}

#[test]
fn paths_a_kernel_would_misread_are_refused() {
    for bad in ["opt/cni-multi", "/opt/cni bin/cni-multi", "/a\tb", "/x\n"] {
        assert!(text(bad).is_err(), "{bad:?}");
    }
    assert!(text(&format!("/{}", "d".repeat(120))).is_err());
    assert!(text(&format!("/{}", "d".repeat(110))).is_ok());
}

#[test]
fn stub_arguments_read_as_the_link_would_give_them() {
    let args = [
        "/opt/cni/bin/cni-multi",
        "--stub",
        "/opt/cni/bin/dhcp",
        "daemon",
    ];
    assert_eq!(as_link_args(&args), ["/opt/cni/bin/dhcp", "daemon"]);
    let plain = ["/opt/cni/bin/bridge"];
    assert_eq!(as_link_args(&plain), plain);
    let short = ["cni-multi", "--stub"];
    assert_eq!(as_link_args(&short), short);
}

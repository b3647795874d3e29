use super::*;

#[test]
fn a_flavour_names_its_tools() {
    assert_eq!(Flavour::Default.tool(Family::V4, "save"), "iptables-save");
    assert_eq!(
        Flavour::Legacy.tool(Family::V4, "save"),
        "iptables-legacy-save"
    );
    assert_eq!(
        Flavour::Nft.tool(Family::V6, "restore"),
        "ip6tables-nft-restore"
    );
    assert_eq!(
        Flavour::Default.tool(Family::V6, "restore"),
        "ip6tables-restore"
    );
}

#[test]
fn parses_save_output_and_quotes_like_it() {
    let text = "# Generated\n*nat\n:PREROUTING ACCEPT [0:0]\n:CNI-DN-1 - [0:0]\n\
                    -A PREROUTING -m addrtype --dst-type LOCAL -j CNI-HOSTPORT-DNAT\n\
                    -A CNI-HOSTPORT-DNAT -p tcp -m comment --comment \"dnat name: \\\"n\\\" id: \\\"c\\\"\" -m multiport --dports 80 -j CNI-DN-1\nCOMMIT\n";
    let s = Saved::parse(text);
    assert!(s.has_chain("CNI-DN-1") && s.has_chain("PREROUTING"));
    assert!(s.jumps_to("PREROUTING", "CNI-HOSTPORT-DNAT"));
    assert!(!s.jumps_to("PREROUTING", "CNI-HOSTPORT"));
    assert!(s.jumps_to("CNI-HOSTPORT-DNAT", "CNI-DN-1"));
    assert_eq!(
        quote("dnat name: \"n\" id: \"c\""),
        "\"dnat name: \\\"n\\\" id: \\\"c\\\"\""
    );
    assert_eq!(quote("10.0.0.2:80"), "10.0.0.2:80");
    let mut b = Batch::new(Family::V4, "nat");
    let mut saved = s.clone();
    b.ensure_chain(&mut saved, "CNI-DN-1");
    b.ensure_chain(&mut saved, "CNI-NEW");
    b.append("CNI-NEW", &["-j".into(), "RETURN".into()]);
    assert_eq!(
        b.render().ok().as_deref(),
        Some("*nat\n-N CNI-NEW\n-A CNI-NEW -j RETURN\nCOMMIT\n")
    );
}

/// The injection of a name like `x\nCOMMIT\n*nat\n-F\n#`: no line of it is
/// ever written, whichever builder call carried it.
#[test]
fn control_characters_never_reach_restore_input() {
    let evil = "x\nCOMMIT\n*nat\n-F\n#";
    let calls: [&dyn Fn(&mut Batch); 8] = [
        &|b| {
            b.append(
                "FORWARD",
                &["-i".into(), evil.into(), "-j".into(), "ACCEPT".into()],
            )
        },
        &|b| {
            b.insert(
                "FORWARD",
                1,
                &[
                    "-m".into(),
                    "comment".into(),
                    "--comment".into(),
                    evil.into(),
                ],
            )
        },
        &|b| b.delete_saved("FORWARD", evil),
        &|b| b.delete_chain(evil),
        &|b| b.reset_chain(evil),
        &|b| b.append("FORWARD", &["--comment".into(), "a\u{7f}b".into()]),
        &|b| b.delete("FORWARD", &["-s".into(), evil.into()]),
        &|b| b.new_chain(evil),
    ];
    for call in calls {
        let mut b = Batch::new(Family::V4, "filter");
        call(&mut b);
        let e = b.render().expect_err("refused");
        assert!(matches!(e, Error::ControlCharacter { .. }), "{e}");
        assert!(e.to_string().contains("control character"), "{e}");
    }
    assert!(Batch::new(Family::V4, "nat\n").render().is_err());
    // `#` is quoted: iptables-restore would read the rest as a comment.
    assert_eq!(quote("a#b"), "\"a#b\"");
}

/// A restore tool that fails after reading part of a batch bigger than a pipe
/// holds: its own message reaches the error, and it is waited for.
#[test]
fn a_restore_that_fails_mid_batch_is_reported_and_reaped() {
    let dir = std::env::temp_dir().join(format!("cni-multi-restore-{}", std::process::id()));
    fs_err::create_dir_all(&dir).expect("dir");
    let tool = dir.join("iptables-restore");
    fs_err::write(
        &tool,
        format!(
            "#!/bin/sh\necho $$ >{}/pid\nhead -c 100 >/dev/null\necho 'iptables-restore: line 2 failed' >&2\nexit 1\n",
            dir.display()
        ),
    )
    .expect("tool");
    fs_err::set_permissions(&tool, std::os::unix::fs::PermissionsExt::from_mode(0o755))
        .expect("chmod");
    let mut b = Batch::new(Family::V4, "filter");
    for i in 0..20_000 {
        b.append(
            "FORWARD",
            &[
                "-s".into(),
                format!("10.0.{}.{}", i / 256, i % 256),
                "-j".into(),
                "ACCEPT".into(),
            ],
        );
    }
    let input = b.render().expect("input");
    assert!(input.len() > 1 << 16, "more than a pipe holds");
    let e = restore("iptables-restore", Command::new(&tool), &input).expect_err("fails");
    let Error::ToolFailed { stderr, .. } = &e else {
        panic!("not the tool's failure: {e}");
    };
    assert_eq!(stderr, "iptables-restore: line 2 failed");
    let pid = fs_err::read_to_string(dir.join("pid")).expect("pid");
    // Waited for: its process entry is gone, not left as a zombie.
    let stat = fs_err::read_to_string(format!("/proc/{}/stat", pid.trim()));
    assert!(
        stat.is_err(),
        "the failed tool was not waited for: {stat:?}"
    );
    let _ = fs_err::remove_dir_all(&dir);
}

use super::*;
use crate::cni::env::CmdArgs;

fn invocation(command: Command, ipam: &str, args: &str) -> Invocation {
    let conf = format!(r#"{{"cniVersion":"1.0.0","name":"lan","type":"macvlan","ipam":{ipam}}}"#);
    Invocation {
        command,
        env: CmdArgs {
            container_id: "ctr-1".into(),
            netns: "/run/netns/x".into(),
            ifname: "eth0".into(),
            args: args.into(),
            path: Vec::new(),
            netns_override: false,
        },
        conf: crate::cni::NetConf::parse(conf.as_bytes()).expect("conf"),
        cni_args: Default::default(),
        plugins: crate::cni::no_plugins,
    }
}

#[test]
fn the_request_carries_client_id_options_and_an_absolute_netns() {
    let inv = invocation(
        Command::Add,
        r#"{"type":"dhcp","daemonSocketPath":"/tmp/d.sock","priority":5,
                "provide":[{"option":"host-name","fromArg":"K8S_POD_NAME"}],
                "request":[{"option":"121"}]}"#,
        "IgnoreUnknown=1;K8S_POD_NAME=web-1;junk",
    );
    let conf = Conf::load(&inv).expect("conf");
    assert_eq!(conf.socket, Path::new("/tmp/d.sock"));
    assert_eq!(conf.priority, Ok(Some(5)));
    let r = conf.request(&inv).expect("request");
    assert_eq!(r.netns, Path::new("/run/netns/x"));
    assert_eq!(r.ifname, "eth0");
    assert_eq!(r.client_id, options::client_id("ctr-1", "lan", "eth0"));
    assert_eq!(r.provide, vec![(12, b"web-1".to_vec())]);
    assert!(r.request.contains(&121), "{:?}", r.request);
}

#[test]
fn defaults_and_bad_values() {
    let inv = invocation(Command::Add, r#"{"type":"dhcp"}"#, "");
    let conf = Conf::load(&inv).expect("conf");
    assert_eq!(conf.socket, Path::new(DEFAULT_SOCKET));
    assert_eq!(conf.priority, Ok(None));
    // A bad metric is ADD's refusal only (DEL, the reference's too, ignores it).
    let conf = Conf::load(&invocation(Command::Add, r#"{"priority":-1}"#, "")).expect("conf");
    assert_eq!(conf.priority.map_err(|e| e.code), Err(7));
    let bad = invocation(
        Command::Add,
        r#"{"provide":[{"option":"no-such-option","value":"x"}]}"#,
        "",
    );
    let conf = Conf::load(&bad).expect("conf");
    assert_eq!(conf.request(&bad).expect_err("bad name").code, 7);
    let bad = invocation(Command::Add, r#"{"request":[{"option":"300"}]}"#, "");
    let conf = Conf::load(&bad).expect("conf");
    assert_eq!(conf.request(&bad).expect_err("bad code").code, 7);
    // A relative netns is made absolute against the working directory.
    let mut rel = invocation(Command::Add, r#"{}"#, "");
    rel.env.netns = "ns/x".into();
    let r = Conf::load(&rel)
        .and_then(|c| c.bare_request(&rel))
        .expect("request");
    assert!(r.netns.is_absolute() && r.netns.ends_with("ns/x"), "{r:?}");
}

#[test]
fn cni_args_are_read_leniently() {
    assert_eq!(
        cni_args_pairs("A=1;B;C=x=y;;"),
        vec![("A".into(), "1".into()), ("C".into(), "x=y".into())]
    );
}

#[test]
fn a_daemon_that_is_down_is_11_naming_its_socket_and_50_for_status() {
    let sock = std::env::temp_dir().join(format!("cni-multi-plugin-nosock-{}", std::process::id()));
    let ipam = format!(r#"{{"daemonSocketPath":"{}"}}"#, sock.display());
    let inv = invocation(Command::Add, &ipam, "");
    let e = Dhcp.add(&inv).expect_err("no daemon");
    assert_eq!(e.code, 11, "{e}");
    assert!(e.msg.contains(&sock.display().to_string()), "{e}");
    let e = Dhcp.status(&inv).expect_err("no daemon");
    assert_eq!(e.code, 50, "{e}");
    let e = Dhcp.check(&inv).expect_err("no daemon");
    assert_eq!(e.code, 11, "{e}");
    // Nothing was ever kept for this socket: DEL has nothing to release.
    Dhcp.del(&inv).expect("DEL with nothing held");
    // A lease file for the attachment: the lease may be held.
    let dir = protocol::default_state_dir(&sock);
    std::fs::create_dir_all(&dir).expect("dir");
    std::fs::write(dir.join(protocol::state_file_name(&attachment(&inv))), "{}").expect("file");
    let e = Dhcp.del(&inv).expect_err("lease held");
    assert_eq!(e.code, 11, "{e}");
    assert!(e.msg.contains("may still be held"), "{e}");
    // A daemon's directory (its lock in it) without the file: nothing held.
    std::fs::remove_file(dir.join(protocol::state_file_name(&attachment(&inv)))).expect("rm");
    Dhcp.del(&inv).expect_err("not a daemon's directory");
    std::fs::write(dir.join(protocol::STATE_LOCK), "").expect("lock");
    Dhcp.del(&inv).expect("DEL with nothing held");
    let _ = std::fs::remove_dir_all(&dir);
}

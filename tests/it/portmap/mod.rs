//! portmap end to end: the helpers every part shares (a bridge + portmap
//! network, a client, a container with mapped servers, the nat table without
//! the shared chains), and a module per concern.

mod conditions;
mod config;
mod conntrack;
mod gc;
mod iptables;
mod nftables;
mod sctp;
mod tools;

use crate::harness;

use harness::{
    Netns, Outcome, Runtime, TempDir, enter_test_host, first_ip, iptables_table, merged,
    nft_ruleset, peer_netns, plugin_dir, run_in, sha512_prefix, tcp_fetch, tcp_fetch_soon,
    tcp_server, udp_fetch, udp_server,
};
use serde_json::{Value, json};
use std::os::unix::fs::PermissionsExt;
use std::process::Command;

fn nat() -> String {
    iptables_table("nat")
}

/// Whether a saved nat line is one of portmap's shared chains, their rules or
/// their jumps: the reference never removes them, nor do we.
fn is_shared(line: &str) -> bool {
    const SHARED: [&str; 3] = [
        "CNI-HOSTPORT-DNAT",
        "CNI-HOSTPORT-MASQ",
        "CNI-HOSTPORT-SETMARK",
    ];
    SHARED.iter().any(|c| {
        line.starts_with(&format!(":{c} "))
            || (["-A PREROUTING ", "-A OUTPUT ", "-A POSTROUTING "]
                .iter()
                .any(|p| line.starts_with(p))
                && line.ends_with(&format!("-j {c}")))
    }) || line.starts_with("-A CNI-HOSTPORT-MASQ ")
        || line.starts_with("-A CNI-HOSTPORT-SETMARK ")
}

/// The nat table without portmap's shared chains (which stay after the last
/// DEL): what must be as it was once every container is gone.
fn nat_but_shared() -> String {
    nat()
        .lines()
        .filter(|l| !is_shared(l))
        .collect::<Vec<_>>()
        .join("\n")
}

fn ruleset() -> String {
    nft_ruleset()
}

/// bridge (hairpin) + portmap with `portmap_extra` keys, as `pm-net`.
fn network(portmap_extra: Value) -> Runtime {
    let rt = Runtime::new("pm");
    let list = json!({
        "cniVersion": "1.0.0",
        "name": "pm-net",
        "plugins": [
            {"type": "bridge", "bridge": "cni-pm0", "isGateway": true, "hairpinMode": true,
             "ipam": {"type": "host-local", "subnet": "10.40.0.0/24", "dataDir": "@STORE@",
                      "routes": [{"dst": "0.0.0.0/0"}]}},
            merged(json!({"type": "portmap", "capabilities": {"portMappings": true}}), portmap_extra)
        ]
    });
    rt.write_list("pm.conflist", &list);
    rt
}

fn maps(list: &[(u16, u16, &str, &str)]) -> Value {
    json!({"portMappings": list.iter().map(|(h, c, p, ip)| {
        let mut m = json!({"hostPort": h, "containerPort": c, "protocol": p});
        if !ip.is_empty() { m["hostIP"] = json!(ip); }
        m
    }).collect::<Vec<_>>()})
}

/// A client namespace at 192.0.2.2 reaching the host at 192.0.2.1.
fn client() -> Netns {
    peer_netns("to-client")
}

/// A container on `net` with a TCP, a UDP and a hostIP (192.0.2.1) mapping and a
/// server behind each; returns it, its mappings and its IP.
fn mapped_container(net: &Runtime) -> (Netns, Value, String) {
    let ns = Netns::new();
    let caps = maps(&[
        (8080, 80, "tcp", ""),
        (5353, 53, "udp", ""),
        (9090, 90, "tcp", "192.0.2.1"),
    ]);
    let out = net.run(&["add", "pm-net", ns.path()], &caps).ok();
    let ip = first_ip(&out);
    tcp_server(ns.path(), 80, "hello");
    tcp_server(ns.path(), 90, "ninety");
    udp_server(ns.path(), 53, "udp-hello");
    (ns, caps, ip)
}

/// The mappings of `mapped_container` answer from the client, the host
/// (localhost and its address) and the container itself (hairpin); the hostIP
/// one only on its IP.
fn assert_reachable(client: &Netns, ns: &Netns) {
    let hello = Some("hello".to_string());
    assert_eq!(
        tcp_fetch(Some(client.path()), "192.0.2.1:8080"),
        hello,
        "client -> host port"
    );
    assert_eq!(
        udp_fetch(Some(client.path()), "192.0.2.1:5353"),
        Some("udp-hello".into()),
        "UDP"
    );
    assert_eq!(
        tcp_fetch(Some(client.path()), "192.0.2.1:9090"),
        Some("ninety".into()),
        "hostIP mapping"
    );
    assert_eq!(
        tcp_fetch(None, "127.0.0.1:8080"),
        hello,
        "host via localhost"
    );
    assert_eq!(
        tcp_fetch(None, "192.0.2.1:8080"),
        hello,
        "host via its address"
    );
    assert_eq!(
        tcp_fetch(Some(ns.path()), "192.0.2.1:8080"),
        hello,
        "hairpin"
    );
    assert_eq!(
        tcp_fetch(None, "10.40.0.1:9090"),
        None,
        "hostIP mapping only on that IP"
    );
}

/// Wrappers for the netfilter tools that log each run, then run the real tool
/// (`run_real`) or fail; returns (their dir, the log, a PATH with them first).
/// Asked for their flavour (`-V`, not logged) they answer nf_tables when `tag`
/// says `nft`, else legacy, whose state needs iptables-save.
fn logging_wrappers(tag: &str, run_real: bool) -> (TempDir, std::path::PathBuf, String) {
    let flavour = if tag.contains("nft") {
        "nf_tables"
    } else {
        "legacy"
    };
    let wrappers = TempDir::new(tag);
    let log = wrappers.0.join("execs");
    for tool in [
        "iptables-save",
        "iptables-restore",
        "ip6tables-save",
        "ip6tables-restore",
        "iptables",
        "ip6tables",
        "nft",
    ] {
        let then = if run_real {
            let real = Command::new("sh")
                .arg("-c")
                .arg(format!("command -v {tool}"))
                .output()
                .expect("which");
            format!(
                "exec {} \"$@\"",
                String::from_utf8_lossy(&real.stdout).trim()
            )
        } else {
            "exit 1".to_string()
        };
        let script = format!(
            "#!/bin/sh\n[ \"$1\" = -V ] && {{ echo '{tool} v1.8.9 ({flavour})'; exit 0; }}\n\
             echo {tool} >> '{}'\n{then}\n",
            log.display()
        );
        let path = wrappers.0.join(tool);
        std::fs::write(&path, script).expect("wrapper");
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    }
    let path = format!(
        "{}:{}",
        wrappers.0.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    (wrappers, log, path)
}

/// A portmap config called directly (no runtime): `extra` keys, the
/// container's addresses as prevResult and its mappings.
fn direct(extra: Value, addresses: &[&str], mappings: Value) -> String {
    let ips: Vec<Value> = addresses.iter().map(|a| json!({"address": a})).collect();
    merged(
        json!({"cniVersion": "1.0.0", "name": "pm-net", "type": "portmap",
               "runtimeConfig": {"portMappings": mappings["portMappings"]},
               "prevResult": {"cniVersion": "1.0.0", "ips": ips}}),
        extra,
    )
    .to_string()
}

fn call(command: &str, id: &str, conf: &str, bin: &TempDir) -> Outcome {
    harness::Call::new("portmap", command, "/run/netns/pm-none", conf)
        .set("CNI_CONTAINERID", id)
        .path(bin)
        .run()
}

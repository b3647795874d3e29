//! Bad input never panics: each case gives the spec's code, the expected message,
//! exit status 1 and a CNI error JSON on stdout.

use crate::harness;

use harness::{Call, Netns, enter_test_host};

const GOOD: &str = r#"{"cniVersion":"1.0.0","name":"net1","type":"loopback"}"#;
const DHCP_NO_DAEMON: &str = r#"{"cniVersion":"1.0.0","name":"net1","type":"macvlan","ipam":{"type":"dhcp","daemonSocketPath":"/nonexistent/dhcp.sock"}}"#;
const DHCP_NO_DAEMON_STATUS: &str = r#"{"cniVersion":"1.1.0","name":"net1","type":"macvlan","ipam":{"type":"dhcp","daemonSocketPath":"/nonexistent/dhcp.sock"}}"#;

struct Case {
    name: &'static str,
    plugin: &'static str,
    env: &'static [(&'static str, Option<&'static str>)],
    stdin: &'static str,
    code: u64,
    /// The message must start with this; `details`, when given, must equal it.
    msg: &'static str,
    details: Option<&'static str>,
}

const fn case(
    name: &'static str,
    env: &'static [(&'static str, Option<&'static str>)],
    stdin: &'static str,
    code: u64,
    msg: &'static str,
) -> Case {
    Case {
        name,
        plugin: "loopback",
        env,
        stdin,
        code,
        msg,
        details: None,
    }
}

const ADD: (&str, Option<&str>) = ("CNI_COMMAND", Some("ADD"));
const CHECK: (&str, Option<&str>) = ("CNI_COMMAND", Some("CHECK"));
const DEL: (&str, Option<&str>) = ("CNI_COMMAND", Some("DEL"));
const GC: (&str, Option<&str>) = ("CNI_COMMAND", Some("GC"));
const STATUS: (&str, Option<&str>) = ("CNI_COMMAND", Some("STATUS"));

fn cases() -> Vec<Case> {
    let mut v = vec![
        // Environment.
        case(
            "unknown command",
            &[("CNI_COMMAND", Some("FOO"))],
            GOOD,
            4,
            "unknown CNI_COMMAND: FOO",
        ),
        case(
            "lower-case command",
            &[("CNI_COMMAND", Some("add"))],
            GOOD,
            4,
            "unknown CNI_COMMAND: add",
        ),
        case(
            "ADD without attachment env",
            &[
                ADD,
                ("CNI_CONTAINERID", None),
                ("CNI_NETNS", None),
                ("CNI_IFNAME", None),
                ("CNI_PATH", None),
            ],
            GOOD,
            4,
            "required env variables [CNI_CONTAINERID,CNI_NETNS,CNI_IFNAME,CNI_PATH] missing",
        ),
        case(
            "ADD without CNI_PATH",
            &[ADD, ("CNI_PATH", None)],
            GOOD,
            4,
            "required env variables [CNI_PATH] missing",
        ),
        case(
            "ADD with empty CNI_PATH",
            &[ADD, ("CNI_PATH", Some(""))],
            GOOD,
            4,
            "required env variables [CNI_PATH] missing",
        ),
        case(
            "ADD without CNI_NETNS",
            &[ADD, ("CNI_NETNS", None)],
            GOOD,
            4,
            "required env variables [CNI_NETNS] missing",
        ),
        case(
            "ADD without CNI_IFNAME",
            &[ADD, ("CNI_IFNAME", None)],
            GOOD,
            4,
            "required env variables [CNI_IFNAME] missing",
        ),
        case(
            "DEL without CNI_CONTAINERID",
            &[DEL, ("CNI_CONTAINERID", None)],
            GOOD,
            4,
            "required env variables [CNI_CONTAINERID] missing",
        ),
        case(
            "CHECK without CNI_CONTAINERID and CNI_NETNS",
            &[CHECK, ("CNI_CONTAINERID", None), ("CNI_NETNS", None)],
            GOOD,
            4,
            "required env variables [CNI_CONTAINERID,CNI_NETNS] missing",
        ),
        case(
            "GC without CNI_PATH",
            &[GC, ("CNI_PATH", None)],
            GOOD,
            4,
            "required env variables [CNI_PATH] missing",
        ),
        case(
            "STATUS without CNI_PATH",
            &[STATUS, ("CNI_PATH", None)],
            GOOD,
            4,
            "required env variables [CNI_PATH] missing",
        ),
        // Stdin.
        case(
            "empty stdin",
            &[ADD],
            "",
            6,
            "error unmarshall network config: ",
        ),
        case(
            "truncated stdin",
            &[ADD],
            r#"{"cniVersion":"1.0.0","name":"n"#,
            6,
            "error unmarshall network config: ",
        ),
        case(
            "array stdin",
            &[ADD],
            "[]",
            6,
            "error unmarshall network config: ",
        ),
        case(
            "string stdin",
            &[ADD],
            r#""net""#,
            6,
            "error unmarshall network config: ",
        ),
        case(
            "null stdin",
            &[ADD],
            "null",
            6,
            "error unmarshall network config: ",
        ),
        case(
            "not JSON",
            &[ADD],
            "cniVersion=1.0.0",
            6,
            "error unmarshall network config: ",
        ),
        case(
            "trailing garbage",
            &[ADD],
            r#"{"name":"n"} x"#,
            6,
            "error unmarshall network config: ",
        ),
        case(
            "missing name",
            &[ADD],
            r#"{"cniVersion":"1.0.0","type":"loopback"}"#,
            7,
            "missing network name",
        ),
        case(
            "empty name",
            &[ADD],
            r#"{"cniVersion":"1.0.0","name":""}"#,
            7,
            "missing network name",
        ),
        case(
            "numeric name",
            &[ADD],
            r#"{"cniVersion":"1.0.0","name":5}"#,
            6,
            "error unmarshall network config: ",
        ),
        case(
            "numeric cniVersion",
            &[ADD],
            r#"{"cniVersion":1,"name":"n"}"#,
            6,
            "decoding version from network config",
        ),
        case(
            "capabilities not an object",
            &[ADD],
            r#"{"cniVersion":"1.0.0","name":"n","capabilities":"x"}"#,
            6,
            "failed to parse network config: ",
        ),
        case(
            "dns not an object",
            &[ADD],
            r#"{"cniVersion":"1.0.0","name":"n","dns":[1]}"#,
            6,
            "failed to parse network config: ",
        ),
        // Versions.
        case(
            "unknown cniVersion",
            &[ADD],
            r#"{"cniVersion":"9.9.9","name":"n"}"#,
            1,
            "incompatible CNI versions",
        ),
        case(
            "cniVersion between releases",
            &[ADD],
            r#"{"cniVersion":"0.5.0","name":"n"}"#,
            1,
            "incompatible CNI versions",
        ),
        case(
            "unparsable cniVersion",
            &[ADD],
            r#"{"cniVersion":"one","name":"n"}"#,
            1,
            "incompatible CNI versions",
        ),
        case(
            "short cniVersion",
            &[DEL],
            r#"{"cniVersion":"1.0","name":"n"}"#,
            1,
            "incompatible CNI versions",
        ),
        case(
            "CHECK at 0.3.1",
            &[CHECK],
            r#"{"cniVersion":"0.3.1","name":"n"}"#,
            1,
            "config version does not allow CHECK",
        ),
        case(
            "CHECK without cniVersion",
            &[CHECK],
            r#"{"name":"n"}"#,
            1,
            "config version does not allow CHECK",
        ),
        case(
            "CHECK with unparsable version",
            &[CHECK],
            r#"{"cniVersion":"x.y","name":"n"}"#,
            6,
            "failed to convert major version part",
        ),
        case(
            "GC at 1.0.0",
            &[GC],
            r#"{"cniVersion":"1.0.0","name":"n"}"#,
            1,
            "config version does not allow GC",
        ),
        case(
            "STATUS at 0.4.0",
            &[STATUS],
            r#"{"cniVersion":"0.4.0","name":"n"}"#,
            1,
            "config version does not allow STATUS",
        ),
        case(
            "CHECK at unknown later version",
            &[CHECK],
            r#"{"cniVersion":"2.0.0","name":"n"}"#,
            1,
            "incompatible CNI versions",
        ),
        // Names from input.
        case(
            "ifname of 16 chars",
            &[ADD, ("CNI_IFNAME", Some("abcdefghijklmnop"))],
            GOOD,
            4,
            "interface name is too long",
        ),
        case(
            "ifname with slash",
            &[ADD, ("CNI_IFNAME", Some("eth/0"))],
            GOOD,
            4,
            "interface name contains / or : or whitespace characters",
        ),
        case(
            "ifname with colon",
            &[DEL, ("CNI_IFNAME", Some("eth0:1"))],
            GOOD,
            4,
            "interface name contains / or : or whitespace characters",
        ),
        case(
            "ifname with space",
            &[ADD, ("CNI_IFNAME", Some("eth 0"))],
            GOOD,
            4,
            "interface name contains / or : or whitespace characters",
        ),
        case(
            "ifname dot-dot",
            &[ADD, ("CNI_IFNAME", Some(".."))],
            GOOD,
            4,
            "interface name is . or ..",
        ),
        // Previous results.
        case(
            "prevResult a string",
            &[ADD],
            r#"{"cniVersion":"1.0.0","name":"n","prevResult":"x"}"#,
            6,
            "could not parse prevResult: ",
        ),
        case(
            "prevResult of another version",
            &[ADD],
            r#"{"cniVersion":"1.0.0","name":"n","prevResult":{"cniVersion":"0.4.0"}}"#,
            6,
            "could not parse prevResult: result type supports [\"1.0.0\" \"1.1.0\"] but unmarshalled CNIVersion is \"0.4.0\"",
        ),
        case(
            "prevResult ips not a list",
            &[ADD],
            r#"{"cniVersion":"1.0.0","name":"n","prevResult":{"ips":"10.0.0.1"}}"#,
            6,
            "could not parse prevResult: ",
        ),
        case(
            "prevResult bad address",
            &[ADD],
            r#"{"cniVersion":"0.4.0","name":"n","prevResult":{"ips":[{"version":"4","address":"10.0.0.300/24"}]}}"#,
            6,
            "could not parse prevResult: ",
        ),
        case(
            "prevResult bad gateway",
            &[ADD],
            r#"{"cniVersion":"1.1.0","name":"n","prevResult":{"ips":[{"address":"10.0.0.3/24","gateway":"x"}]}}"#,
            6,
            "could not parse prevResult: ",
        ),
        case(
            "prevResult negative interface index",
            &[ADD],
            r#"{"cniVersion":"1.1.0","name":"n","prevResult":{"ips":[{"address":"10.0.0.3/24","interface":-1}]}}"#,
            6,
            "could not parse prevResult: ",
        ),
        // Namespaces.
        case(
            "netns that does not exist",
            &[ADD, ("CNI_NETNS", Some("/nonexistent/netns"))],
            GOOD,
            999,
            "netns /nonexistent/netns does not exist",
        ),
        case(
            "netns that is a plain file",
            &[ADD, ("CNI_NETNS", Some("/proc/version"))],
            GOOD,
            999,
            "/proc/version is not a network namespace",
        ),
        case(
            "netns is the plugin's own",
            &[ADD, ("CNI_NETNS", Some("/proc/self/ns/net"))],
            GOOD,
            8,
            "plugin's netns and netns from CNI_NETNS should not be the same",
        ),
        // The dhcp plugin without its daemon: try again later (11), naming the
        // socket; STATUS is 50.
        Case {
            plugin: "dhcp",
            ..case(
                "dhcp daemon not running",
                &[ADD],
                DHCP_NO_DAEMON,
                11,
                "the dhcp daemon is not reachable on /nonexistent/dhcp.sock",
            )
        },
        Case {
            plugin: "dhcp",
            ..case(
                "STATUS with the dhcp daemon not running",
                &[STATUS],
                DHCP_NO_DAEMON_STATUS,
                50,
                "the dhcp daemon is not reachable on /nonexistent/dhcp.sock",
            )
        },
        // CNI_ARGS, for a plugin that reads it (host-local reads IP).
        Case {
            plugin: "host-local",
            ..case(
                "CNI_ARGS unknown key",
                &[ADD, ("CNI_ARGS", Some("K8S_POD_NAME=x"))],
                GOOD,
                4,
                "ARGS: unknown args [\"K8S_POD_NAME=x\"]",
            )
        },
        Case {
            plugin: "host-local",
            ..case(
                "CNI_ARGS lower-case key",
                &[ADD, ("CNI_ARGS", Some("ip=10.0.0.2"))],
                GOOD,
                4,
                "ARGS: unknown args [\"ip=10.0.0.2\"]",
            )
        },
        Case {
            plugin: "host-local",
            ..case(
                "CNI_ARGS unknown with IgnoreUnknown=0",
                &[ADD, ("CNI_ARGS", Some("IgnoreUnknown=0;A=b"))],
                GOOD,
                4,
                "ARGS: unknown args [\"A=b\"]",
            )
        },
        Case {
            plugin: "host-local",
            ..case(
                "CNI_ARGS pair without =",
                &[ADD, ("CNI_ARGS", Some("IP"))],
                GOOD,
                4,
                "ARGS: invalid pair \"IP\"",
            )
        },
        Case {
            plugin: "host-local",
            ..case(
                "CNI_ARGS value with =",
                &[ADD, ("CNI_ARGS", Some("IP=a=b"))],
                GOOD,
                4,
                "ARGS: invalid pair \"IP=a=b\"",
            )
        },
        Case {
            plugin: "host-local",
            ..case(
                "CNI_ARGS trailing ;",
                &[ADD, ("CNI_ARGS", Some("IP=10.0.0.2;"))],
                GOOD,
                4,
                "ARGS: invalid pair \"\"",
            )
        },
        Case {
            plugin: "host-local",
            ..case(
                "CNI_ARGS bad IgnoreUnknown",
                &[ADD, ("CNI_ARGS", Some("IgnoreUnknown=yes"))],
                GOOD,
                4,
                "ARGS: error parsing value of pair \"IgnoreUnknown=yes\"",
            )
        },
        // With IgnoreUnknown the CNI_ARGS gate passes and the plugin itself answers.
        Case {
            plugin: "host-local",
            ..case(
                "CNI_ARGS unknown with IgnoreUnknown=1",
                &[ADD, ("CNI_ARGS", Some("K8S_POD_NAME=x;IgnoreUnknown=1"))],
                GOOD,
                7,
                "IPAM config missing 'ipam' key",
            )
        },
    ];
    v.push(Case {
        details: Some("../x"),
        ..case(
            "container ID ../x",
            &[ADD, ("CNI_CONTAINERID", Some("../x"))],
            GOOD,
            4,
            "invalid characters in containerID",
        )
    });
    v.push(Case {
        details: Some("a b"),
        ..case(
            "container ID with space",
            &[DEL, ("CNI_CONTAINERID", Some("a b"))],
            GOOD,
            4,
            "invalid characters in containerID",
        )
    });
    v.push(Case {
        details: Some("-abc"),
        ..case(
            "container ID starting with -",
            &[CHECK, ("CNI_CONTAINERID", Some("-abc"))],
            r#"{"cniVersion":"0.4.0","name":"n"}"#,
            4,
            "invalid characters in containerID",
        )
    });
    v.push(Case {
        details: Some("../etc"),
        ..case(
            "network name ../etc",
            &[ADD],
            r#"{"cniVersion":"1.0.0","name":"../etc"}"#,
            7,
            "invalid characters found in network name",
        )
    });
    v.push(Case {
        details: Some("a/b"),
        ..case(
            "network name with slash",
            &[DEL],
            r#"{"cniVersion":"1.0.0","name":"a/b"}"#,
            7,
            "invalid characters found in network name",
        )
    });
    v.push(Case {
        details: Some(
            "config is \"9.9.9\", plugin supports [\"0.1.0\" \"0.2.0\" \"0.3.0\" \"0.3.1\" \"0.4.0\" \"1.0.0\" \"1.1.0\"]",
        ),
        ..case("unknown cniVersion details", &[DEL], r#"{"cniVersion":"9.9.9","name":"n"}"#, 1, "incompatible CNI versions")
    });
    v.push(Case {
        details: Some("interface name should be less than 16 characters"),
        ..case(
            "ifname too long details",
            &[CHECK, ("CNI_IFNAME", Some("0123456789abcdefg"))],
            r#"{"cniVersion":"0.4.0","name":"n"}"#,
            4,
            "interface name is too long",
        )
    });
    v
}

#[test]
fn every_bad_input_gives_its_code_and_message() {
    enter_test_host();
    let ns = Netns::new();
    let cases = cases();
    assert!(cases.len() >= 40, "the table holds {} cases", cases.len());
    let mut failures = Vec::new();
    for c in &cases {
        let mut call = Call::new(c.plugin, "ADD", ns.path(), c.stdin);
        for (k, v) in c.env {
            call = match v {
                Some(v) => call.set(k, v),
                None => call.unset(k),
            };
        }
        let out = call.run();
        let e: serde_json::Value = serde_json::from_str(&out.stdout).unwrap_or_default();
        let msg = e["msg"].as_str().unwrap_or_default();
        let good = out.status == 1
            && e["code"].as_u64() == Some(c.code)
            && msg.starts_with(c.msg)
            && c.details.is_none_or(|d| e["details"] == d)
            && e.get("cniVersion").is_none()
            && !out.stderr.contains("panicked");
        if !good {
            failures.push(format!(
                "{}: exit {} stdout {:?} stderr {:?}",
                c.name, out.status, out.stdout, out.stderr
            ));
        }
    }
    assert!(
        failures.is_empty(),
        "{} cases failed:\n{}",
        failures.len(),
        failures.join("\n")
    );
    println!("{} bad inputs checked", cases.len());
}

#[test]
fn no_command_prints_the_about_text_and_exits_zero() {
    let out = Call::new("loopback", "ADD", "", "")
        .unset("CNI_COMMAND")
        .run();
    assert_eq!(out.status, 0);
    assert_eq!(out.stdout, "");
    assert!(
        out.stderr.starts_with("CNI loopback plugin cni-multi v"),
        "{}",
        out.stderr
    );
    assert!(out.stderr.contains(
        "CNI protocol versions supported: 0.1.0, 0.2.0, 0.3.0, 0.3.1, 0.4.0, 1.0.0, 1.1.0"
    ));
}

#[test]
fn version_ignores_stdin_and_env() {
    let mut call = Call::new("loopback", "VERSION", "", "this is not json");
    for k in ["CNI_CONTAINERID", "CNI_NETNS", "CNI_IFNAME", "CNI_PATH"] {
        call = call.unset(k);
    }
    let out = call.run();
    assert_eq!(out.status, 0);
    assert_eq!(
        out.stdout,
        "{\"cniVersion\":\"1.1.0\",\"supportedVersions\":[\"0.1.0\",\"0.2.0\",\"0.3.0\",\"0.3.1\",\"0.4.0\",\"1.0.0\",\"1.1.0\"]}\n"
    );
}

#[test]
fn gc_and_status_of_loopback_succeed_silently_at_1_1_0() {
    for cmd in ["GC", "STATUS"] {
        let out = Call::new("loopback", cmd, "", r#"{"cniVersion":"1.1.0","name":"n"}"#)
            .unset("CNI_CONTAINERID")
            .unset("CNI_NETNS")
            .unset("CNI_IFNAME")
            .run();
        assert_eq!(
            (out.status, out.stdout.as_str()),
            (0, ""),
            "{cmd}: {}",
            out.stderr
        );
    }
}

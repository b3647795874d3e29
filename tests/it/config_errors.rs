//! Config errors name what is wrong as Go's decoder and the reference do. For
//! every plugin: a wrong type, a bad address (where the plugin reads one) and a
//! missing required key (where it has one), each pinned as the runtime reads it
//! (code, message, the key's path in `details`), and, where the reference has
//! the plugin (v1.1.1 in /usr/lib/cni), the reference's message for the same
//! config beside it (docs/differences.md says where the two differ). Each
//! runs in the test's own network namespace; the delegated cases (an IPAM
//! plugin failing under bridge and ptp) do kernel work there before IPAM.

use crate::harness;

use harness::{Call, Netns, TempDir, enter_test_host, merged, plugin_dir, run_other_plugin};
use serde_json::{Value, json};
use std::path::Path;

struct Case {
    plugin: &'static str,
    what: &'static str,
    /// The plugin's keys (name and cniVersion are added).
    keys: Value,
    code: u64,
    msg: &'static str,
    /// The key the error is about (`details`: "key <path>").
    key: Option<&'static str>,
    /// The reference's message for the same config; None where it has no such
    /// plugin or fails elsewhere (a netns it opens first, a later tool).
    reference: Option<&'static str>,
}

const fn case(
    plugin: &'static str,
    what: &'static str,
    code: u64,
    msg: &'static str,
    key: Option<&'static str>,
    reference: Option<&'static str>,
) -> Case {
    Case {
        plugin,
        what,
        keys: Value::Null,
        code,
        msg,
        key,
        reference,
    }
}

fn with(keys: Value, c: Case) -> Case {
    Case { keys, ..c }
}

/// A prevResult for the chained plugins, its interface in `netns`.
fn prev(netns: &str) -> Value {
    json!({"cniVersion": "1.0.0",
        "interfaces": [{"name": "eth0", "sandbox": netns}],
        "ips": [{"address": "10.0.0.2/24", "interface": 0}]})
}

fn cases(netns: &str, store: &str) -> Vec<Case> {
    let hl = |extra: Value| merged(json!({"type": "host-local", "dataDir": store}), extra);
    let prev = prev(netns);
    vec![
        // bridge: no address key of its own (its IPAM's fails under it, named)
        // and no required key.
        with(
            json!({"isGateway": "yes"}),
            case(
                "bridge",
                "wrong type",
                6,
                "failed to load netconf: json: cannot unmarshal string into Go struct field NetConf.isGateway of type bool",
                Some("isGateway"),
                Some(
                    "failed to load netconf: json: cannot unmarshal string into Go struct field NetConf.isGateway of type bool",
                ),
            ),
        ),
        with(
            json!({"bridge": "cfgerr0", "ipam": hl(json!({"ranges": [[{"subnet": "10.300.0.0/24"}]]}))}),
            case(
                "bridge",
                "bad address, host-local failing under it",
                7,
                "plugin type=\"host-local\" failed (add): failed to load netconf: invalid CIDR address: 10.300.0.0/24",
                Some("ipam.ranges[0][0].subnet"),
                Some("invalid CIDR address: 10.300.0.0/24"),
            ),
        ),
        with(
            json!({"mtu": 1.5}),
            case(
                "bridge",
                "number that does not fit",
                6,
                "failed to load netconf: json: cannot unmarshal number 1.5 into Go struct field NetConf.mtu of type int",
                Some("mtu"),
                Some(
                    "failed to load netconf: json: cannot unmarshal number 1.5 into Go struct field NetConf.mtu of type int",
                ),
            ),
        ),
        // ptp
        with(
            json!({"ipMasq": "yes"}),
            case(
                "ptp",
                "wrong type",
                6,
                "failed to load netconf: json: cannot unmarshal string into Go struct field NetConf.ipMasq of type bool",
                Some("ipMasq"),
                Some(
                    "failed to load netconf: json: cannot unmarshal string into Go struct field NetConf.ipMasq of type bool",
                ),
            ),
        ),
        with(
            json!({"ipam": {"type": "static", "addresses": [{"address": "10.3.0.2/24", "gateway": "10.3.0.300"}]}}),
            case(
                "ptp",
                "bad address, static failing under it",
                7,
                "plugin type=\"static\" failed (add): failed to load netconf: invalid IP address: 10.3.0.300",
                Some("ipam.addresses[0].gateway"),
                Some("invalid IP address: 10.3.0.300"),
            ),
        ),
        with(
            json!({}),
            case(
                "ptp",
                "missing ipam",
                7,
                "IPAM config missing 'type' key",
                None,
                Some("no plugin name provided"),
            ),
        ),
        // macvlan: no required key (the master defaults to the default route's).
        with(
            json!({"master": 5}),
            case(
                "macvlan",
                "wrong type",
                6,
                "failed to load netconf: json: cannot unmarshal number into Go struct field NetConf.master of type string",
                Some("master"),
                Some(
                    "failed to load netconf: json: cannot unmarshal number into Go struct field NetConf.master of type string",
                ),
            ),
        ),
        with(
            json!({"master": "lo", "mac": "zz"}),
            case(
                "macvlan",
                "bad address (MAC)",
                7,
                "invalid MAC address \"zz\"",
                None,
                None,
            ),
        ),
        // ipvlan: no address, no required key.
        with(
            json!({"mode": 5}),
            case(
                "ipvlan",
                "wrong type",
                6,
                "failed to load netconf: json: cannot unmarshal number into Go struct field NetConf.mode of type string",
                Some("mode"),
                Some(
                    "failed to load netconf: json: cannot unmarshal number into Go struct field NetConf.mode of type string",
                ),
            ),
        ),
        // vlan: no address.
        with(
            json!({"master": "lo", "vlanId": "5"}),
            case(
                "vlan",
                "wrong type",
                6,
                "failed to load netconf: json: cannot unmarshal string into Go struct field NetConf.vlanId of type int",
                Some("vlanId"),
                Some(
                    "failed to load netconf: json: cannot unmarshal string into Go struct field NetConf.vlanId of type int",
                ),
            ),
        ),
        with(
            json!({"vlanId": 5}),
            case(
                "vlan",
                "missing master",
                7,
                "\"master\" field is required. It specifies the host interface name to create the VLAN for.",
                Some("master"),
                Some(
                    "\"master\" field is required. It specifies the host interface name to create the VLAN for.",
                ),
            ),
        ),
        // host-device
        with(
            json!({"device": 5}),
            case(
                "host-device",
                "wrong type",
                6,
                "failed to load netconf: json: cannot unmarshal number into Go struct field NetConf.device of type string",
                Some("device"),
                Some(
                    "failed to load netconf: json: cannot unmarshal number into Go struct field NetConf.device of type string",
                ),
            ),
        ),
        with(
            json!({"hwaddr": "zz"}),
            case(
                "host-device",
                "bad address (MAC)",
                7,
                "invalid hwaddr \"zz\"",
                None,
                None,
            ),
        ),
        with(
            json!({}),
            case(
                "host-device",
                "no device named",
                7,
                "specify either \"device\", \"hwaddr\", \"kernelpath\" or \"pciBusID\"",
                None,
                Some("specify either \"device\", \"hwaddr\", \"kernelpath\" or \"pciBusID\""),
            ),
        ),
        // loopback: only the common keys; nothing required.
        with(
            json!({"dns": 5}),
            case(
                "loopback",
                "wrong type (a common key)",
                6,
                "failed to parse network config: json: cannot unmarshal number into Go struct field NetConf.dns of type types.DNS",
                Some("dns"),
                Some(
                    "failed to parse network config: json: cannot unmarshal number into Go struct field NetConf.dns of type types.DNS",
                ),
            ),
        ),
        // dummy (no reference plugin): no keys of its own.
        with(
            json!({"dns": {"nameservers": "10.0.0.10"}}),
            case(
                "dummy",
                "wrong type (a common key)",
                6,
                "failed to parse network config: json: cannot unmarshal string into Go struct field DNS.dns.nameservers of type []string",
                Some("dns.nameservers"),
                None,
            ),
        ),
        with(
            json!({}),
            case(
                "dummy",
                "missing ipam",
                7,
                "IPAM config missing 'type' key: dummy needs IPAM",
                None,
                None,
            ),
        ),
        // tap (no reference plugin): nothing required.
        with(
            json!({"mtu": "x"}),
            case(
                "tap",
                "wrong type",
                6,
                "failed to load netconf: json: cannot unmarshal string into Go struct field NetConf.mtu of type int",
                Some("mtu"),
                None,
            ),
        ),
        with(
            json!({"mac": "zz"}),
            case(
                "tap",
                "bad address (MAC)",
                7,
                "invalid MAC address \"zz\"",
                None,
                None,
            ),
        ),
        // host-local
        with(
            json!({"ipam": hl(json!({"ranges": [[{"subnet": 5}]]}))}),
            case(
                "host-local",
                "wrong type",
                6,
                "failed to load netconf: json: cannot unmarshal number into Go struct field Range.ipam.ranges.subnet of type string",
                Some("ipam.ranges[0][0].subnet"),
                Some(
                    "json: cannot unmarshal number into Go struct field Range.ipam.ranges.subnet of type string",
                ),
            ),
        ),
        with(
            json!({"ipam": hl(json!({"ranges": [[{"subnet": "10.0.0.0/24"}], [[1]]]}))}),
            case(
                "host-local",
                "wrong type (array for a range)",
                6,
                "failed to load netconf: json: cannot unmarshal array into Go struct field IPAMConfig.ipam.ranges of type allocator.Range",
                Some("ipam.ranges[1][0]"),
                Some(
                    "json: cannot unmarshal array into Go struct field IPAMConfig.ipam.ranges of type allocator.Range",
                ),
            ),
        ),
        with(
            json!({"ipam": hl(json!({"subnet": "10.300.0.0/24"}))}),
            case(
                "host-local",
                "bad address",
                7,
                "failed to load netconf: invalid CIDR address: 10.300.0.0/24",
                Some("ipam.subnet"),
                Some("invalid CIDR address: 10.300.0.0/24"),
            ),
        ),
        with(
            json!({"ipam": hl(json!({"ranges": [[{"subnet": "10.0.0.0/24", "rangeStart": "10.0.0.300"}]]}))}),
            case(
                "host-local",
                "bad address (IP)",
                7,
                "failed to load netconf: invalid IP address: 10.0.0.300",
                Some("ipam.ranges[0][0].rangeStart"),
                Some("invalid IP address: 10.0.0.300"),
            ),
        ),
        with(
            json!({}),
            case(
                "host-local",
                "missing ipam",
                7,
                "IPAM config missing 'ipam' key",
                None,
                Some("IPAM config missing 'ipam' key"),
            ),
        ),
        with(
            json!({"ipam": hl(json!({"ranges": [[{"rangeStart": "10.0.0.2"}]]}))}),
            case(
                "host-local",
                "missing subnet",
                6,
                "failed to load netconf: missing required key \"subnet\"",
                Some("ipam.ranges[0][0].subnet"),
                Some("invalid range set 0: IP <nil> not v4 nor v6"),
            ),
        ),
        // static
        with(
            json!({"ipam": {"type": "static", "addresses": [{"address": 5}]}}),
            case(
                "static",
                "wrong type",
                6,
                "failed to load netconf: json: cannot unmarshal number into Go struct field Address.ipam.addresses.address of type string",
                Some("ipam.addresses[0].address"),
                Some(
                    "json: cannot unmarshal number into Go struct field Address.ipam.addresses.address of type string",
                ),
            ),
        ),
        with(
            json!({"ipam": {"type": "static", "addresses": [{"address": "10.300.0.1/24"}]}}),
            case(
                "static",
                "bad address",
                7,
                "the 'address' field is expected to be in CIDR notation, got: '10.300.0.1/24'",
                Some("ipam.addresses[0].address"),
                Some(
                    "the 'address' field is expected to be in CIDR notation, got: '10.300.0.1/24'",
                ),
            ),
        ),
        with(
            json!({}),
            case(
                "static",
                "missing ipam",
                7,
                "IPAM config missing 'ipam' key",
                None,
                Some("IPAM config missing 'ipam' key"),
            ),
        ),
        // dhcp: no address key, nothing required (the daemon's socket has a default).
        with(
            json!({"ipam": {"type": "dhcp", "daemonSocketPath": 5}}),
            case(
                "dhcp",
                "wrong type",
                6,
                "failed to load netconf: json: cannot unmarshal number into Go struct field IPAMConfig.ipam.daemonSocketPath of type string",
                Some("ipam.daemonSocketPath"),
                Some(
                    "error obtaining socketPath: error parsing socket path conf: json: cannot unmarshal number into Go struct field IPAMConfig.ipam.daemonSocketPath of type string",
                ),
            ),
        ),
        // portmap
        with(
            json!({"snat": "yes", "prevResult": prev}),
            case(
                "portmap",
                "wrong type",
                6,
                "failed to load netconf: json: cannot unmarshal string into Go struct field PortMapConf.snat of type bool",
                Some("snat"),
                Some(
                    "failed to parse config: failed to parse network configuration: json: cannot unmarshal string into Go struct field PortMapConf.snat of type bool",
                ),
            ),
        ),
        with(
            json!({"runtimeConfig": {"portMappings": [{"hostPort": "80", "containerPort": 80}]}, "prevResult": prev}),
            case(
                "portmap",
                "wrong type (a capability)",
                6,
                "failed to parse runtimeConfig.portMappings: json: cannot unmarshal string into Go struct field PortMapEntry.runtimeConfig.portMappings.hostPort of type int",
                Some("runtimeConfig.portMappings[0].hostPort"),
                Some(
                    "failed to parse config: failed to parse network configuration: json: cannot unmarshal string into Go struct field PortMapEntry.runtimeConfig.portMappings.hostPort of type int",
                ),
            ),
        ),
        with(
            json!({"runtimeConfig": {"portMappings": [{"hostPort": 80, "containerPort": 80, "hostIP": "1.2.3.300"}]}, "prevResult": prev}),
            case(
                "portmap",
                "bad address",
                7,
                "Invalid host IP \"1.2.3.300\"",
                None,
                None,
            ),
        ),
        with(
            json!({"runtimeConfig": {"portMappings": [{"hostPort": 80, "containerPort": 80}]}}),
            case(
                "portmap",
                "missing prevResult",
                7,
                "must be called as chained plugin",
                None,
                Some("must be called as chained plugin"),
            ),
        ),
        // bandwidth
        with(
            json!({"ingressRate": "x", "prevResult": prev}),
            case(
                "bandwidth",
                "wrong type",
                6,
                "failed to load netconf: json: cannot unmarshal string into Go struct field PluginConf.ingressRate of type uint64",
                Some("ingressRate"),
                Some(
                    "failed to parse network configuration: json: cannot unmarshal string into Go struct field PluginConf.ingressRate of type uint64",
                ),
            ),
        ),
        with(
            json!({"ingressRate": 8000, "ingressBurst": 8000, "shapedSubnets": ["10.300.0.0/24"], "prevResult": prev}),
            case(
                "bandwidth",
                "bad address",
                7,
                "invalid subnet \"10.300.0.0/24\"",
                None,
                None,
            ),
        ),
        with(
            json!({"ingressRate": 1000, "prevResult": prev}),
            case(
                "bandwidth",
                "missing burst",
                7,
                "if rate is set, burst must also be set",
                None,
                Some("if rate is set, burst must also be set"),
            ),
        ),
        // tuning: nothing required.
        with(
            json!({"sysctl": 5, "prevResult": prev}),
            case(
                "tuning",
                "wrong type",
                6,
                "failed to load netconf: json: cannot unmarshal number into Go struct field TuningConf.sysctl of type map[string]string",
                Some("sysctl"),
                Some(
                    "failed to load netconf: json: cannot unmarshal number into Go struct field TuningConf.sysctl of type map[string]string",
                ),
            ),
        ),
        with(
            json!({"mac": "zz", "prevResult": prev}),
            case(
                "tuning",
                "bad address (MAC)",
                7,
                "invalid MAC address \"zz\"",
                None,
                None,
            ),
        ),
        // firewall: no address key.
        with(
            json!({"backend": 5, "prevResult": prev}),
            case(
                "firewall",
                "wrong type",
                6,
                "failed to load netconf: json: cannot unmarshal number into Go struct field FirewallNetConf.backend of type string",
                Some("backend"),
                Some(
                    "failed to load netconf: json: cannot unmarshal number into Go struct field FirewallNetConf.backend of type string",
                ),
            ),
        ),
        with(
            json!({}),
            case(
                "firewall",
                "missing prevResult",
                7,
                "missing prevResult from earlier plugin",
                None,
                Some("missing prevResult from earlier plugin"),
            ),
        ),
        // sbr (`table` and `gateways` are newer than the reference's release).
        with(
            json!({"table": "x", "prevResult": prev}),
            case(
                "sbr",
                "wrong type",
                6,
                "failed to load netconf: json: cannot unmarshal string into Go struct field NetConf.table of type uint32",
                Some("table"),
                None,
            ),
        ),
        with(
            json!({"gateways": ["10.0.0.300"], "prevResult": prev}),
            case(
                "sbr",
                "bad address",
                7,
                "invalid static gateway IP address: 10.0.0.300",
                None,
                None,
            ),
        ),
        with(
            json!({}),
            case(
                "sbr",
                "missing prevResult",
                7,
                "This plugin must be called as chained plugin",
                None,
                Some("This plugin must be called as chained plugin"),
            ),
        ),
        // mptcp (no reference plugin): nothing required.
        with(
            json!({"endpoints": "x", "prevResult": prev}),
            case(
                "mptcp",
                "wrong type",
                6,
                "failed to load netconf: json: cannot unmarshal string into Go struct field NetConf.endpoints of type []Endpoint",
                Some("endpoints"),
                None,
            ),
        ),
        with(
            json!({"endpoints": [{"address": "10.0.0.300"}], "prevResult": prev}),
            case(
                "mptcp",
                "bad address",
                7,
                "mptcp: invalid endpoint address \"10.0.0.300\"",
                None,
                None,
            ),
        ),
        // vrf: no address key.
        with(
            json!({"vrfname": 5, "prevResult": prev}),
            case(
                "vrf",
                "wrong type",
                6,
                "failed to load netconf: json: cannot unmarshal number into Go struct field VRFNetConf.vrfname of type string",
                Some("vrfname"),
                Some(
                    "failed to load netconf: json: cannot unmarshal number into Go struct field VRFNetConf.vrfname of type string",
                ),
            ),
        ),
        with(
            json!({"prevResult": prev}),
            case(
                "vrf",
                "missing vrfname",
                7,
                "configuration is expected to have a valid vrf name",
                Some("vrfname"),
                Some("configuration is expected to have a valid vrf name"),
            ),
        ),
        // flannel (the reference's is flannel's own): no address key; what it
        // needs is subnet.env, the node's.
        with(
            json!({"subnetFile": 5}),
            case(
                "flannel",
                "wrong type",
                6,
                "failed to load netconf: json: cannot unmarshal number into Go struct field NetConf.subnetFile of type string",
                Some("subnetFile"),
                None,
            ),
        ),
        // multus (the reference's is Multus's own): no address key.
        with(
            json!({"confDir": 5}),
            case(
                "multus",
                "wrong type",
                6,
                "failed to load netconf: json: cannot unmarshal number into Go struct field NetConf.confDir of type string",
                Some("confDir"),
                None,
            ),
        ),
        with(
            json!({}),
            case(
                "multus",
                "no delegates",
                7,
                "at least one delegate/clusterNetwork must be specified",
                None,
                None,
            ),
        ),
    ]
}

/// The config a case's plugin gets.
fn conf(c: &Case) -> String {
    merged(
        json!({"cniVersion": "1.0.0", "name": "cfgerr", "type": c.plugin}),
        c.keys.clone(),
    )
    .to_string()
}

#[test]
fn every_plugin_names_a_wrong_type_a_bad_address_and_a_missing_key() {
    enter_test_host();
    let bin = plugin_dir();
    let store = TempDir::new("cfgerr-store");
    let ns = Netns::new();
    let mut failures = Vec::new();
    for c in cases(ns.path(), &store.0.to_string_lossy()) {
        let stdin = conf(&c);
        let out = Call::new(c.plugin, "ADD", ns.path(), &stdin)
            .path(&bin)
            .run();
        let e: Value = serde_json::from_str(&out.stdout).unwrap_or(Value::Null);
        let got = (
            out.status,
            e["code"].as_u64(),
            e["msg"].as_str().unwrap_or_default(),
            e["details"].as_str().unwrap_or_default(),
        );
        let details = c.key.map(|k| format!("key {k}")).unwrap_or_default();
        if got != (1, Some(c.code), c.msg, details.as_str()) {
            failures.push(format!(
                "{} ({}): got {got:?}\n  stderr {}\n  want {:?}",
                c.plugin,
                c.what,
                out.stderr,
                (1, c.code, c.msg, details)
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// The reference's messages beside ours are the reference's: run it on the
/// same configs (each in a fresh namespace of the test's: the reference's
/// bridge makes its bridge before it looks at IPAM).
#[test]
fn the_reference_says_what_the_table_says_it_does() {
    enter_test_host();
    let store = TempDir::new("cfgerr-ref-store");
    let ns = Netns::new();
    let mut failures = Vec::new();
    for c in cases(ns.path(), &store.0.to_string_lossy()) {
        let Some(want) = c.reference else {
            continue;
        };
        let binary = format!("/usr/lib/cni/{}", c.plugin);
        assert!(
            Path::new(&binary).exists(),
            "{binary} missing: install containernetworking-plugins (tests/install-deps.sh)"
        );
        let out = run_other_plugin(&binary, "ADD", "ctr-1", ns.path(), &conf(&c));
        let e: Value = serde_json::from_slice(&out.stdout).unwrap_or(Value::Null);
        if out.status.success() || e["msg"].as_str() != Some(want) {
            failures.push(format!(
                "{} ({}): reference said {:?} (exit {:?}), the table {want:?}",
                c.plugin,
                c.what,
                String::from_utf8_lossy(&out.stdout),
                out.status.code()
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

//! `cnitool validate` checks the configs themselves: on `testdata/broken/` (a
//! wrong type, an address that does not parse, an IPAM plugin that is not
//! there, misspelled keys, a missing required key, a range outside its subnet,
//! two files with one network name) it names each problem with its plugin and
//! key, as text and as JSON, and exits 1; warnings alone exit 0, and so does
//! a directory of good configs (`testdata/`).

use crate::harness;

use harness::{Runtime, enter_test_host};
use serde_json::{Value, json};

const BROKEN: &str = "testdata/broken";

fn validate(rt: &Runtime, args: &[&str]) -> harness::Outcome {
    let mut all = vec!["validate"];
    all.extend_from_slice(args);
    rt.run(&all, &json!({}))
}

#[test]
fn broken_configs_are_named_with_their_plugin_and_key() {
    enter_test_host();
    let rt = Runtime::new("validate-text");
    let out = validate(&rt, &["--conf-dir", BROKEN]);
    assert_eq!(out.status, 1, "{out:?}");
    assert!(out.stdout.is_empty(), "{out:?}");
    let text = out.stderr;
    assert!(
        text.starts_with("cnitool: 8 networks checked: 5 errors, 5 warnings:\n"),
        "{text}"
    );
    for line in [
        "wrong-type (testdata/broken/10-wrong-type.conflist):",
        "FAIL\tbridge\tisGateway: failed to load netconf: json: cannot unmarshal string into Go struct field NetConf.isGateway of type bool",
        "FAIL\thost-local\tipam.ranges[0][0].subnet: failed to load netconf: invalid CIDR address: 10.300.0.0/24",
        "FAIL\tbridge\tipam.type: the IPAM plugin \"host-lokal\" is not there: failed to find plugin \"host-lokal\" in path [",
        "WARN\t-\tdisableChek: unknown key: libcni does not read it (did you mean \"disableCheck\"?)",
        "WARN\tbridge\tbridgee: unknown key: bridge does not read it (did you mean \"bridge\"?)",
        "WARN\tbridge\tisGatway: unknown key: bridge does not read it (did you mean \"isGateway\"?)",
        "WARN\thost-local\tipam.gatewy: unknown key: host-local does not read it (did you mean \"gateway\"?)",
        "FAIL\tvlan\tmaster: \"master\" field is required. It specifies the host interface name to create the VLAN for.",
        "FAIL\thost-local\tinvalid range set 0: RangeStart 10.28.0.10 not in network 10.27.0.0/24",
        "WARN\t-\tname: network \"twice\" is also in testdata/broken/20-twice.conflist, which wins (libcni takes the first): this file is never used",
        "ok\tbridge\tsupports 1.0.0",
        "ok\thost-local\tsupports 1.0.0 (IPAM of bridge)",
    ] {
        assert!(
            text.lines().any(|l| l.starts_with(line)),
            "no line {line:?} in:\n{text}"
        );
    }
}

#[test]
fn broken_configs_as_json() {
    enter_test_host();
    let rt = Runtime::new("validate-json");
    let out = validate(&rt, &["--conf-dir", BROKEN, "--json"]);
    assert_eq!(out.status, 1, "{out:?}");
    let v: Value = serde_json::from_str(&out.stdout).expect("JSON");
    assert_eq!(
        (v["errors"].as_u64(), v["warnings"].as_u64()),
        (Some(5), Some(5))
    );
    let mut found: Vec<String> = Vec::new();
    for n in v["networks"].as_array().expect("networks") {
        for f in n["findings"].as_array().expect("findings") {
            found.push(format!(
                "{} {} {} {} {}",
                n["name"].as_str().unwrap_or_default(),
                f["level"].as_str().unwrap_or_default(),
                f["plugin"].as_str().unwrap_or("-"),
                f["key"].as_str().unwrap_or("-"),
                f["suggestion"].as_str().unwrap_or("-"),
            ));
        }
    }
    found.sort();
    assert_eq!(
        found,
        [
            "bad-address error host-local ipam.ranges[0][0].subnet -",
            "bad-range error host-local - -",
            "missing-key error vlan master -",
            "misspelled warning - disableChek disableCheck",
            "misspelled warning bridge bridgee bridge",
            "misspelled warning bridge isGatway isGateway",
            "misspelled warning host-local ipam.gatewy gateway",
            "no-ipam-plugin error bridge ipam.type -",
            "twice warning - name -",
            "wrong-type error bridge isGateway -",
        ]
    );
    let twice: Vec<&Value> = v["networks"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|n| n["name"] == "twice")
        .collect();
    assert_eq!(twice.len(), 2);
    assert_eq!(twice[0]["file"], "testdata/broken/20-twice.conflist");
    assert!(twice[0].get("shadowedBy").is_none());
    assert_eq!(twice[1]["shadowedBy"], "testdata/broken/20-twice.conflist");
    let wrong = v["networks"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|n| n["name"] == "wrong-type")
        .expect("wrong-type");
    assert_eq!(
        wrong["findings"][0]["message"],
        "failed to load netconf: json: cannot unmarshal string into Go struct field NetConf.isGateway of type bool"
    );
    assert_eq!(wrong["plugins"][0]["type"], "bridge");
    assert_eq!(wrong["plugins"][0]["keysChecked"], true);
    assert_eq!(wrong["plugins"][0]["ipam"]["type"], "host-local");
}

#[test]
fn warnings_alone_exit_zero_and_names_pick_networks() {
    enter_test_host();
    let rt = Runtime::new("validate-warn");
    let out = validate(&rt, &["--conf-dir", BROKEN, "misspelled", "twice"]);
    assert_eq!(out.status, 0, "{out:?}");
    assert!(
        out.stdout
            .contains("WARN\tbridge\tbridgee: unknown key: bridge does not read it"),
        "{out:?}"
    );
    assert!(!out.stdout.contains("wrong-type"), "{out:?}");
    assert!(
        out.stdout
            .ends_with("3 networks checked: 0 errors, 5 warnings\n"),
        "{out:?}"
    );
    let out = validate(&rt, &["--conf-dir", BROKEN, "no-such-net"]);
    assert_eq!(out.status, 1, "{out:?}");
    assert!(
        out.stderr
            .contains("no net configuration with name \"no-such-net\""),
        "{out:?}"
    );
}

#[test]
fn good_configs_exit_zero() {
    enter_test_host();
    let rt = Runtime::new("validate-good");
    let out = validate(&rt, &["--conf-dir", "testdata"]);
    assert_eq!(out.status, 0, "{out:?}");
    assert!(
        out.stdout
            .ends_with("7 networks checked: 0 errors, 0 warnings\n"),
        "{out:?}"
    );
    let out = validate(&rt, &["--conf-dir", "testdata", "--json"]);
    assert_eq!(out.status, 0, "{out:?}");
    let v: Value = serde_json::from_str(&out.stdout).expect("JSON");
    assert_eq!(
        (v["errors"].as_u64(), v["warnings"].as_u64()),
        (Some(0), Some(0))
    );
    assert_eq!(v["networks"].as_array().map(Vec::len), Some(7));
}

/// flannel's `delegate` is checked as its plugin reads it: a misspelled key
/// there (which bridge would ignore) is named `delegate.<key>` with bridge's
/// nearest key, and a wrong type is bridge's error; the IPAM keys flannel
/// passes on are host-local's. A good delegate gives nothing.
#[test]
fn flannels_delegate_is_checked_as_its_plugin_reads_it() {
    enter_test_host();
    let rt = Runtime::new("validate-flannel");
    let flannel = |delegate: Value| {
        json!({"cniVersion": "1.0.0", "name": "cbr0", "plugins": [
            {"type": "flannel", "delegate": delegate,
             "ipam": {"routes": [{"dst": "10.0.0.0/8"}], "gatewy": "x"}}]})
    };
    rt.write_list(
        "10-flannel.conflist",
        &flannel(json!({"hairpinMode": true, "isDefaultGatway": true})),
    );
    let out = validate(&rt, &[]);
    assert_eq!(out.status, 0, "{out:?}");
    for line in [
        "WARN\tbridge\tdelegate.isDefaultGatway: unknown key: bridge does not read it (did you mean \"isDefaultGateway\"?)",
        "WARN\thost-local\tipam.gatewy: unknown key: host-local does not read it (did you mean \"gateway\"?)",
    ] {
        assert!(
            out.stdout.lines().any(|l| l.starts_with(line)),
            "no line {line:?} in {out:?}"
        );
    }
    assert!(
        out.stdout
            .ends_with("1 network checked: 0 errors, 2 warnings\n"),
        "{out:?}"
    );
    rt.write_list(
        "10-flannel.conflist",
        &flannel(json!({"hairpinMode": "yes"})),
    );
    let out = validate(&rt, &[]);
    assert_eq!(out.status, 1, "{out:?}");
    assert!(
        out.stderr.contains(
            "FAIL\tbridge\tdelegate.hairpinMode: failed to load netconf: json: cannot unmarshal string"
        ),
        "{out:?}"
    );
    let good = json!({"cniVersion": "1.0.0", "name": "cbr0", "plugins": [
        {"type": "flannel", "delegate": {"hairpinMode": true, "isDefaultGateway": true}}]});
    rt.write_list("10-flannel.conflist", &good);
    let out = validate(&rt, &[]);
    assert_eq!(out.status, 0, "{out:?}");
    assert!(
        out.stdout
            .ends_with("1 network checked: 0 errors, 0 warnings\n"),
        "{out:?}"
    );
}

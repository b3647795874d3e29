use super::*;
use crate::cnitool::doctor::engine::Named;
use serde_json::Value;

fn finding(kind: &'static str, action: &str, fixed: bool) -> Finding {
    let mut f = Finding::new(
        kind,
        &Named::new("net", "c1", "eth0"),
        "/x/10.0.0.2",
        action,
    );
    f.fixed = fixed;
    f
}

#[test]
fn findings_as_json() {
    assert_eq!(
        serde_json::from_str::<Value>(&to_json(&[])).expect("json"),
        serde_json::json!({"findings": []})
    );
    let v: Value = serde_json::from_str(&to_json(&[finding("ipam", "remove reservation", true)]))
        .expect("json");
    assert_eq!(
        v,
        serde_json::json!({"findings": [{
            "kind": "ipam", "network": "net", "containerId": "c1", "ifname": "eth0",
            "object": "/x/10.0.0.2", "action": "remove reservation", "fixed": true
        }]})
    );
}

#[test]
fn the_table_aligns_columns() {
    assert_eq!(table(&[]), "no stale CNI state found");
    let mut long = finding("cache", "DEL with the cached config", false);
    long.network = "a-longer-net".into();
    let t = table(&[finding("ipam", "remove reservation", true), long]);
    let lines: Vec<&str> = t.lines().collect();
    assert_eq!(lines.len(), 3);
    assert!(
        lines[0].starts_with("KIND   NETWORK       CONTAINER"),
        "{t}"
    );
    assert!(lines[1].starts_with("ipam   net           c1"), "{t}");
    assert!(lines[1].ends_with("remove reservation          yes"), "{t}");
    assert!(lines[2].ends_with("DEL with the cached config  no"), "{t}");
}

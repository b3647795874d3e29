//! The doctor's output: a table for people, `{"findings": [...]}` for tools.

use super::Finding;

pub fn to_json(findings: &[Finding]) -> String {
    let v = serde_json::json!({ "findings": findings });
    serde_json::to_string_pretty(&v).unwrap_or_else(|_| r#"{"findings": []}"#.into())
}

/// Columns padded to their widest cell.
pub fn table(findings: &[Finding]) -> String {
    if findings.is_empty() {
        return "no stale CNI state found".into();
    }
    let head = [
        "KIND",
        "NETWORK",
        "CONTAINER",
        "IFNAME",
        "OBJECT",
        "ACTION",
        "FIXED",
    ];
    let rows = findings.iter().map(|f| {
        let fixed = if f.fixed { "yes" } else { "no" };
        [
            f.kind,
            &f.network,
            &f.container_id,
            &f.ifname,
            &f.object,
            &f.action,
            fixed,
        ]
    });
    let rows: Vec<[&str; 7]> = std::iter::once(head).chain(rows).collect();
    columns(&rows)
}

/// Rows of cells as columns padded to their widest cell, two spaces apart
/// (the doctor's table and `cnitool ls`).
pub fn columns<R: AsRef<[S]>, S: AsRef<str>>(rows: &[R]) -> String {
    let n = rows.iter().map(|r| r.as_ref().len()).max().unwrap_or(0);
    let widths: Vec<usize> = (0..n)
        .map(|c| {
            rows.iter()
                .filter_map(|r| r.as_ref().get(c))
                .map(|cell| cell.as_ref().chars().count())
                .max()
                .unwrap_or(0)
        })
        .collect();
    rows.iter()
        .map(|r| {
            let cells: Vec<String> = r
                .as_ref()
                .iter()
                .zip(&widths)
                .map(|(c, w)| format!("{:w$}", c.as_ref()))
                .collect();
            cells.join("  ").trim_end().to_string()
        })
        .collect::<Vec<_>>()
        .join("\n")
}

#[cfg(test)]
mod tests {
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
        let v: Value =
            serde_json::from_str(&to_json(&[finding("ipam", "remove reservation", true)]))
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
}

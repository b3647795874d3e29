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
#[path = "report_tests.rs"]
mod tests;

//! How the tree's checks read a source file: which files hold tests only,
//! and a production file's text without its test items. Shared by
//! `src/layering_tests.rs` and `tests/it/house.rs`, so both read the same code.

/// Whether a file under src/ holds tests only (`tests.rs`, `<file>_tests.rs`).
pub fn is_test_file(name: &str) -> bool {
    let base = name.rsplit('/').next().unwrap_or(name);
    base == "tests.rs" || base.ends_with("_tests.rs")
}

/// A production file's text without its `#[cfg(test)]` items (the test
/// module's declaration, a test-only helper), each blanked from the attribute
/// to the end of its item (its `;`, or the brace closing it at its own
/// indentation), so that what follows one is still read and line numbers hold.
pub fn without_test_items(text: &str) -> String {
    let lines: Vec<&str> = text.lines().collect();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    while i < lines.len() {
        if lines[i].trim() != "#[cfg(test)]" {
            out.push_str(lines[i]);
            out.push('\n');
            i += 1;
            continue;
        }
        let mut item = i + 1;
        while lines
            .get(item)
            .is_some_and(|l| l.trim_start().starts_with("#[") || l.trim_start().starts_with("///"))
        {
            item += 1;
        }
        let end = match lines.get(item) {
            None => lines.len() - 1,
            Some(l) if l.trim_end().ends_with(';') || l.trim_end().ends_with('}') => item,
            Some(l) => {
                let indent = l.len() - l.trim_start().len();
                lines[item..]
                    .iter()
                    .position(|c| {
                        c.len() - c.trim_start().len() == indent && matches!(c.trim(), "}" | "};")
                    })
                    .map_or(lines.len() - 1, |k| item + k)
            }
        };
        out.push_str(&"\n".repeat(end + 1 - i));
        i = end + 1;
    }
    out
}

//! The house rules a reader relies on, checked: no source file over 700
//! lines, and every plugin verb (ADD, DEL, CHECK, GC, STATUS) short enough to
//! read as a list of named steps.

use std::path::{Path, PathBuf};

const MAX_FILE_LINES: usize = 700;
const MAX_VERB_LINES: usize = 60;
const VERBS: [&str; 5] = ["add", "del", "check", "gc", "status"];

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .expect("read src")
        .flatten()
        .map(|e| e.path())
        .collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

fn src(sub: &str) -> Vec<PathBuf> {
    let mut files = Vec::new();
    rust_files(&Path::new(env!("CARGO_MANIFEST_DIR")).join(sub), &mut files);
    files
}

/// The verb a line declares (`fn add(`, `pub fn del<…>(`), if any.
fn declared_verb(line: &str) -> Option<&'static str> {
    let rest = line.trim_start();
    let rest = rest.strip_prefix("pub(crate) ").unwrap_or(rest);
    let rest = rest.strip_prefix("pub ").unwrap_or(rest);
    let rest = rest.strip_prefix("fn ")?;
    VERBS
        .into_iter()
        .find(|v| rest.starts_with(v) && rest[v.len()..].starts_with(['(', '<']))
}

/// Each verb function of a file, as (verb, first line, lines long): from its
/// `fn` line to the closing brace at the same indentation.
fn verbs(text: &str) -> Vec<(&'static str, usize, usize)> {
    let lines: Vec<&str> = text.lines().collect();
    let mut found = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        let Some(verb) = declared_verb(line) else {
            continue;
        };
        let indent = line.len() - line.trim_start().len();
        let close = format!("{}}}", " ".repeat(indent));
        if let Some(end) = lines[i..].iter().position(|l| *l == close) {
            found.push((verb, i + 1, end + 1));
        }
    }
    found
}

#[test]
fn no_source_file_is_over_700_lines() {
    let long: Vec<String> = src("src")
        .into_iter()
        .filter_map(|p| {
            let n = std::fs::read_to_string(&p).expect("read").lines().count();
            (n > MAX_FILE_LINES).then(|| format!("{}: {n} lines", p.display()))
        })
        .collect();
    assert!(
        long.is_empty(),
        "over {MAX_FILE_LINES} lines:\n{}",
        long.join("\n")
    );
}

#[test]
fn every_plugin_verb_is_at_most_60_lines() {
    let mut seen = 0;
    let mut long = Vec::new();
    for p in src("src/plugins") {
        let text = std::fs::read_to_string(&p).expect("read");
        for (verb, at, n) in verbs(&text) {
            seen += 1;
            if n > MAX_VERB_LINES {
                long.push(format!("{}:{at}: fn {verb}: {n} lines", p.display()));
            }
        }
    }
    // The measure finds the verbs: every plugin has at least ADD and DEL.
    assert!(seen > 60, "only {seen} verb functions found");
    assert!(
        long.is_empty(),
        "over {MAX_VERB_LINES} lines:\n{}",
        long.join("\n")
    );
}

#[test]
fn the_verb_measure_counts_a_function_to_its_closing_brace() {
    let text = "impl X {\n    fn add(&self) {\n        one();\n        two();\n    }\n    pub fn delete() {}\n}\n";
    assert_eq!(verbs(text), vec![("add", 2, 4)]);
}

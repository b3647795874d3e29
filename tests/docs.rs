//! The documentation tells the truth about the tree: every repository path it
//! names in backticks, and every link between its files, exists; the README
//! stays a front door (at most 12 KB); no issue numbers.

use std::path::{Path, PathBuf};

const ROOTS: [&str; 8] = [
    "src/",
    "tests/",
    "testdata/",
    "bench/",
    "contrib/",
    "fuzz/",
    "docs/",
    ".ci/",
];

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn docs() -> Vec<PathBuf> {
    let mut files = vec![root().join("README.md")];
    let mut more: Vec<PathBuf> = std::fs::read_dir(root().join("docs"))
        .expect("docs/")
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "md"))
        .collect();
    more.sort();
    files.extend(more);
    files
}

/// The backticked spans of a markdown text.
fn code_spans(text: &str) -> Vec<&str> {
    text.split('`').skip(1).step_by(2).collect()
}

/// A span that names a path of this repository, without placeholders.
fn repo_path(span: &str) -> Option<&str> {
    let span = span.split_whitespace().next()?;
    let span = span.trim_end_matches([',', '.', ':', ';', ')']);
    let placeholder = span.contains(['<', '*', '…', '$', '{']);
    (ROOTS.iter().any(|r| span.starts_with(r)) && !placeholder).then_some(span)
}

#[test]
fn every_path_the_docs_name_exists() {
    let mut missing = Vec::new();
    for doc in docs() {
        let text = std::fs::read_to_string(&doc).expect("doc");
        for span in code_spans(&text) {
            if let Some(path) = repo_path(span)
                && !root().join(path).exists()
            {
                missing.push(format!("{}: `{path}`", doc.display()));
            }
        }
    }
    assert!(
        missing.is_empty(),
        "named but absent:\n{}",
        missing.join("\n")
    );
}

#[test]
fn every_link_between_the_docs_resolves() {
    let mut broken = Vec::new();
    for doc in docs() {
        let text = std::fs::read_to_string(&doc).expect("doc");
        let dir = doc.parent().unwrap_or(Path::new("."));
        for link in text.split("](").skip(1) {
            let target = link.split(')').next().unwrap_or_default();
            let file = target.split('#').next().unwrap_or_default();
            if file.is_empty() || file.contains("://") {
                continue;
            }
            if !dir.join(file).exists() {
                broken.push(format!("{}: ({target})", doc.display()));
            }
        }
    }
    assert!(broken.is_empty(), "broken links:\n{}", broken.join("\n"));
}

#[test]
fn the_readme_is_a_front_door_and_no_doc_names_an_issue() {
    let readme = std::fs::read_to_string(root().join("README.md")).expect("README");
    assert!(
        readme.len() <= 12 * 1024,
        "README is {} bytes",
        readme.len()
    );
    for doc in docs() {
        let text = std::fs::read_to_string(&doc).expect("doc").to_lowercase();
        for (i, _) in text.match_indices("issue ") {
            let next = text[i + 6..].chars().next().unwrap_or(' ');
            assert!(
                !next.is_ascii_digit() && next != '#',
                "{} names an issue: {}",
                doc.display(),
                &text[i..(i + 20).min(text.len())]
            );
        }
    }
}

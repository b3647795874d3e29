//! The documentation tells the truth about the tree: every repository path it
//! names in backticks, and every link between its files, exists; the README
//! stays a front door (at most 12 KB); no issue numbers; every difference from
//! the reference cites the reference file it differs from.

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

/// The bullets of each `## ` section of a markdown text, a bullet's
/// continuation lines joined to it.
fn sections_and_bullets(text: &str) -> Vec<(String, Vec<String>)> {
    let mut sections: Vec<(String, Vec<String>)> = Vec::new();
    let mut open_bullet = false;
    for line in text.lines() {
        if let Some(title) = line.strip_prefix("## ") {
            sections.push((title.trim().to_string(), Vec::new()));
            open_bullet = false;
        } else if let Some((_, bullets)) = sections.last_mut() {
            if let Some(bullet) = line.strip_prefix("- ") {
                bullets.push(bullet.to_string());
                open_bullet = true;
            } else if open_bullet
                && line.starts_with(char::is_whitespace)
                && !line.trim().is_empty()
            {
                if let Some(last) = bullets.last_mut() {
                    last.push(' ');
                    last.push_str(line.trim());
                }
            } else {
                open_bullet = false;
            }
        }
    }
    sections
}

/// Whether a bullet cites a reference file: `(reference: ` then a backticked
/// path ending in `.go`.
fn cites_reference(bullet: &str) -> bool {
    bullet.split("(reference: ").skip(1).any(|rest| {
        rest.strip_prefix('`')
            .and_then(|r| r.split('`').next())
            .is_some_and(|path| path.ends_with(".go") && !path.contains(' '))
    })
}

#[test]
fn every_difference_cites_the_reference_it_differs_from() {
    let text = std::fs::read_to_string(root().join("docs/differences.md")).expect("differences");
    let sections = sections_and_bullets(&text);
    let titles: Vec<&str> = sections.iter().map(|(t, _)| t.as_str()).collect();
    for plugin in [
        "bridge",
        "ptp",
        "macvlan",
        "ipvlan",
        "vlan",
        "host-device",
        "tap",
        "loopback",
        "dummy",
        "host-local",
        "static",
        "dhcp",
        "portmap",
        "bandwidth",
        "firewall",
        "tuning",
        "sbr",
        "vrf",
        "flannel",
        "multus",
        "cnitool",
        "All plugins",
    ] {
        assert!(titles.contains(&plugin), "no `## {plugin}` section");
    }
    let mut uncited = Vec::new();
    for (title, bullets) in &sections {
        assert!(!bullets.is_empty(), "`## {title}` has no bullet");
        // What the reference has no file for yet.
        if title == "All plugins" || title == "Ahead of the reference" {
            continue;
        }
        for bullet in bullets.iter().filter(|b| !cites_reference(b)) {
            uncited.push(format!("{title}: {}", &bullet[..bullet.len().min(70)]));
        }
    }
    assert!(
        uncited.is_empty(),
        "bullets without (reference: `….go` …):\n{}",
        uncited.join("\n")
    );
}

#[test]
fn the_citation_check_needs_a_backticked_go_path() {
    assert!(cites_reference(
        "**x**: ours (reference: `plugins/main/bridge/bridge.go` `cmdDel`)."
    ));
    assert!(!cites_reference(
        "**x**: ours (reference: bridge.go cmdDel)."
    ));
    assert!(!cites_reference("**x**: ours (reference: `README.md`)."));
    let s = sections_and_bullets(
        "# t\n\nintro\n\n## a\n\n- one\n  (reference: `a.go` `f`).\n- two\n\n## b\n",
    );
    assert_eq!(s.len(), 2);
    assert_eq!(s[0].1, ["one (reference: `a.go` `f`).", "two"]);
    assert!(s[1].1.is_empty());
}

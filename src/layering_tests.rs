//! Layers point down only: a module may name (`crate::...`) only modules of a
//! lower layer, or itself. The picture (README "Layout"):
//!
//! | layer | modules | may use |
//! | --- | --- | --- |
//! | 0 utilities | alloc, digest, files | nothing of the crate |
//! | 1 locks | lockfile | 0 |
//! | 2 protocol | cni | 0-1 |
//! | 3 kernel | netlink, netns, ipam | 0-2 |
//! | 4 rules | netfilter | 0-3 |
//! | 5 plugin helpers | iface, boundary (layer errors to CNI codes) | 0-4 |
//! | 6 plugins | plugins | 0-5 |
//! | 7 runtime | runtime | 0-6 |
//! | 8 front end | cnitool | 0-7 |
//! | 9 dispatch on argv | multicall (main.rs calls it) | 0-8 |
//!
//! Production code only: test modules may reach anywhere.

use std::path::{Path, PathBuf};

fn layer(module: &str) -> Option<u8> {
    Some(match module {
        "alloc" | "digest" | "files" => 0,
        "lockfile" => 1,
        "cni" => 2,
        "netlink" | "netns" | "ipam" => 3,
        "netfilter" => 4,
        "iface" | "boundary" => 5,
        "plugins" => 6,
        "runtime" => 7,
        "cnitool" => 8,
        "multicall" => 9,
        _ => return None,
    })
}

/// The top-level modules named after `crate::` in `text`, with `{a, b::c}` groups.
fn crate_paths(text: &str) -> Vec<String> {
    let ident = |s: &str| -> String {
        s.chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
            .collect()
    };
    let mut out = Vec::new();
    for (i, _) in text.match_indices("crate::") {
        let rest = &text[i + "crate::".len()..];
        if let Some(group) = rest.strip_prefix('{') {
            let body = &group[..group.find('}').unwrap_or(group.len())];
            out.extend(
                body.split(',')
                    .map(|p| ident(p.trim()))
                    .filter(|p| !p.is_empty()),
            );
        } else {
            out.push(ident(rest));
        }
    }
    out
}

fn sources(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("src dir").flatten() {
        let path = entry.path();
        if path.is_dir() {
            sources(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

#[test]
fn dependencies_point_down_only() {
    let src = PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/src"));
    let mut files = Vec::new();
    sources(&src, &mut files);
    let mut wrong = Vec::new();
    for file in files {
        let rel = file.strip_prefix(&src).expect("under src");
        let name = rel.to_string_lossy();
        if name.ends_with("_tests.rs") || name == "lib.rs" || name == "main.rs" {
            continue;
        }
        let top = rel
            .components()
            .next()
            .map(|c| {
                c.as_os_str()
                    .to_string_lossy()
                    .trim_end_matches(".rs")
                    .to_string()
            })
            .unwrap_or_default();
        let Some(own) = layer(&top) else {
            wrong.push(format!("{name}: module {top:?} has no layer in this test"));
            continue;
        };
        let text = std::fs::read_to_string(&file).expect("source");
        let production = text.split("#[cfg(test)]").next().unwrap_or("");
        for used in crate_paths(production) {
            match layer(&used) {
                _ if used == top => {}
                Some(l) if l < own => {}
                Some(l) => wrong.push(format!(
                    "{name} (layer {own}) uses crate::{used} (layer {l})"
                )),
                None => wrong.push(format!("{name} uses crate::{used}, which has no layer")),
            }
        }
    }
    assert!(wrong.is_empty(), "layering:\n{}", wrong.join("\n"));
}

#[test]
fn the_scanner_sees_grouped_and_nested_paths() {
    assert_eq!(
        crate_paths("use crate::{cni, netlink::Socket};\nlet x = crate::plugins::lookup;"),
        ["cni", "netlink", "plugins"]
    );
}

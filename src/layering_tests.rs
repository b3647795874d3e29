//! Layers point down only: a module may name (`crate::...`) only modules of a
//! lower layer, or itself. The picture (docs/architecture.md):
//!
//! | layer | modules | may use |
//! | --- | --- | --- |
//! | 0 utilities | alloc, digest, files, goflags (Go's flag syntax, for both daemons), quote | nothing of the crate (files: digest; goflags: quote) |
//! | 1 locks | lockfile | 0 |
//! | 2 protocol | cni | 0-1 |
//! | 3 kernel and OS | netlink, kernel (/proc/sys and ioctls), netns, ipam, dbus (a system-bus client), etcd (an etcd v3 client) | 0-2 (kernel: netlink's error) |
//! | 4 rules and protocols | netfilter, dhcp (the protocol, the client and `dhcp daemon`) | 0-3 |
//! | 5 plugin helpers | attach (what plugins share to attach a container), error_codes (layer errors to CNI errors and codes), libcni (network lists, the result cache, running delegates; delegating plugins and cnitool run networks through it) | 0-4 |
//! | 6 plugins | plugins | 0-5 |
//! | 7 daemons | flanneld (reads subnet.env with the flannel plugin's parser) | 0-6 |
//! | 8 front ends | cnitool, install | 0-7 |
//! | 9 dispatch on argv | multicall (main.rs calls it) | 0-8 |
//!
//! Production code only: test modules may reach anywhere.

use crate::source_scan::{is_test_file, without_test_items};
use std::path::{Path, PathBuf};

/// Within a layer, these modules (user, used) build on one another: state
/// file names hash with `digest`; Go flag errors quote the flag; a tap
/// failure is a `netlink::Error` like any link operation's.
const WITHIN_A_LAYER: &[(&str, &str)] = &[
    ("files", "digest"),
    ("goflags", "quote"),
    ("kernel", "netlink"),
];

fn layer(module: &str) -> Option<u8> {
    Some(match module {
        "alloc" | "digest" | "files" | "goflags" | "quote" | "source_scan" => 0,
        "lockfile" => 1,
        "cni" => 2,
        "netlink" | "kernel" | "netns" | "ipam" | "dbus" | "etcd" => 3,
        "netfilter" | "dhcp" => 4,
        "attach" | "error_codes" | "libcni" => 5,
        "plugins" => 6,
        "flanneld" => 7,
        "cnitool" | "install" => 8,
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
        if is_test_file(&name) || name == "lib.rs" || name == "main.rs" {
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
        let production = without_test_items(&text);
        for used in crate_paths(&production) {
            match layer(&used) {
                _ if used == top => {}
                Some(l) if l < own => {}
                Some(l) if l == own && WITHIN_A_LAYER.contains(&(top.as_str(), used.as_str())) => {}
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
fn test_items_are_cut_and_what_follows_them_is_kept() {
    let text = "use a;\n#[cfg(test)]\nmod tests;\nfn f() {\n    #[cfg(test)]\n    pub(crate) fn g() {\n        crate::x();\n    }\n    crate::y();\n}\n#[cfg(test)]\n#[path = \"b_tests.rs\"]\nmod tests {\n    crate::z();\n}\nfn h() {}\n";
    let kept = without_test_items(text);
    assert_eq!(kept.lines().count(), text.lines().count());
    assert_eq!(crate_paths(&kept), ["y"]);
    assert!(kept.contains("fn h() {}"));
    assert!(is_test_file("a/tests.rs") && is_test_file("a/b_tests.rs"));
    assert!(!is_test_file("a/contests.rs"));
}

#[test]
fn the_scanner_sees_grouped_and_nested_paths() {
    assert_eq!(
        crate_paths("use crate::{cni, netlink::Socket};\nlet x = crate::plugins::lookup;"),
        ["cni", "netlink", "plugins"]
    );
}

/// Production source of every module under `src/` (test modules cut off),
/// with its path relative to `src/`.
fn production_sources() -> Vec<(String, String)> {
    let src = PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/src"));
    let mut files = Vec::new();
    sources(&src, &mut files);
    files
        .into_iter()
        .filter_map(|file| {
            let name = file.strip_prefix(&src).ok()?.to_string_lossy().into_owned();
            if is_test_file(&name) {
                return None;
            }
            let text = std::fs::read_to_string(&file).ok()?;
            Some((name, without_test_items(&text)))
        })
        .collect()
}

/// The text of the call that starts at `open` (just after its `(`), up to the
/// matching `)`, skipping string literals.
fn call_arguments(text: &str) -> &str {
    let bytes = text.as_bytes();
    let (mut depth, mut i) = (1, 0);
    while i < bytes.len() && depth > 0 {
        match bytes[i] {
            b'"' => {
                i += 1;
                while i < bytes.len() && bytes[i] != b'"' {
                    i += if bytes[i] == b'\\' { 2 } else { 1 };
                }
            }
            b'(' => depth += 1,
            b')' => depth -= 1,
            _ => {}
        }
        i += 1;
    }
    &text[..i.saturating_sub(1).min(text.len())]
}

/// A format! argument list that prints an error value (`{e}`, `{err:?}`, or
/// `e` / `err` / `error` passed as an argument): its source is flattened into text.
fn formats_an_error(args: &str) -> bool {
    let names = ["e", "err", "error"];
    let inline = names
        .iter()
        .any(|n| args.contains(&format!("{{{n}}}")) || args.contains(&format!("{{{n}:")));
    let positional = args.split(',').skip(1).any(|a| names.contains(&a.trim()));
    inline || positional
}

#[test]
fn errors_keep_their_cause() {
    let mut wrong = Vec::new();
    for (name, text) in production_sources() {
        for (line, l) in text.lines().enumerate() {
            if l.contains(concat!("Result", "<")) && l.contains(", String>") {
                wrong.push(format!("{name}:{}: a String error: {}", line + 1, l.trim()));
            }
        }
        for constructor in [
            "Error::internal(format!(",
            "Error::decode(format!(",
            "Error::invalid_config(format!(",
            "Error::invalid_env(format!(",
        ] {
            for (at, _) in text.match_indices(constructor) {
                let args = call_arguments(&text[at + constructor.len()..]);
                if formats_an_error(args) {
                    let line = text[..at].lines().count();
                    wrong.push(format!(
                        "{name}:{line}: {constructor}..) prints an error and drops it; use \
                         Context::context or Error::caused_by"
                    ));
                }
            }
        }
    }
    assert!(
        wrong.is_empty(),
        "errors that lose their cause:\n{}",
        wrong.join("\n")
    );
}

/// The kernel and rules layers report what failed; which CNI code that is gets
/// decided in `error_codes.rs` or by the plugin. (netns's return-to-home guard is
/// the one exception: it cannot return an error, so it prints the CNI error
/// itself and exits.)
#[test]
fn layers_below_the_plugins_choose_no_cni_code() {
    let mut wrong = Vec::new();
    for (name, text) in production_sources() {
        let layer = [
            "netlink/",
            "kernel/",
            "netfilter/",
            "ipam/",
            "dhcp/",
            "dbus/",
            "netns.rs",
        ]
        .iter()
        .any(|p| name.starts_with(p));
        if !layer {
            continue;
        }
        for (line, l) in text.lines().enumerate() {
            let cni_error = ["cni::Error", "CniResult", "cni::Code", "cni::{"]
                .iter()
                .any(|p| l.contains(p));
            let guard = name == "netns.rs" && l.contains("crate::cni::Error::caused_by");
            let guard_code = name == "netns.rs" && l.contains("crate::cni::Code::Internal");
            if cni_error && !guard && !guard_code {
                wrong.push(format!("{name}:{}: {}", line + 1, l.trim()));
            }
        }
    }
    assert!(
        wrong.is_empty(),
        "CNI errors in a layer:\n{}",
        wrong.join("\n")
    );
}

#[test]
fn the_error_scanner_sees_printed_errors() {
    assert!(formats_an_error(r#""failed to x: {e}""#));
    assert!(formats_an_error(r#""failed {}: {}", path.display(), e"#));
    assert!(formats_an_error(r#""failed: {err:?}""#));
    assert!(!formats_an_error(r#""{ifname:?} has no peer""#));
    assert!(!formats_an_error(r#""range {}", e.name"#));
    assert_eq!(call_arguments(r#""a(b)", x) + 1"#), r#""a(b)", x"#);
}

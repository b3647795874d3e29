//! The house rules a reader relies on, checked: no source file over 700
//! lines, every plugin verb (ADD, DEL, CHECK, GC, STATUS) short enough to
//! read as a list of named steps, and unit tests in a file beside their
//! module, never inline.

#[path = "../../src/source_scan.rs"]
mod source_scan;

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

/// Every name that picks something to run: the plugins' and cni-multi's own
/// subcommands' (both tables).
fn table_names() -> Vec<&'static str> {
    let plugins = cni_multi::plugins::PLUGINS.iter().map(|e| e.name());
    let subcommands = cni_multi::multicall::table::SUBCOMMANDS.iter();
    plugins.chain(subcommands.map(|s| s.words[0])).collect()
}

/// Where the string literal `text` starts with ends (after its closing
/// quote; escaped quotes skipped).
fn literal_end(text: &str) -> usize {
    let mut escaped = false;
    for (i, c) in text.char_indices().skip(1) {
        match c {
            '\\' if !escaped => escaped = true,
            '"' if !escaped => return i + 1,
            _ => escaped = false,
        }
    }
    text.len()
}

/// Production code: a file's text without its `#[cfg(test)]` items (the
/// test module's declaration, test-only helpers), nothing of a test file.
fn production(p: &Path, text: &str) -> String {
    if is_test_file(p) {
        return String::new();
    }
    source_scan::without_test_items(text)
}

/// The longest run of string literals naming a table entry that stand in a
/// row separated only by `,`, `|` and white space (an array, a `matches!` or
/// a match arm's pattern), as (line, names).
fn name_lists(text: &str, names: &[&str]) -> Vec<(usize, Vec<String>)> {
    let mut found = Vec::new();
    let mut run: Vec<String> = Vec::new();
    let mut start = 0;
    let mut rest = text;
    let mut line = 1;
    let flush = |run: &mut Vec<String>, start, found: &mut Vec<(usize, Vec<String>)>| {
        let mut distinct = run.clone();
        distinct.sort();
        distinct.dedup();
        if distinct.len() >= 3 {
            found.push((start, std::mem::take(run)));
        }
        run.clear();
    };
    while let Some(c) = rest.chars().next() {
        if rest.starts_with("'\"'") {
            rest = &rest[3..];
            continue;
        }
        if rest.starts_with("//") {
            let end = rest.find('\n').unwrap_or(rest.len());
            rest = &rest[end..];
            continue;
        }
        if c == '"' {
            let lit_end = literal_end(rest);
            let lit = &rest[1..lit_end.saturating_sub(1).max(1)];
            if names.contains(&lit) {
                if run.is_empty() {
                    start = line;
                }
                run.push(lit.to_string());
            } else {
                flush(&mut run, start, &mut found);
            }
            line += rest[..lit_end].matches('\n').count();
            rest = &rest[lit_end..];
            continue;
        }
        if c == '\n' {
            line += 1;
        } else if !(c.is_whitespace() || c == ',' || c == '|') {
            flush(&mut run, start, &mut found);
        }
        rest = &rest[c.len_utf8()..];
    }
    flush(&mut run, start, &mut found);
    found
}

/// The plugin table (`src/plugins/mod.rs`) and the subcommand table
/// (`src/multicall/table.rs`) are the only lists of what cni-multi runs: no
/// other file under src/, fuzz/ or bench/ holds three names of theirs in a
/// row (`["a", "b", "c"]`, `"a" | "b" | "c"`); a consumer reads the tables.
#[test]
fn only_the_tables_list_plugins() {
    let names = table_names();
    let tables = ["src/plugins/mod.rs", "src/multicall/table.rs"];
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut lists = Vec::new();
    let files = [src("src"), src("fuzz/fuzz_targets"), src("bench")].concat();
    assert!(files.len() > 100, "only {} files", files.len());
    for p in files {
        let rel = p.strip_prefix(root).unwrap_or(&p).display().to_string();
        if tables.contains(&rel.as_str()) {
            continue;
        }
        let text = production(&p, &std::fs::read_to_string(&p).expect("read"));
        for (line, list) in name_lists(&text, &names) {
            lists.push(format!("{rel}:{line}: {}", list.join(" ")));
        }
    }
    assert!(
        lists.is_empty(),
        "plugin names listed outside the tables:\n{}",
        lists.join("\n")
    );
}

#[test]
fn a_name_list_is_three_names_in_a_row() {
    let names = ["bridge", "ptp", "tuning", "vlan"];
    let text = "x = [\"bridge\", \"ptp\",\n \"tuning\"];\nmatches!(t, \"ptp\" | \"vlan\" | \"bridge\")\n\
        if t == \"bridge\" || t == \"ptp\" || t == \"vlan\" {}\n[\"bridge\", \"bridge\", \"ptp\"]\n\
        \"a \\\"b\", '\"', \"bridge\", \"ptp\", \"vlan\"";
    let found = name_lists(text, &names);
    let lines: Vec<usize> = found.iter().map(|(l, _)| *l).collect();
    assert_eq!(lines, [1, 3, 6]);
}

/// The string literals of a text, as (line, literal without its quotes).
fn literals(text: &str) -> Vec<(usize, &str)> {
    let mut out = Vec::new();
    let (mut rest, mut line) = (text, 1);
    while let Some(c) = rest.chars().next() {
        if rest.starts_with("'\"'") {
            rest = &rest[3..];
            continue;
        }
        if rest.starts_with("//") {
            rest = &rest[rest.find('\n').unwrap_or(rest.len())..];
            continue;
        }
        if c == '"' {
            let end = literal_end(rest);
            out.push((line, &rest[1..end.saturating_sub(1).max(1)]));
            line += rest[..end].matches('\n').count();
            rest = &rest[end..];
            continue;
        }
        line += usize::from(c == '\n');
        rest = &rest[c.len_utf8()..];
    }
    out
}

/// The `{…:?}` placeholders of a format string (`{:?}`, `{x:?}`, `{0:#?}`,
/// `{:>8?}`): Debug formatting.
fn debug_placeholders(literal: &str) -> Vec<&str> {
    let mut found = Vec::new();
    let mut rest = literal;
    while let Some(i) = rest.find(['{', '}']) {
        if rest[i..].starts_with("{{") || rest[i..].starts_with("}}") {
            rest = &rest[i + 2..];
            continue;
        }
        let Some(len) = rest[i..].find('}').filter(|_| rest[i..].starts_with('{')) else {
            rest = &rest[i + 1..];
            continue;
        };
        let placeholder = &rest[i..i + len + 1];
        if placeholder.contains(':') && placeholder.ends_with("?}") {
            found.push(placeholder);
        }
        rest = &rest[i + len + 1..];
    }
    found
}

/// No text a user reads shows a value's Debug form (`Some(1)`, `Rule {
/// family: V4, .. }`, `Iptables`): no string literal in the production code
/// under src/ (its `#[cfg(test)]` items cut, no `*tests.rs`) holds
/// a `{…:?}` placeholder, whichever macro or constructor it is handed to
/// (`format!`, `write!`, `bail!`, `anyhow!`, `eprintln!`, `Error::…`). A value
/// gets a `Display`; a name or path is shown with `quote::quoted` (the one
/// place Debug quoting is used, `src/quote.rs`).
#[test]
fn no_debug_formatting_in_texts() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut found = Vec::new();
    for p in src("src") {
        let rel = p.strip_prefix(root).unwrap_or(&p).display().to_string();
        if rel == "src/quote.rs" {
            continue;
        }
        let text = production(&p, &std::fs::read_to_string(&p).expect("read"));
        for (line, literal) in literals(&text) {
            for placeholder in debug_placeholders(literal) {
                found.push(format!("{rel}:{line}: {placeholder}"));
            }
        }
    }
    assert!(
        found.is_empty(),
        "{} Debug placeholders in texts:\n{}",
        found.len(),
        found.join("\n")
    );
}

#[test]
fn the_debug_rule_sees_every_form() {
    let text = "// \"{x:?}\" in a comment\nformat!(\"a {:?} {{b:?}} {x:?} {0:#?} {:>8?} {y} {z:x}\");\n\
        bail!(\"q \\\"{q:?}\\\"\")";
    let lits = literals(text);
    let found: Vec<(usize, &str)> = lits
        .iter()
        .flat_map(|(l, lit)| debug_placeholders(lit).into_iter().map(move |p| (*l, p)))
        .collect();
    assert_eq!(
        found,
        [
            (2, "{:?}"),
            (2, "{x:?}"),
            (2, "{0:#?}"),
            (2, "{:>8?}"),
            (3, "{q:?}")
        ]
    );
}

/// IFLA_INFO_KIND names the kernel gives links.
const LINK_KINDS: [&str; 16] = [
    "veth",
    "bridge",
    "macvlan",
    "macvtap",
    "ipvlan",
    "ipvtap",
    "vlan",
    "dummy",
    "vrf",
    "ifb",
    "vxlan",
    "geneve",
    "tun",
    "bond",
    "wireguard",
    "gre",
];

/// A line that decides on a link kind by its name: a link kind's name as a
/// string literal beside `kind`, passed to a link check, or in a list of names.
fn compares_a_link_kind_as_a_string(line: &str) -> bool {
    let code = line.trim_start();
    if code.starts_with("//") {
        return false;
    }
    let names_a_kind = LINK_KINDS
        .iter()
        .any(|k| code.contains(&format!("\"{k}\"")));
    names_a_kind
        && (code.contains("kind") || code.contains("check_single(") || code.contains("[&str"))
}

#[test]
fn no_link_kind_is_compared_as_a_string_outside_the_netlink_parser() {
    let netlink = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/netlink");
    let mut found = Vec::new();
    for p in src("src").into_iter().filter(|p| !p.starts_with(&netlink)) {
        let text = std::fs::read_to_string(&p).expect("read");
        for (i, line) in text.lines().enumerate() {
            if compares_a_link_kind_as_a_string(line) {
                found.push(format!("{}:{}: {}", p.display(), i + 1, line.trim()));
            }
        }
    }
    assert!(
        found.is_empty(),
        "link kinds compared as strings (use netlink::link::LinkKind):\n{}",
        found.join("\n")
    );
}

/// Inside the netlink layer a link kind's name is spelled once, in
/// `LinkKind`'s table (`link/kind.rs`), which creating a link and reading one
/// back both use.
#[test]
fn the_netlink_layer_spells_each_link_kind_once() {
    let table = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/netlink/link/kind.rs");
    let mut found = Vec::new();
    for p in src("src/netlink").into_iter().filter(|p| *p != table) {
        let text = std::fs::read_to_string(&p).expect("read");
        for (i, line) in production(&p, &text).lines().enumerate() {
            let code = line.trim_start();
            if !code.starts_with("//")
                && LINK_KINDS
                    .iter()
                    .any(|k| code.contains(&format!("\"{k}\"")))
            {
                found.push(format!("{}:{}: {}", p.display(), i + 1, code));
            }
        }
    }
    assert!(
        found.is_empty(),
        "link kind names spelled outside LinkKind's table:\n{}",
        found.join("\n")
    );
}

#[test]
fn the_link_kind_rule_flags_each_shape() {
    for line in [
        "    if link.kind == \"veth\" {",
        "        .filter(|l| l.kind != \"bridge\")",
        "    attach::check_single(inv, Some(\"macvlan\"))?;",
        "const STACK: [&str; 2] = [\"macvlan\", \"macvtap\"];",
    ] {
        assert!(compares_a_link_kind_as_a_string(line), "{line}");
    }
    for line in [
        "    if link.kind == LinkKind::Veth {",
        "    // a kind == \"veth\" comparison",
        "    d.insert(\"type\".into(), json!(\"bridge\"));",
        "    if qdisc.kind == \"htb\" {",
    ] {
        assert!(!compares_a_link_kind_as_a_string(line), "{line}");
    }
}

/// A line of code (not a comment) that declares a thread-local.
fn declares_a_thread_local(line: &str) -> bool {
    let code = line.trim_start();
    !code.starts_with("//") && code.contains("thread_local!")
}

/// The netfilter layer's verbs get what they run on as arguments (the
/// backend, and with iptables which flavour's tools): no `thread_local!`
/// there, whose value a caller sets out of sight and threads must be handed.
#[test]
fn no_thread_local_in_the_netfilter_layer() {
    let files = src("src/netfilter");
    assert!(files.len() > 20, "only {} files", files.len());
    let mut found = Vec::new();
    for p in files {
        let text = std::fs::read_to_string(&p).expect("read");
        for (i, line) in text.lines().enumerate() {
            if declares_a_thread_local(line) {
                found.push(format!("{}:{}: {}", p.display(), i + 1, line.trim()));
            }
        }
    }
    assert!(
        found.is_empty(),
        "thread-locals in the netfilter layer (pass the value down):\n{}",
        found.join("\n")
    );
}

#[test]
fn the_thread_local_rule_sees_declarations_not_comments() {
    assert!(declares_a_thread_local("thread_local! {"));
    assert!(declares_a_thread_local(
        "    std::thread_local!(static X: u8 = 0);"
    ));
    assert!(!declares_a_thread_local("    // no thread_local! here"));
}

/// Where a module's unit tests live: a file of their own beside it
/// (`tests.rs` for a `mod.rs`, `<file>_tests.rs` for `<file>.rs`).
fn is_test_file(p: &Path) -> bool {
    source_scan::is_test_file(&p.to_string_lossy())
}

/// The lines of a production file that hold unit tests inline: a
/// `#[cfg(test)]` module with a body, or a `#[test]` function.
fn inline_tests(text: &str) -> Vec<usize> {
    let mut found = Vec::new();
    let mut cfg_test = false;
    for (i, line) in text.lines().enumerate() {
        let code = line.trim();
        if code == "#[test]" {
            found.push(i + 1);
        }
        if code == "#[cfg(test)]" {
            cfg_test = true;
            continue;
        }
        if code.starts_with("#[") || code.starts_with("///") {
            continue;
        }
        let item = ["pub(crate) ", "pub(super) ", "pub "]
            .iter()
            .find_map(|v| code.strip_prefix(v))
            .unwrap_or(code);
        if cfg_test && item.starts_with("mod ") && item.ends_with('{') {
            found.push(i + 1);
        }
        cfg_test = false;
    }
    found
}

#[test]
fn no_inline_unit_test_module_under_src() {
    let mut found = Vec::new();
    for p in src("src").into_iter().filter(|p| !is_test_file(p)) {
        let text = std::fs::read_to_string(&p).expect("read");
        for line in inline_tests(&text) {
            found.push(format!("{}:{line}", p.display()));
        }
    }
    assert!(
        found.is_empty(),
        "unit tests inline: a module's tests go in a file beside it (`<file>_tests.rs`, \
         declared at the file's end as `#[cfg(test)] #[path = \"<file>_tests.rs\"] mod tests;`, \
         or `tests.rs` with `#[cfg(test)] mod tests;` for a mod.rs):\n{}",
        found.join("\n")
    );
}

#[test]
fn the_inline_test_rule_sees_each_shape() {
    let inline = "fn f() {}\n\n#[cfg(test)]\nmod tests {\n    #[test]\n    fn t() {}\n}\n";
    assert_eq!(inline_tests(inline), [4, 5]);
    let shapes = "#[cfg(test)]\n#[allow(dead_code)]\npub(crate) mod helpers {\n}\n\
                  /// doc\n#[test]\nfn loose() {}\n";
    assert_eq!(inline_tests(shapes), [3, 6]);
    let declared = "fn f() {}\n\n#[cfg(test)]\n#[path = \"f_tests.rs\"]\nmod tests;\n\
                    #[cfg(test)]\npub(crate) fn golden() {}\n";
    assert!(inline_tests(declared).is_empty());
    assert!(is_test_file(Path::new("src/a/b_tests.rs")));
    assert!(is_test_file(Path::new("src/a/tests.rs")));
    assert!(!is_test_file(Path::new("src/a/contests.rs")));
}

/// A kernel constant the line defines outside `netlink::uapi` (a netlink,
/// netfilter or nf_tables name given a number), or a netlink attribute
/// written by its bare number: `.attr(2, …)`, `.nest(3 | NESTED, …)`.
fn unnamed_kernel_constant(line: &str) -> bool {
    let code = line.trim_start();
    if code.starts_with("//") {
        return false;
    }
    let defines = code
        .split_once("const ")
        .map(|(_, rest)| rest)
        .is_some_and(|rest| {
            [
                "NFTA_", "NFT_", "NF_", "NFPROTO_", "NFNL_", "IFLA_", "RTA_", "TCA_", "IFA_",
            ]
            .iter()
            .any(|p| rest.starts_with(p))
                && rest.contains(" = ")
        });
    // The netlink writer's calls take the attribute type first: a number
    // followed by `,` or `| NESTED` (a one-argument `.u32(0)` is a value).
    let bare = [
        ".attr(", ".nest(", ".str(", ".ip(", ".u32(", ".u16(", ".u8(",
    ]
    .iter()
    .any(|call| {
        code.match_indices(call).any(|(at, _)| {
            let arg = code[at + call.len()..].trim_start();
            let digits = arg.bytes().take_while(u8::is_ascii_digit).count();
            let after = arg[digits..].trim_start();
            digits > 0 && (after.starts_with(',') || after.starts_with('|'))
        })
    });
    defines || bare
}

/// Kernel constants are named once, in `src/netlink/uapi/` (one module per
/// header): no netlink or netfilter constant defined elsewhere, no attribute
/// written by its number.
#[test]
fn kernel_constants_are_named_in_uapi_only() {
    let mut found = Vec::new();
    for p in src("src") {
        if p.components().any(|c| c.as_os_str() == "uapi") {
            continue;
        }
        let text = std::fs::read_to_string(&p).expect("read");
        for (i, line) in production(&p, &text).lines().enumerate() {
            if unnamed_kernel_constant(line) {
                found.push(format!("{}:{}: {}", p.display(), i + 1, line.trim()));
            }
        }
    }
    assert!(
        found.is_empty(),
        "kernel constants outside src/netlink/uapi/ (name them there, cite the header):\n{}",
        found.join("\n")
    );
}

#[test]
fn the_kernel_constant_rule_sees_each_shape() {
    assert!(unnamed_kernel_constant("const NFTA_EXPR_NAME: u16 = 1;"));
    assert!(unnamed_kernel_constant(
        "    pub(crate) const NFT_MSG_GETRULE: u16 = 7;"
    ));
    assert!(unnamed_kernel_constant("            .attr(2, &be32(1))"));
    assert!(unnamed_kernel_constant("        .nest(3 | NESTED, |_| x)"));
    assert!(!unnamed_kernel_constant(
        "            .attr(NFTA_CMP_OP, &be32(op))"
    ));
    assert!(!unnamed_kernel_constant("// const NFT_X: u32 = 1;"));
    assert!(!unnamed_kernel_constant("use uapi::nf_tables::NFT_REG_1;"));
    assert!(unnamed_kernel_constant("        .u32(3, mtu)"));
    assert!(!unnamed_kernel_constant("    w.u32(0); // a D-Bus value"));
}

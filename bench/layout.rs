//! `make hot-layout`: which functions plugin runs execute, and which read-only
//! data that code references, written as the linker script `make build` links
//! with (bench/hot-text.ld), so that both sit together at the front of .text and
//! .rodata.
//!
//! Why: the kernel maps a binary's file pages in 64 KB fault-around windows,
//! and with the linker's default order the ~250 KB a bridge ADD executes is
//! spread over nearly every window of 2 MB of text (cnitool, the doctor, multus
//! and the rest of the plugins in between), so a plugin run mapped all of it;
//! the same goes for .rodata, where the constants of what only the daemons run
//! (flanneld's TLS: rustls, ring) lie among the plugins' own.
//!
//! How: the runs are made through the libcni client (Go's libcni execs each
//! plugin, as runtimes do) with an unstripped binary; every plugin process it
//! starts (an exec of that binary) is single-stepped with ptrace and each
//! instruction address is mapped to its function with `nm`. Functions most runs execute come first, then each in
//! the order runs first reached it. Symbol hashes, LLVM's numeric suffixes and
//! the crate a generic was instantiated for are wildcards in the patterns, so
//! the script stays useful across small code changes; a function it no longer
//! names is linked where the linker puts it, nothing fails. The data part
//! (layout_data.rs) names input sections from the build's link map.

use crate::{Bench, Impl, Res, scenarios};
use nix::libc;
use serde_json::json;
use std::collections::{HashMap, HashSet};
use std::path::Path;
use std::process::Command;

#[path = "layout_data.rs"]
mod data;

/// The runs traced: what runtimes run most (their default networks, a chain
/// with every common plugin), and VERSION, STATUS and GC. Each scenario's verbs
/// run for a second container while a first one is attached (a node's usual
/// state: reservations, ports and rules of other pods to read past).
const RUNS: &[(&str, &[&str])] = &[
    (
        "bridge-ipmasq+portmap+bandwidth+tuning",
        &["add", "check", "del"],
    ),
    ("podman-default", &["add", "del"]),
    // The bench's peak-RSS run: a gateway bridge, nothing else.
    ("bridge+host-local", &["add", "del"]),
    ("ptp+host-local", &["add", "del"]),
    ("loopback", &["add", "del"]),
];

struct Symbols {
    /// (start, end, name), sorted by start.
    funcs: Vec<(u64, u64, String)>,
}

impl Symbols {
    fn read(bin: &Path) -> Res<Symbols> {
        let out = Command::new("nm")
            .args(["-S", "--defined-only"])
            .arg(bin)
            .output()
            .map_err(|e| format!("nm: {e}"))?;
        let mut funcs = Vec::new();
        for line in String::from_utf8_lossy(&out.stdout).lines() {
            let f: Vec<&str> = line.split_whitespace().collect();
            if let [addr, size, kind, name] = f[..]
                && matches!(kind, "t" | "T" | "w" | "W")
                && let (Ok(a), Ok(s)) =
                    (u64::from_str_radix(addr, 16), u64::from_str_radix(size, 16))
            {
                funcs.push((a, a + s.max(1), name.to_string()));
            }
        }
        if funcs.is_empty() {
            return Err(format!(
                "{}: no symbols (a stripped binary?)",
                bin.display()
            ));
        }
        funcs.sort();
        Ok(Symbols { funcs })
    }

    fn at(&self, addr: u64) -> Option<usize> {
        let i = self.funcs.partition_point(|f| f.0 <= addr).checked_sub(1)?;
        (addr < self.funcs[i].1).then_some(i)
    }

    /// Every name of the function at `f` (aliases: musl's `sigaction` is
    /// `__sigaction`, whose section is named after the latter).
    fn names(&self, f: usize) -> impl Iterator<Item = &str> {
        let (start, end, _) = self.funcs[f];
        let first = self.funcs.partition_point(|g| g.0 < start);
        self.funcs[first..]
            .iter()
            .take_while(move |g| g.0 == start)
            .filter(move |g| g.1 == end)
            .map(|g| g.2.as_str())
    }
}

/// The lowest address and the executable range of `bin`'s mappings in `pid`.
fn text_of(pid: i32, bin: &Path) -> Option<(u64, u64, u64)> {
    let maps = std::fs::read_to_string(format!("/proc/{pid}/maps")).ok()?;
    let (mut base, mut text) = (None, None);
    for line in maps.lines() {
        let f: Vec<&str> = line.split_whitespace().collect();
        if f.len() < 6 || Path::new(f[5]) != bin {
            continue;
        }
        let (lo, hi) = f[0].split_once('-')?;
        let (lo, hi) = (
            u64::from_str_radix(lo, 16).ok()?,
            u64::from_str_radix(hi, 16).ok()?,
        );
        base = Some(base.map_or(lo, |b: u64| b.min(lo)));
        if f[1].contains('x') {
            text = Some((lo, hi));
        }
    }
    let (lo, hi) = text?;
    Some((base?, lo, hi))
}

/// A traced process: what it executed of `bin`, in first-hit order.
#[derive(Default)]
struct Proc {
    text: Option<(u64, u64, u64)>,
    seen: HashSet<u64>,
    order: Vec<u64>,
}

/// Runs `cmd` (the client) and single-steps each process it starts that execs
/// `bin`; returns each such process's executed addresses (relative to the
/// binary's load address), first hit first.
fn trace(mut cmd: Command, bin: &Path) -> Res<Vec<Vec<u64>>> {
    let opts = libc::PTRACE_O_TRACEFORK
        | libc::PTRACE_O_TRACEVFORK
        | libc::PTRACE_O_TRACECLONE
        | libc::PTRACE_O_TRACEEXEC;
    let procs = std::cell::RefCell::new(HashMap::<i32, Proc>::new());
    let mut done = Vec::new();
    let on_stop = |stop: crate::trace::Stop| {
        let pid = stop.pid;
        let mut procs = procs.borrow_mut();
        let p = procs.entry(pid).or_default();
        if stop.event == libc::PTRACE_EVENT_EXEC {
            // The client itself is never recorded: only the plugins it runs.
            let ours = pid != stop.first
                && std::fs::read_link(format!("/proc/{pid}/exe")).is_ok_and(|e| e == bin);
            p.text = if ours { text_of(pid, bin) } else { None };
        }
        let Some((base, lo, hi)) = p.text else {
            return false;
        };
        let mut regs = std::mem::MaybeUninit::<libc::user_regs_struct>::uninit();
        // SAFETY: pid is a stopped tracee; GETREGS fills the struct.
        let ok = unsafe { libc::ptrace(libc::PTRACE_GETREGS, pid, 0, regs.as_mut_ptr()) } == 0;
        if ok {
            // SAFETY: GETREGS succeeded, so the struct is initialized.
            let ip = unsafe { regs.assume_init() }.rip;
            if (lo..hi).contains(&ip) && p.seen.insert(ip) {
                p.order.push(ip - base);
            }
        }
        true
    };
    let on_exit = |pid| {
        if let Some(p) = procs.borrow_mut().remove(&pid)
            && !p.order.is_empty()
        {
            done.push(p.order);
        }
    };
    cmd.stderr(std::process::Stdio::inherit());
    match crate::trace::follow(cmd, b"", opts, on_stop, on_exit)? {
        0 => Ok(done),
        code => Err(format!("a traced run failed (exit {code})")),
    }
}

/// The pattern naming one function's section, its hashes wildcards.
pub(crate) fn pattern(name: &str) -> String {
    // `$` (legacy mangling's escapes) is outside what the script lexer takes
    // unquoted, and a quoted name is no pattern: any one character matches it.
    let mut name = name.to_string();
    // LLVM numbers local symbols whose names collide (`foo.1272`); the
    // number changes with any code change.
    while let Some((head, n)) = name.rsplit_once('.')
        && !n.is_empty()
        && n.bytes().all(|b| b.is_ascii_digit())
    {
        name.truncate(head.len());
    }
    // Legacy mangling ends in `17h` and 16 hex digits of hash, then `E`.
    if name.len() > 20 && name.ends_with('E') {
        let tail = &name[name.len() - 20..];
        if tail.starts_with("17h") && tail[3..19].bytes().all(|b| b.is_ascii_hexdigit()) {
            name.truncate(name.len() - 17);
            name.push('*');
        }
    }
    // v0 mangling (`_R…`) names each crate with `Cs<hash>_`.
    if !name.starts_with("_R") {
        return name.replace('$', "?");
    }
    let mut out = String::new();
    let mut rest = name.as_str();
    while let Some(i) = rest.find("Cs") {
        out.push_str(&rest[..i + 2]);
        rest = &rest[i + 2..];
        let end = rest
            .find(|c: char| !c.is_ascii_alphanumeric())
            .unwrap_or(rest.len());
        if end > 0 && rest[end..].starts_with('_') {
            out.push('*');
            rest = &rest[end..];
        }
    }
    out.push_str(rest);
    // A trailing crate root or back-reference is the crate a shared generic
    // was instantiated for, whichever crate first needed it in that build.
    if let Some(cut) = instantiating_crate(&out) {
        out.truncate(cut);
        out.push('*');
    }
    out
}

/// Where a v0 name's instantiating crate (`Cs*_<len><ident>` or `B<n>_`)
/// starts, if it ends with one.
fn instantiating_crate(name: &str) -> Option<usize> {
    if let Some(i) = name.rfind("Cs*_") {
        let tail = &name[i + 4..];
        let digits = tail.bytes().take_while(u8::is_ascii_digit).count();
        if digits > 0 && tail[digits..].len().to_string() == tail[..digits] {
            return Some(i);
        }
    }
    let i = name.rfind('B')?;
    let tail = &name[i + 1..];
    let body = tail.strip_suffix('_')?;
    body.bytes().all(|b| b.is_ascii_alphanumeric()).then_some(i)
}

/// The input-section patterns of one function: LLVM puts code it deems cold
/// in `.text.unlikely.<name>`, and a numbered local may lose its number.
fn text_line(p: &str) -> String {
    if p.ends_with('*') {
        format!("    *(.text.{p} .text.unlikely.{p})\n")
    } else {
        format!("    *(.text.{p} .text.{p}.* .text.unlikely.{p} .text.unlikely.{p}.*)\n")
    }
}

/// What no symbol pattern reaches: the start files' and libc's assembly,
/// which has no section of its own per function (`_start`, `memcpy`), and
/// `_fini` (run at exit; the halves from crti.o and crtn.o stay in order).
const FIXED_TEXT: &str =
    "    *crt1.o(.text)\n    *libc.a:*(.text)\n    KEEP(*(SORT_NONE(.fini)))\n";

pub fn generate(b: &Bench, im: &Impl, bin: &Path, out: &Path) -> Res<()> {
    let symbols = Symbols::read(bin)?;
    let mut runs: Vec<Vec<u64>> = Vec::new();
    for (name, plugins, caps) in scenarios() {
        let Some((_, verbs)) = RUNS.iter().find(|(n, _)| *n == name) else {
            continue;
        };
        let conf = b.conf_dir(im, name, &plugins)?;
        let net = name.replace('+', "-");
        // The pod already there (no port mappings, which the second would
        // collide with), attached before and detached after the traced verbs.
        let first = b.netns()?;
        let ns = b.netns()?;
        let none = json!({});
        crate::progress(&format!("  {name} add (first pod)"));
        runs.extend(trace(
            b.cnitool(im, &conf, &none, &["add", &net, &first]),
            bin,
        )?);
        for verb in *verbs {
            crate::progress(&format!("  {name} {verb}"));
            let cmd = b.cnitool(im, &conf, &caps, &[verb, &net, &ns]);
            runs.extend(trace(cmd, bin)?);
        }
        crate::progress(&format!("  {name} del (first pod)"));
        runs.extend(trace(
            b.cnitool(im, &conf, &none, &["del", &net, &first]),
            bin,
        )?);
        b.drop_netns(&ns);
        b.drop_netns(&first);
    }
    // A 1.1.0 network: VERSION (libcni's GetVersionInfo), STATUS, and a GC
    // that finds one attachment to remove.
    let plugins = json!([{"type": "bridge", "bridge": "bench-lay",
        "ipam": {"type": "host-local", "subnet": "10.109.0.0/16", "dataDir": "@STORE@"}}]);
    let conf = b.conf_dir_at(im, "statusgc", &plugins, "1.1.0")?;
    let ns = b.netns()?;
    for args in [
        &["add", "statusgc", &ns][..],
        &["version", "statusgc"],
        &["status", "statusgc"],
        &["gc", "statusgc"],
    ] {
        crate::progress(&format!("  {}", args[0]));
        runs.extend(trace(b.cnitool(im, &conf, &json!({}), args), bin)?);
    }
    b.drop_netns(&ns);
    // Each function: how many runs executed it, and when one first did.
    let mut stats: HashMap<usize, (usize, usize)> = HashMap::new();
    let mut seq = 0;
    for run in &runs {
        let mut in_run = HashSet::new();
        for &addr in run {
            if let Some(f) = symbols.at(addr)
                && in_run.insert(f)
            {
                seq += 1;
                let s = stats.entry(f).or_insert((0, seq));
                s.0 += 1;
            }
        }
    }
    let mut hot: Vec<(usize, (usize, usize))> = stats.into_iter().collect();
    hot.sort_by_key(|&(_, (runs, first))| (std::cmp::Reverse(runs), first));
    let bytes: u64 = hot
        .iter()
        .map(|&(f, _)| symbols.funcs[f].1 - symbols.funcs[f].0)
        .sum();
    let mut text = String::from(
        "/* Generated by `make hot-layout` (bench/layout.rs): the functions plugin runs\n   \
         execute, most shared first, linked ahead of the rest of .text, and the\n   \
         read-only data they reference ahead of the rest of .rodata, so that a run\n   \
         maps little more than what it uses (see docs/benchmarks.md). */\n\
         SECTIONS\n{\n  .text.hot :\n  {\n",
    );
    text.push_str(FIXED_TEXT);
    let mut written = HashSet::new();
    for (f, _) in &hot {
        for name in symbols.names(*f) {
            let p = pattern(name);
            if written.insert(p.clone()) {
                text.push_str(&text_line(&p));
            }
        }
    }
    text.push_str("  }\n}\nINSERT BEFORE .text;\n");
    let funcs: Vec<(u64, u64, Vec<&str>)> = hot
        .iter()
        .map(|&(f, _)| {
            let (start, end, _) = symbols.funcs[f];
            (start, end, symbols.names(f).collect())
        })
        .collect();
    let executed: HashSet<u64> = runs.iter().flatten().copied().collect();
    let rodata = data::hot_rodata(bin, &funcs, &executed)?;
    text.push_str(&rodata.script);
    std::fs::write(out, text).map_err(|e| format!("{}: {e}", out.display()))?;
    crate::progress(&format!(
        "{} runs, {} functions ({} KB) executed; {} patterns; {} read-only data sections ({} KB) referenced; written to {}",
        runs.len(),
        hot.len(),
        bytes / 1024,
        written.len(),
        rodata.sections,
        rodata.bytes / 1024,
        out.display()
    ));
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::{pattern, text_line};

    #[test]
    fn hashes_become_wildcards() {
        assert_eq!(
            pattern("_ZN9cni_multi4main17h06aa90d61bffafdfE"),
            "_ZN9cni_multi4main17h*"
        );
        assert_eq!(
            pattern("_RINvMs0_NtNtCsaz6eC2DG7lh_3std9backtraceB6_"),
            "_RINvMs0_NtNtCs*_3std9backtrace*"
        );
        assert_eq!(
            pattern("_ZN4core3ptr13drop_in_place$LT$u8$GT$17h0123456789abcdefE"),
            "_ZN4core3ptr13drop_in_place?LT?u8?GT?17h*"
        );
        assert_eq!(pattern("memcpy"), "memcpy");
        // Only v0 names have crate hashes.
        assert_eq!(
            pattern("_ZN3Css_4main17h0123456789abcdefE"),
            "_ZN3Css_4main17h*"
        );
    }

    #[test]
    fn what_changes_between_builds_becomes_wildcards() {
        // LLVM's number for a local whose name collided.
        assert_eq!(
            pattern("_RNvMNtCs2Nb3gJ4iU0I_5alloc5allocNtB2_6Global18alloc_impl_runtime.1272"),
            "_RNvMNtCs*_5alloc5allocNtB2_6Global18alloc_impl_runtime"
        );
        assert_eq!(pattern("values.2934"), "values");
        // The crate a shared generic was instantiated for: a crate root...
        assert_eq!(
            pattern(
                "_RNvXs1i_NtCs7BliBxkEZsN_4core3fmtReNtB6_7Display3fmtCsaL18yR2AWFC_14rustc_demangle"
            ),
            "_RNvXs1i_NtCs*_4core3fmtReNtB6_7Display3fmt*"
        );
        // ...or a back-reference to one.
        assert_eq!(
            pattern(
                "_RINvNvMs2_NtCs2Nb3gJ4iU0I_5alloc7raw_vecINtB8_11RawVecInnerpE7reserve21do_reserve_and_handleNtNtBa_5alloc6GlobalEBa_"
            ),
            "_RINvNvMs2_NtCs*_5alloc7raw_vecINtB8_11RawVecInnerpE7reserve21do_reserve_and_handleNtNtBa_5alloc6GlobalE*"
        );
        // A path's own last identifier stays.
        assert_eq!(pattern("_RNvCs1234_3std4main"), "_RNvCs*_3std4main");
    }

    #[test]
    fn cold_and_numbered_sections_match() {
        assert_eq!(
            text_line("memcpy"),
            "    *(.text.memcpy .text.memcpy.* .text.unlikely.memcpy .text.unlikely.memcpy.*)\n"
        );
        assert_eq!(
            text_line("_ZN9cni_multi4main17h*"),
            "    *(.text._ZN9cni_multi4main17h* .text.unlikely._ZN9cni_multi4main17h*)\n"
        );
    }
}

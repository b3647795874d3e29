//! The data half of `make hot-layout`: the read-only data the traced plugin
//! code references, linked ahead of the rest of .rodata.
//!
//! Why: .rodata holds every constant of the binary, the daemons' too (ring's
//! curve tables, rustls's), and fault-around maps it 64 KB at a time, so a
//! plugin run touching a few constants spread over it maps all of it.
//!
//! How: every instruction the runs executed that addresses memory relative to
//! the instruction pointer (`objdump -d`: `# <target>`) gives one datum; the
//! build's link map (the hot-layout build writes `<binary>.map`) gives the
//! input section holding it. Relocated data those instructions reach
//! (`.data.rel.ro`: tables of `&str`, vtables) is all written at start-up
//! anyway, so it stays where it is, but what it points to in .rodata is
//! followed. Each section is named in the script: constants by their LLVM
//! name (`.Lanon.<module hash>.<n>`, stable while that crate's code is),
//! symbol-named ones (jump tables) by the same patterns as functions.

use super::pattern;
use crate::Res;
use std::collections::{BTreeMap, HashSet};
use std::path::Path;
use std::process::Command;

/// One input section of the link: where it landed, its name, its output section.
struct Input {
    addr: u64,
    size: u64,
    name: String,
    /// In .data.rel.ro (else in .rodata).
    relocated: bool,
}

pub struct HotData {
    pub script: String,
    pub sections: usize,
    pub bytes: u64,
}

/// The input sections of GNU ld's map file (`-Map`) in .rodata (and
/// .rodata.hot, where the build put the data an earlier script listed) and
/// .data.rel.ro, sorted by address.
fn read_map(text: &str) -> Vec<Input> {
    let mut inputs = Vec::new();
    let mut out = "";
    let mut pending: Option<&str> = None;
    for line in text.lines() {
        if let Some(name) = line.split_whitespace().next()
            && line.starts_with('.')
        {
            out = name;
            pending = None;
            continue;
        }
        if !matches!(out, ".rodata" | ".rodata.hot" | ".data.rel.ro") {
            continue;
        }
        let f: Vec<&str> = line.split_whitespace().collect();
        // ` .name 0xADDR 0xSIZE file`, or a long name alone with the rest on
        // the next line.
        let (name, rest) = match (line.strip_prefix(' '), pending.take()) {
            (Some(l), _) if l.starts_with('.') && f.len() == 1 => {
                pending = Some(f[0]);
                continue;
            }
            (Some(l), _) if l.starts_with('.') => (f[0], &f[1..]),
            (_, Some(name)) => (name, &f[..]),
            _ => continue,
        };
        let hex = |s: &str| u64::from_str_radix(s.strip_prefix("0x")?, 16).ok();
        if let [addr, size, _file, ..] = rest
            && let (Some(addr), Some(size)) = (hex(addr), hex(size))
            && size > 0
        {
            inputs.push(Input {
                addr,
                size,
                name: name.to_string(),
                relocated: out == ".data.rel.ro",
            });
        }
    }
    inputs.sort_by_key(|i| i.addr);
    inputs
}

fn find(inputs: &[Input], addr: u64) -> Option<usize> {
    let i = inputs.partition_point(|s| s.addr <= addr).checked_sub(1)?;
    (addr < inputs[i].addr + inputs[i].size).then_some(i)
}

/// Each instruction addressing memory relative to the instruction pointer,
/// with the address it reaches (x86_64, as the tracer).
fn rip_targets(bin: &Path) -> Res<BTreeMap<u64, u64>> {
    let out = Command::new("objdump")
        .args(["-d", "--no-show-raw-insn"])
        .arg(bin)
        .output()
        .map_err(|e| format!("objdump: {e}"))?;
    let mut refs = BTreeMap::new();
    for line in String::from_utf8_lossy(&out.stdout).lines() {
        let Some((addr, insn)) = line.split_once(':') else {
            continue;
        };
        if !insn.contains("(%rip)") {
            continue;
        }
        let Some((_, target)) = insn.rsplit_once("# ") else {
            continue;
        };
        let target = target.split_whitespace().next().unwrap_or_default();
        if let (Ok(a), Ok(t)) = (
            u64::from_str_radix(addr.trim(), 16),
            u64::from_str_radix(target, 16),
        ) {
            refs.insert(a, t);
        }
    }
    Ok(refs)
}

/// The file's bytes at `addr`..`addr + len` by its program headers (ELF64,
/// little-endian, as the tracer's x86_64 build).
fn bytes_at(elf: &[u8], addr: u64, len: u64) -> Option<&[u8]> {
    let word = |at: usize, n: usize| -> Option<u64> {
        let b = elf.get(at..at + n)?;
        Some(b.iter().rev().fold(0, |v, &x| (v << 8) | u64::from(x)))
    };
    let phoff = usize::try_from(word(0x20, 8)?).ok()?;
    let phentsize = usize::try_from(word(0x36, 2)?).ok()?;
    let phnum = usize::try_from(word(0x38, 2)?).ok()?;
    for i in 0..phnum {
        let ph = phoff + i * phentsize;
        // PT_LOAD: p_offset, p_vaddr, p_filesz.
        if word(ph, 4)? != 1 {
            continue;
        }
        let (off, vaddr, filesz) = (word(ph + 8, 8)?, word(ph + 16, 8)?, word(ph + 32, 8)?);
        if vaddr <= addr && addr + len <= vaddr + filesz {
            let start = usize::try_from(off + (addr - vaddr)).ok()?;
            return elf.get(start..start + usize::try_from(len).ok()?);
        }
    }
    None
}

/// The input-section pattern of one data section.
fn data_line(name: &str) -> String {
    // `.rodata.<symbol>`: a function's jump table or a named constant.
    let (prefix, sym) = match name.strip_prefix(".rodata.") {
        Some(sym) if sym.starts_with("_Z") || sym.starts_with("_R") => (".rodata.", sym),
        _ => return format!("    *({})\n", name.replace('$', "?")),
    };
    let p = pattern(sym);
    if p.ends_with('*') {
        format!("    *({prefix}{p})\n")
    } else {
        format!("    *({prefix}{p} {prefix}{p}.*)\n")
    }
}

/// The .rodata sections the code at `funcs` (hot functions, most shared
/// first, with their names) reaches when it runs the instructions in
/// `executed`, in that order, as a linker-script section inserted before
/// .rodata.
pub fn hot_rodata(
    bin: &Path,
    funcs: &[(u64, u64, Vec<&str>)],
    executed: &HashSet<u64>,
) -> Res<HotData> {
    let map = bin.with_extension("map");
    let text = std::fs::read_to_string(&map).map_err(|e| {
        format!(
            "{}: {e} (the hot-layout build writes its link map there)",
            map.display()
        )
    })?;
    let inputs = read_map(&text);
    let elf = std::fs::read(bin).map_err(|e| format!("{}: {e}", bin.display()))?;
    let refs = rip_targets(bin)?;
    let mut order = Vec::new();
    let mut seen = HashSet::new();
    let mut relro = Vec::new();
    for (start, end, names) in funcs {
        // A C function's strings (`.rodata.<function>.str1.1`): the linker
        // merges equal strings, so the map may show one of them inside
        // another object's, which is then not where this one goes.
        for name in names
            .iter()
            .filter(|n| !n.starts_with("_Z") && !n.starts_with("_R"))
        {
            let strings = format!(".rodata.{name}.str");
            for (i, _) in inputs
                .iter()
                .enumerate()
                .filter(|(_, s)| s.name.starts_with(&strings))
            {
                if seen.insert(i) {
                    order.push(i);
                }
            }
        }
        for (insn, target) in refs.range(start..end) {
            if !executed.contains(insn) {
                continue;
            }
            let Some(i) = find(&inputs, *target) else {
                continue;
            };
            if seen.insert(i) {
                if inputs[i].relocated {
                    relro.push(i);
                } else {
                    order.push(i);
                }
            }
        }
    }
    // What relocated data points to: its words are link-time addresses.
    while let Some(i) = relro.pop() {
        let Some(words) = bytes_at(&elf, inputs[i].addr, inputs[i].size) else {
            continue;
        };
        for w in words.chunks_exact(8) {
            let v = w.iter().rev().fold(0u64, |v, &x| (v << 8) | u64::from(x));
            if let Some(j) = find(&inputs, v)
                && seen.insert(j)
            {
                if inputs[j].relocated {
                    relro.push(j);
                } else {
                    order.push(j);
                }
            }
        }
    }
    // Page-aligned: before .rodata the linker has not yet begun the
    // read-only segment, and code and data share no page.
    let mut script =
        String::from("SECTIONS\n{\n  .rodata.hot ALIGN(CONSTANT (COMMONPAGESIZE)) :\n  {\n");
    let mut written = HashSet::new();
    for &i in &order {
        let line = data_line(&inputs[i].name);
        if written.insert(line.clone()) {
            script.push_str(&line);
        }
    }
    script.push_str("  }\n}\nINSERT BEFORE .rodata;\n");
    Ok(HotData {
        script,
        sections: order.len(),
        bytes: order.iter().map(|&i| inputs[i].size).sum(),
    })
}

#[cfg(test)]
mod tests {
    use super::{data_line, read_map};

    #[test]
    fn map_sections_of_rodata_and_relro() {
        let map = "\
.text           0x0000000000001000      0x100
 .text.main     0x0000000000001000      0x100 main.o
.rodata.hot     0x0000000000001f00       0x10
 *(.rodata..Lanon.0123abcd.2)
 .rodata..Lanon.0123abcd.2
                0x0000000000001f00       0x10 a.o
.rodata         0x0000000000002000      0x300
 *(.rodata .rodata.* .gnu.linkonce.r.*)
 .rodata.cst16  0x0000000000002000       0x20 a.o
                                         0x30 (size before relaxing)
 .rodata..Lanon.0123abcd.7
                0x0000000000002020       0x10 a.o
 *fill*         0x0000000000002030       0x10
 .rodata.empty  0x0000000000002040        0x0 a.o
                0x0000000000002040                some_symbol
.eh_frame       0x0000000000003000       0x40
 .eh_frame      0x0000000000003000       0x40 a.o
.data.rel.ro    0x0000000000004000       0x18
 .data.rel.ro..Lanon.0123abcd.8
                0x0000000000004000       0x18 a.o
";
        let inputs = read_map(map);
        let got: Vec<(u64, u64, &str, bool)> = inputs
            .iter()
            .map(|i| (i.addr, i.size, i.name.as_str(), i.relocated))
            .collect();
        assert_eq!(
            got,
            [
                (0x1f00, 0x10, ".rodata..Lanon.0123abcd.2", false),
                (0x2000, 0x20, ".rodata.cst16", false),
                (0x2020, 0x10, ".rodata..Lanon.0123abcd.7", false),
                (0x4000, 0x18, ".data.rel.ro..Lanon.0123abcd.8", true),
            ]
        );
    }

    #[test]
    fn data_patterns() {
        // LLVM's constants keep their number: it is the name.
        assert_eq!(
            data_line(".rodata..Lanon.0123abcd.7"),
            "    *(.rodata..Lanon.0123abcd.7)\n"
        );
        // A jump table is named after its function, hash and all.
        assert_eq!(
            data_line(".rodata._ZN9cni_multi4main17h06aa90d61bffafdfE"),
            "    *(.rodata._ZN9cni_multi4main17h*)\n"
        );
    }
}

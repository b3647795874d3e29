//! `--trace` (`-v`): every plugin run, on stderr, as the plugin saw it (its
//! CNI_* variables and stdin) and as it answered (exit status, stdout,
//! stderr, time). Runs are numbered by nesting: `[1]` is the list's first
//! plugin, `[1.1]` the IPAM plugin it delegated to in-process.

use crate::cni::delegate::{self, Event};
use std::cell::RefCell;
use std::fmt::Write as _;
use std::io::Write as _;

thread_local! {
    /// The runs under way, outermost first, and how many runs each level
    /// has started (the next number at each depth).
    static FRAMES: RefCell<(Vec<usize>, Vec<usize>)> = const { RefCell::new((Vec::new(), Vec::new())) };
}

/// Reports every plugin run of this process from now on.
pub fn install() {
    delegate::set_tracer(trace);
}

fn trace(event: &Event) {
    let text = match event {
        Event::Start { .. } => FRAMES.with(|f| {
            let (path, counts) = &mut *f.borrow_mut();
            let depth = path.len();
            counts.truncate(depth + 1);
            counts.resize(depth + 1, 0);
            counts[depth] += 1;
            path.push(counts[depth]);
            start(&label(path), event)
        }),
        Event::End { .. } => FRAMES.with(|f| {
            let (path, _) = &mut *f.borrow_mut();
            let text = end(&label(path), event);
            path.pop();
            text
        }),
    };
    let _ = std::io::stderr().write_all(text.as_bytes());
}

fn label(path: &[usize]) -> String {
    let parts: Vec<String> = path.iter().map(ToString::to_string).collect();
    parts.join(".")
}

/// Each line of `text` indented under its heading.
fn block(out: &mut String, name: &str, text: &str) {
    if text.trim().is_empty() {
        let _ = writeln!(out, "    {name}: (none)");
        return;
    }
    let _ = writeln!(out, "    {name}:");
    for line in text.trim_end().lines() {
        let _ = writeln!(out, "      {line}");
    }
}

fn start(label: &str, event: &Event) -> String {
    let Event::Start {
        plugin,
        path,
        in_process,
        command,
        env,
        stdin,
    } = event
    else {
        return String::new();
    };
    let how = if *in_process {
        format!("in-process ({} is this binary)", path.display())
    } else {
        format!("exec {}", path.display())
    };
    let mut out = format!(
        "cnitool: trace [{label}] {plugin} {}: {how}\n",
        command.as_str()
    );
    for (key, value) in env.iter() {
        if value.is_empty() {
            let _ = writeln!(out, "    {key} (unset)");
        } else {
            let _ = writeln!(out, "    {key}={}", value.to_string_lossy());
        }
    }
    block(&mut out, "stdin", &String::from_utf8_lossy(stdin));
    out
}

fn end(label: &str, event: &Event) -> String {
    let Event::End {
        plugin,
        command,
        status,
        stdout,
        stderr,
        elapsed,
    } = event
    else {
        return String::new();
    };
    let ms = elapsed.as_secs_f64() * 1000.0;
    let mut out = format!(
        "cnitool: trace [{label}] {plugin} {}: {status} after {ms:.1} ms\n",
        command.as_str()
    );
    block(&mut out, "stdout", stdout);
    match stderr {
        Some(bytes) => block(&mut out, "stderr", &String::from_utf8_lossy(bytes)),
        None => out.push_str("    stderr: not captured in-process (written above, if any)\n"),
    }
    out
}

#[cfg(test)]
#[path = "trace_tests.rs"]
mod tests;

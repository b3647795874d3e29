//! tuning's sysctl allowlist: a pattern line and a key, split at the first newline.
#![no_main]

use cni_multi::plugins::tuning::pattern::Pattern;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let (pattern, key) = text.split_once('\n').unwrap_or((&text, "net.ipv4.conf.eth0.mtu"));
    if let Ok(p) = Pattern::compile(pattern) {
        let _ = p.is_match(key);
    }
});

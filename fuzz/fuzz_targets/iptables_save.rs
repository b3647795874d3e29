//! `iptables-save` output as portmap, ipMasq and firewall read it.
#![no_main]

use cni_multi::netfilter::iptables::{Saved, jumps};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let saved = Saved::parse(&text);
    // Each rule once; chain lookups as the plugins make them (a handful per
    // operation), not one scan per rule, which would make the harness itself
    // quadratic and slow the fuzzer to a crawl.
    for (chain, spec) in &saved.rules {
        let _ = jumps(spec, "CNI-HOSTPORT-DNAT");
        let _ = jumps(spec, chain);
    }
    let first = saved.rules.first().map(|(c, _)| c.as_str()).unwrap_or("POSTROUTING");
    for chain in [first, "CNI-HOSTPORT-DNAT", "POSTROUTING"] {
        let _ = saved.has_chain(chain);
        let _ = saved.jumps_to(chain, "MASQUERADE");
    }
});

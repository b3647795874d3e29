//! `iptables-save` output as portmap, ipMasq and firewall read it.
#![no_main]

use cni_multi::netfilter::iptables::{Saved, jumps};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let saved = Saved::parse(&text);
    for (chain, spec) in &saved.rules {
        let _ = saved.has_chain(chain);
        let _ = jumps(spec, "CNI-HOSTPORT-DNAT");
        let _ = saved.jumps_to(chain, "MASQUERADE");
    }
});

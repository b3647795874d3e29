//! CNI_ARGS (`K=V;K=V`) as the reference's LoadArgs reads it.
#![no_main]

use cni_multi::cni::CniArgs;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    for known in [&["IP", "MAC"][..], &["IP", "GATEWAY"], &[]] {
        if let Ok(args) = CniArgs::parse(text, known) {
            for k in known {
                let _ = args.get(k);
            }
        }
    }
    let _ = cni_multi::ipam::parse_requested_ip(text);
});

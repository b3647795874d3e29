//! One JSON object read as Go's `encoding/json` reads it: parsed, then the
//! common config keys, a port mapping and a range decoded from it in place.
//! Its corpus holds an object of 100k keys, which fuzz-smoke runs whole under
//! a timeout (decoding once took time quadratic in the number of keys).
#![no_main]

use cni_multi::cni::capabilities::PortMapping;
use cni_multi::cni::config::CommonKeys;
use cni_multi::ipam::range::Range;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(doc) = cni_multi::cni::json::parse(data) {
        let _ = doc.decode::<CommonKeys>();
        let _ = doc.decode::<PortMapping>();
        let _ = doc.decode::<Range>();
    }
});

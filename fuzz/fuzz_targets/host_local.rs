//! host-local's inputs: range sets from the config and reservation files'
//! contents from the store.
#![no_main]

use cni_multi::ipam::range::{Range, RangeSet};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let _ = cni_multi::ipam::store::parse_owner(&text);
    if let Ok(sets) = cni_multi::cni::json::from_slice::<Vec<Vec<Range>>>(data) {
        let canon: Vec<RangeSet> = sets
            .iter()
            .filter_map(|s| RangeSet::canonicalize(s).ok())
            .collect();
        for (i, a) in canon.iter().enumerate() {
            for b in &canon[i + 1..] {
                let _ = a.overlaps(b);
            }
            for r in &a.0 {
                assert!(a.contains(r.start) && a.contains(r.end), "{r:?}");
                let _ = a.range_for(r.gateway);
            }
        }
    }
});

//! A result (prevResult, a delegate's output, the cache) in every version's
//! layout, converted to every version. Conversions that keep everything must
//! round-trip: a current result printed and parsed again is the same result.
#![no_main]

use cni_multi::cni::result::Versioned;
use cni_multi::cni::version::SUPPORTED;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(value) = cni_multi::cni::json::from_slice::<serde_json::Value>(data) else {
        return;
    };
    for version in SUPPORTED {
        let Ok(parsed) = Versioned::parse(value.clone(), version) else {
            continue;
        };
        for to in SUPPORTED {
            let _ = parsed.clone().convert(to);
        }
        if let Ok(current) = parsed.into_current() {
            let text = Versioned::V100(current.clone()).to_json();
            let again: serde_json::Value =
                serde_json::from_str(&text).expect("our output is JSON");
            let back = Versioned::parse(again, &current.cni_version)
                .expect("our output parses")
                .into_current()
                .expect("and converts");
            assert_eq!(back, current, "round trip of {text}");
        }
    }
});

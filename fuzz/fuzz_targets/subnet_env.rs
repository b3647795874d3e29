//! flannel's subnet.env, and the delegate config built from it.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if let Ok(env) = cni_multi::plugins::flannel::parse_subnet_env(text, "subnet.env") {
        let conf = serde_json::json!({"name": "n", "cniVersion": "1.0.0", "delegate": {}});
        if let Some(conf) = conf.as_object() {
            let _ = cni_multi::plugins::flannel::delegate_config(conf, &env);
        }
    }
});

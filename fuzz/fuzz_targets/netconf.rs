//! A network configuration as stdin: Go-compatible decoding of the common keys,
//! every capability, args, prevResult and GC's attachments, every plugin's own
//! keys, and the dispatcher's gates (name, version, CNI_ARGS) for each
//! CNI_ARGS policy.
#![no_main]

use cni_multi::cni::capabilities::{Bandwidth, Dns, PortMapping};
use cni_multi::cni::env::{CmdArgs, Command};
use cni_multi::cni::{NetConf, dispatch};
use cni_multi::ipam::range::Range;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(conf) = NetConf::parse(data) {
        let _ = conf.ipam_type();
        let _ = conf.prev_result_versioned();
        let _ = conf.container_prev_result();
        let _ = conf.valid_attachments();
        let _ = conf.plugin_keys::<serde_json::Value>();
        let _ = conf.runtime_config::<Vec<PortMapping>>("portMappings");
        let _ = conf.runtime_config::<Bandwidth>("bandwidth");
        let _ = conf.runtime_config::<Dns>("dns");
        let _ = conf.runtime_config::<Vec<String>>("ips");
        let _ = conf.runtime_config::<String>("mac");
        let _ = conf.runtime_config::<Vec<Vec<Range>>>("ipRanges");
        let _ = conf.args_cni::<Vec<String>>("ips");
        cni_multi::plugins::decode_every_plugins_keys(&conf);
    }
    // The gates differ by CNI_ARGS policy only: one plugin of each policy.
    let table = cni_multi::plugins::PLUGINS;
    let firsts = table.iter().enumerate().filter(|(i, e)| {
        table[..*i].iter().all(|f| f.info.cni_args != e.info.cni_args)
    });
    for (_, entry) in firsts {
        let info = &entry.info;
        for command in [Command::Add, Command::Gc] {
            let env = CmdArgs {
                container_id: "ctr".into(),
                netns: "/run/netns/x".into(),
                ifname: "eth0".into(),
                args: "IgnoreUnknown=1;IP=10.0.0.2".into(),
                ..CmdArgs::default()
            };
            let _ = dispatch::prepare(info, cni_multi::cni::no_plugins, command, env, data);
        }
    }
});

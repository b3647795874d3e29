//! The floors' plugin: reads its config as a plugin does, prints an empty
//! result on ADD, nothing else. `bench/run.sh` links it statically, so its
//! exec costs what a static plugin's does before the plugin's own work.

use std::io::{Read, Write};

fn main() {
    let mut conf = Vec::new();
    let _ = std::io::stdin().read_to_end(&mut conf);
    if std::env::var_os("CNI_COMMAND").is_some_and(|c| c == "ADD") {
        let _ = std::io::stdout().write_all(br#"{"cniVersion":"1.0.0"}"#);
    }
}

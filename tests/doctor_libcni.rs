//! `cnitool doctor` on attachments a runtime made through Go's libcni 1.1
//! (Debian's, as containerd 1.6 and 1.7 carry it): its cache entries name no
//! netns, so they are judged from what the host shows. A leaked pod is found
//! and fixed, a live pod gives no finding, and one whose rules were flushed
//! is repaired.

mod harness;

use harness::{
    Netns, PinnedNetns, Runtime, cnitool_id, enter_test_host, first_ip, iptables_table, run_in,
    skip,
};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;

const NET: &str = "lc-net";

/// bench/libcni built against Debian's libcni source package (None when Go
/// or the package is missing).
fn driver() -> Option<PathBuf> {
    static BUILT: OnceLock<Option<PathBuf>> = OnceLock::new();
    BUILT
        .get_or_init(|| {
            let root = Path::new(env!("CARGO_MANIFEST_DIR"));
            let gopath = Path::new("/usr/share/gocode");
            if !gopath
                .join("src/github.com/containernetworking/cni/libcni")
                .is_dir()
            {
                return None;
            }
            let out = root.join("target/libcni-driver-test");
            let built = Command::new("go")
                .args(["build", "-o"])
                .arg(&out)
                .arg(".")
                .current_dir(root.join("bench/libcni"))
                .env("GO111MODULE", "off")
                .env("GOPATH", gopath)
                .env("GOCACHE", root.join("target/go-cache"))
                .status()
                .is_ok_and(|s| s.success());
            built.then_some(out)
        })
        .clone()
}

fn masq_chain(id: &str) -> String {
    harness::masq_chain(NET, id)
}

fn dnat_chain(id: &str) -> String {
    harness::dnat_chain(NET, id)
}

/// `libcni-driver VERB lc-net NETNS` with this setup; stdout.
fn libcni(driver: &Path, rt: &Runtime, verb: &str, netns: &str, port: u16) -> String {
    let caps = json!({"portMappings": [
        {"hostPort": port, "containerPort": 80, "protocol": "tcp"}]});
    let out = Command::new(driver)
        .args([verb, NET, netns])
        .env_clear()
        .env("NETCONFPATH", &rt.conf.0)
        .env("CNI_PATH", &rt.bin.0)
        .env("CNI_CACHE_DIR", &rt.cache.0)
        .env("CAP_ARGS", caps.to_string())
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .stdin(Stdio::null())
        .output()
        .expect("run the libcni driver");
    assert!(out.status.success(), "libcni {verb}: {out:?}");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn doctor(rt: &Runtime, args: &[&str], status: i32) -> Vec<Value> {
    let mut all = vec!["doctor", "--json", "--min-age", "0", "--repair-after", "1"];
    all.extend_from_slice(args);
    let out = rt.run(&all, &json!({}));
    assert_eq!(out.status, status, "{out:?}");
    out.json()["findings"]
        .as_array()
        .cloned()
        .unwrap_or_default()
}

#[test]
fn libcni_1_1_attachments_are_judged_fixed_and_repaired() {
    let test = "libcni_1_1_attachments_are_judged_fixed_and_repaired";
    enter_test_host();
    let Some(driver) = driver() else {
        skip(test, "Go or Debian's golang-github-appc-cni-dev is missing");
        return;
    };
    let rt = Runtime::new("lc");
    rt.write_list(
        "lc.conflist",
        &json!({
            "cniVersion": "1.0.0",
            "name": NET,
            "plugins": [
                {"type": "bridge", "bridge": "cni-lc0", "isGateway": true, "ipMasq": true,
                 "ipam": {"type": "host-local", "subnet": "10.71.0.0/24", "dataDir": "@STORE@"}},
                {"type": "portmap", "capabilities": {"portMappings": true},
                 "dataDir": "@STORE@/portmap"}
            ]
        }),
    );
    let (leaked, live) = (PinnedNetns::new(), Netns::new());
    let leaked_path = leaked.path().to_string();
    let (leaked_id, live_id) = (cnitool_id(leaked.path()), cnitool_id(live.path()));
    let leaked_ip = first_ip(
        &serde_json::from_str(&libcni(&driver, &rt, "add", leaked.path(), 18071)).expect("JSON"),
    );
    let live_ip = first_ip(
        &serde_json::from_str(&libcni(&driver, &rt, "add", live.path(), 18072)).expect("JSON"),
    );
    let entry = rt
        .cache
        .0
        .join("results")
        .join(format!("{NET}-{leaked_id}-eth0"));
    let cached: Value =
        serde_json::from_slice(&std::fs::read(&entry).expect("entry")).expect("entry JSON");
    assert!(
        cached.get("netns").is_none(),
        "libcni 1.1 caches no netns: {cached}"
    );

    // Both live: nothing to say.
    assert!(doctor(&rt, &[], 0).is_empty());

    // The first pod's runtime lost it: its namespace is gone, no DEL ran.
    leaked.destroy();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while run_in(None, "ip", &["-o", "link", "show", "master", "cni-lc0"])
        .lines()
        .count()
        > 1
    {
        assert!(
            std::time::Instant::now() < deadline,
            "veth outlives its netns"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let found = doctor(&rt, &[], 1);
    assert!(
        found
            .iter()
            .any(|f| f["kind"] == "cache" && f["containerId"] == leaked_id.as_str()),
        "{found:?}"
    );
    assert!(
        found.iter().all(|f| f["containerId"] != live_id.as_str()),
        "{found:?}"
    );
    let fixed = doctor(&rt, &["--fix"], 0);
    assert!(fixed.iter().all(|f| f["fixed"] == true), "{fixed:?}");
    let nat = iptables_table("nat");
    assert!(!nat.contains(&dnat_chain(&leaked_id)), "{nat}");
    assert!(!nat.contains(&masq_chain(&leaked_id)), "{nat}");
    assert!(!rt.store.0.join(NET).join(&leaked_ip).exists());
    assert!(!entry.exists(), "{leaked_path}");
    assert!(nat.contains(&dnat_chain(&live_id)), "{nat}");
    assert!(rt.store.0.join(NET).join(&live_ip).exists());

    // The live pod's rules are flushed: repaired like any other.
    run_in(None, "iptables", &["-t", "nat", "-F"]);
    run_in(None, "iptables", &["-t", "nat", "-X"]);
    let repaired = doctor(&rt, &["--fix"], 0);
    assert_eq!(
        repaired
            .iter()
            .filter(|f| f["kind"] == "repair" && f["fixed"] == true)
            .count(),
        2,
        "{repaired:?}"
    );
    let nat = iptables_table("nat");
    assert!(nat.contains(&dnat_chain(&live_id)), "{nat}");
    assert!(nat.contains(&masq_chain(&live_id)), "{nat}");
    assert!(doctor(&rt, &[], 0).is_empty());
    libcni(&driver, &rt, "del", live.path(), 18072);
}

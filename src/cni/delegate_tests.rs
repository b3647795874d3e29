use super::*;
use std::os::unix::fs::PermissionsExt;

/// A scratch directory removed on drop.
struct Scratch(PathBuf);

impl Scratch {
    fn new(tag: &str) -> Scratch {
        let dir =
            std::env::temp_dir().join(format!("cni-multi-delegate-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("scratch dir");
        Scratch(dir)
    }

    /// An executable script at `<dir>/<name>`.
    fn script(&self, name: &str, body: &str) -> PathBuf {
        let path = self.0.join(name);
        std::fs::write(&path, format!("#!/bin/sh\n{body}\n")).expect("write script");
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).expect("chmod");
        path
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn env_with_path(dirs: &[&Path]) -> CmdArgs {
    CmdArgs {
        container_id: "ctr-delegate".into(),
        netns: "/run/netns/cni-multi-delegate-test".into(),
        ifname: "eth1".into(),
        args: "IgnoreUnknown=1;K8S_POD_NAME=p".into(),
        path: dirs.iter().map(|d| d.to_path_buf()).collect(),
        netns_override: false,
    }
}

/// A fake IPAM plugin appending "<command> <ifname> <args>" to `log` and its
/// stdin to `log.stdin`, then printing a 0.4.0 result.
fn recording_plugin(dir: &Scratch, name: &str, log: &Path) -> PathBuf {
    dir.script(
        name,
        &format!(
            "echo \"$CNI_COMMAND $CNI_IFNAME $CNI_CONTAINERID $CNI_ARGS $CNI_PATH\" >> '{log}'\n\
             cat > '{log}.stdin'\n\
             echo 'to stderr' >&2\n\
             [ \"$CNI_COMMAND\" = ADD ] && printf '%s' '{{\"cniVersion\":\"0.4.0\",\"ips\":[{{\"version\":\"4\",\"address\":\"10.9.0.2/24\",\"gateway\":\"10.9.0.1\"}}]}}'\n\
             exit 0",
            log = log.display()
        ),
    )
}

const CONF: &[u8] = br#"{"cniVersion":"1.0.0","name":"dn","type":"bridge","ipam":{"type":"fake"}}"#;

#[test]
fn finds_the_first_regular_file_on_the_path() {
    let a = Scratch::new("find-a");
    let b = Scratch::new("find-b");
    std::fs::create_dir(a.0.join("p")).expect("dir named like the plugin");
    let in_b = b.script("p", "exit 0");
    assert_eq!(find_in_path("p", &[a.0.clone(), b.0.clone()]), Ok(in_b));
    let e = find_in_path("q", std::slice::from_ref(&a.0)).expect_err("absent");
    assert_eq!(
        e.msg,
        format!("failed to find plugin \"q\" in path [{}]", a.0.display())
    );
    assert!(find_in_path("p", &[]).is_err());
    let env = env_with_path(&[&a.0]);
    assert_eq!(Delegate::new("", &env, CONF).err().map(|e| e.code), Some(7));
    assert_eq!(
        Delegate::new("../x", &env, CONF).err().map(|e| e.code),
        Some(7)
    );
}

#[test]
fn exec_passes_env_and_stdin_and_decodes_the_result() {
    let dir = Scratch::new("exec");
    let log = dir.0.join("log");
    recording_plugin(&dir, "fake", &log);
    let env = env_with_path(&[&dir.0]);
    let delegate = Delegate::new("fake", &env, CONF).expect("valid");
    let result = delegate.add().expect("add");
    assert_eq!(result.cni_version, "1.1.0");
    assert_eq!(result.ips[0].address.to_string(), "10.9.0.2/24");
    delegate.check().expect("check");
    delegate.del().expect("del");
    let calls = std::fs::read_to_string(&log).expect("log");
    let path = dir.0.display();
    assert_eq!(
        calls,
        format!(
            "ADD eth1 ctr-delegate IgnoreUnknown=1;K8S_POD_NAME=p {path}\n\
             CHECK eth1 ctr-delegate IgnoreUnknown=1;K8S_POD_NAME=p {path}\n\
             DEL eth1 ctr-delegate IgnoreUnknown=1;K8S_POD_NAME=p {path}\n"
        )
    );
    assert_eq!(
        std::fs::read(format!("{}.stdin", log.display())).ok(),
        Some(CONF.to_vec())
    );
}

#[test]
fn failures_are_decoded_as_libcni_does() {
    let dir = Scratch::new("fail");
    let env = env_with_path(&[&dir.0]);
    dir.script(
        "typed",
        "printf '%s' '{\"code\":11,\"msg\":\"busy\",\"details\":\"d\"}'; exit 1",
    );
    let e = Delegate::new("typed", &env, CONF)
        .expect("valid")
        .invoke(Command::Add);
    assert_eq!(e, Err(Error::from_wire(11, "busy", "d")));
    dir.script("silent", "exit 3");
    let e = Delegate::new("silent", &env, CONF)
        .expect("valid")
        .invoke(Command::Del);
    assert_eq!(
        e.map_err(|e| e.msg),
        Err("netplugin failed with no error message: exit status: 3".into())
    );
    dir.script("grumbling", "echo 'no \"bridge\"' >&2; exit 2");
    let e = Delegate::new("grumbling", &env, CONF)
        .expect("valid")
        .invoke(Command::Del);
    assert_eq!(
        e.map_err(|e| e.msg),
        Err("netplugin failed: \"no \\\"bridge\\\"\\n\": exit status: 2".into())
    );
    dir.script("garbled", "echo oops; exit 1");
    let e = Delegate::new("garbled", &env, CONF)
        .expect("valid")
        .invoke(Command::Del);
    assert!(
        e.as_ref().is_err_and(|e| e
            .msg
            .starts_with("netplugin failed but error parsing its diagnostic message \"oops\\n\"")),
        "{e:?}"
    );
    dir.script("nothing", "exit 0");
    assert!(
        Delegate::new("nothing", &env, CONF)
            .expect("valid")
            .add()
            .is_err()
    );
}

/// A plugin's delegate that fails is named in the error, code and details
/// kept: under bridge, a host-local failure says host-local.
#[test]
fn a_failing_delegate_is_named() {
    let dir = Scratch::new("named");
    let env = env_with_path(&[&dir.0]);
    dir.script(
        "host-local",
        "printf '%s' '{\"code\":7,\"msg\":\"invalid CIDR address: 10.300.0.0/24\",\"details\":\"key ipam.subnet\"}'; exit 1",
    );
    let d = Delegate::new("host-local", &env, CONF).expect("valid");
    let want = |verb: &str| {
        Error::from_wire(
            7,
            format!(
                "plugin type=\"host-local\" failed ({verb}): invalid CIDR address: 10.300.0.0/24"
            ),
            "key ipam.subnet",
        )
    };
    assert_eq!(d.add().err(), Some(want("add")));
    assert_eq!(d.del().err(), Some(want("del")));
    assert_eq!(d.check().err(), Some(want("check")));
    // Not finding the plugin is said once, not wrapped.
    let e = Delegate::new("nope", &env, CONF).expect("valid").add();
    assert!(
        e.as_ref()
            .is_err_and(|e| e.msg.starts_with("failed to find plugin \"nope\"")),
        "{e:?}"
    );
}

#[test]
fn rollback_deletes_unless_kept() {
    let dir = Scratch::new("rollback");
    let log = dir.0.join("log");
    recording_plugin(&dir, "fake", &log);
    let env = env_with_path(&[&dir.0]);
    let delegate = Delegate::new("fake", &env, CONF).expect("valid");
    {
        let (_result, _guard) = delegate.add_guarded().expect("add");
        // A later step fails: the guard goes out of scope armed.
    }
    let (_result, guard) = delegate.add_guarded().expect("add");
    guard.keep();
    let commands: Vec<String> = std::fs::read_to_string(&log)
        .expect("log")
        .lines()
        .map(|l| l.split(' ').next().unwrap_or_default().to_string())
        .collect();
    assert_eq!(commands, ["ADD", "DEL", "ADD"]);
}

/// A plugin of "this binary" for the in-process test: counts its ADDs and DELs
/// and answers ADD with one address.
struct Counting;

static IN_PROCESS_CALLS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

impl crate::cni::Plugin for Counting {
    fn validate(&self, _inv: &Invocation) -> CniResult<()> {
        Ok(())
    }
    fn add(&self, inv: &Invocation) -> CniResult<NetResult> {
        IN_PROCESS_CALLS.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        assert_eq!(inv.env.ifname, "eth1", "the caller's environment");
        let mut r = NetResult::new();
        r.ips.push(crate::cni::result::IpConfig {
            interface: None,
            address: "10.77.0.2/24".parse().expect("address"),
            gateway: None,
        });
        Ok(r)
    }
    fn del(&self, _inv: &Invocation) -> CniResult<()> {
        IN_PROCESS_CALLS.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        Ok(())
    }
    fn check(&self, _inv: &Invocation) -> CniResult<()> {
        Ok(())
    }
}

static COUNTING: crate::cni::PluginInfo = crate::cni::PluginInfo {
    name: "counting",
    summary: "test plugin",
    cni_args: crate::cni::ArgsPolicy::Ignored,
    plugin: &Counting,
};

fn lookup_counting(name: &str) -> Option<&'static crate::cni::PluginInfo> {
    (name == "counting").then_some(&COUNTING)
}

/// The delegate found on CNI_PATH is a symlink to "this binary" (here a recording
/// script standing in for it) and the injected plugin table knows its type: it
/// runs in-process, so the script never runs. A copy of the same script is
/// another file, and without the table nothing runs in-process: both are exec'd.
#[test]
fn this_binary_runs_in_process_and_other_files_are_exec_d() {
    let bin = Scratch::new("inproc-bin");
    let linked = Scratch::new("inproc-linked");
    let copied = Scratch::new("inproc-copied");
    let log = bin.0.join("log");
    let this_binary = recording_plugin(&bin, "cni-multi", &log);
    std::os::unix::fs::symlink(&this_binary, linked.0.join("counting")).expect("symlink");
    std::fs::copy(&this_binary, copied.0.join("counting")).expect("copy");

    let conf =
        br#"{"cniVersion":"1.0.0","name":"inproc","type":"bridge","ipam":{"type":"counting"}}"#;
    let env = env_with_path(&[&linked.0]);
    let mut delegate = Delegate::new("counting", &env, conf)
        .expect("valid")
        .in_process(lookup_counting);
    delegate.this_binary = this_binary.clone();
    let result = delegate.add().expect("in-process add");
    assert_eq!(result.ips[0].address.to_string(), "10.77.0.2/24");
    delegate.del().expect("in-process del");
    assert_eq!(
        IN_PROCESS_CALLS.load(std::sync::atomic::Ordering::SeqCst),
        2
    );
    assert!(!log.exists(), "no process was started");

    // The same link, but no plugin table handed down: exec'd.
    let mut delegate = Delegate::new("counting", &env, conf).expect("valid");
    delegate.this_binary = this_binary.clone();
    let result = delegate.add().expect("exec add");
    assert_eq!(result.ips[0].address.to_string(), "10.9.0.2/24");
    assert!(log.exists(), "the link was exec'd");
    std::fs::remove_file(&log).expect("log");

    let env = env_with_path(&[&copied.0]);
    let mut delegate = Delegate::new("counting", &env, conf)
        .expect("valid")
        .in_process(lookup_counting);
    delegate.this_binary = this_binary.clone();
    let result = delegate.add().expect("exec add");
    assert_eq!(result.ips[0].address.to_string(), "10.9.0.2/24");
    assert!(log.exists(), "the copy was exec'd");
    assert_eq!(
        IN_PROCESS_CALLS.load(std::sync::atomic::Ordering::SeqCst),
        2
    );
    std::fs::remove_file(&log).expect("log");

    // A plugin stub (what `cni-multi install` lays out) running this binary
    // counts as this binary: in-process too.
    let stubbed = Scratch::new("inproc-stubbed");
    let text = crate::cni::stub::text(this_binary.to_str().expect("utf-8")).expect("stub");
    std::fs::write(stubbed.0.join("counting"), text).expect("stub");
    let env = env_with_path(&[&stubbed.0]);
    let mut delegate = Delegate::new("counting", &env, conf)
        .expect("valid")
        .in_process(lookup_counting);
    delegate.this_binary = this_binary;
    delegate.add().expect("in-process add");
    assert_eq!(
        IN_PROCESS_CALLS.load(std::sync::atomic::Ordering::SeqCst),
        3
    );
    assert!(!log.exists(), "no process was started");
}

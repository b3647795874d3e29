//! Shell completion as the shells run it: the script `cnitool completion`
//! prints, sourced, and its function called with COMP_WORDS/COMP_CWORD as
//! bash sets them. `cni-multi <TAB>` offers cni-multi's own commands; network
//! names come from the config directory and named namespaces from /run/netns.

use crate::harness;

use harness::{BIN, TempDir};
use std::process::Command;

/// `cni-multi cnitool completion SHELL`.
fn script(shell: &str) -> String {
    let out = Command::new(BIN)
        .args(["cnitool", "completion", shell])
        .output()
        .expect("completion");
    assert!(out.status.success(), "{out:?}");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// What bash offers for `line` (words split on spaces, the cursor at its
/// end): the function the script registers for the line's first word,
/// called as bash calls it, with `env` exported.
fn bash_offers(file: &std::path::Path, line: &str, env: &[(&str, &str)]) -> Vec<String> {
    let mut words: Vec<String> = line.split(' ').map(|w| format!("'{w}'")).collect();
    if line.ends_with(' ') {
        words.pop();
        words.push("''".into());
    }
    let cword = words.len() - 1;
    let program = line.split(' ').next().unwrap_or_default();
    let call = format!(
        ". '{}'\n\
         f=$(complete -p {program} | sed -n 's/.* -F \\([^ ]*\\) .*/\\1/p')\n\
         COMP_WORDS=({}); COMP_CWORD={cword}; COMP_LINE='{line}'; COMP_POINT=${{#COMP_LINE}}\n\
         \"$f\"\n\
         printf '%s\\n' \"${{COMPREPLY[@]}}\"",
        file.display(),
        words.join(" ")
    );
    let out = Command::new("bash")
        .arg("-c")
        .arg(call)
        .env_clear()
        .envs(env.iter().copied())
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .output()
        .expect("bash");
    assert!(out.status.success(), "{out:?}");
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter(|l| !l.is_empty())
        .map(str::to_string)
        .collect()
}

#[test]
fn every_shell_gets_a_script_it_parses() {
    let dir = TempDir::new("completion");
    for shell in ["bash", "zsh", "fish"] {
        let text = script(shell);
        assert!(text.contains("__complete"), "{shell}: {text}");
        let file = dir.0.join(format!("cnitool.{shell}"));
        std::fs::write(&file, &text).expect("write script");
        match Command::new(shell).arg("-n").arg(&file).output() {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                assert_ne!(shell, "bash", "bash must be installed");
                eprintln!("{shell} absent: its script is not syntax-checked");
            }
            Err(e) => panic!("{shell} -n: {e}"),
            Ok(o) => assert!(
                o.status.success(),
                "{shell} -n rejects the script: {}",
                String::from_utf8_lossy(&o.stderr)
            ),
        }
    }
    let tcsh = Command::new(BIN)
        .args(["cnitool", "completion", "tcsh"])
        .output()
        .expect("completion");
    assert_ne!(tcsh.status.code(), Some(0));
}

#[test]
fn cni_multi_completes_its_own_commands_then_cnitool_s() {
    let dir = TempDir::new("completion");
    let file = dir.0.join("cni-multi.bash");
    std::fs::write(&file, script("bash")).expect("write script");
    let top = bash_offers(&file, "cni-multi ", &[]);
    for first in [
        "cnitool",
        "install",
        "flanneld",
        "dhcp",
        "bridge",
        "host-local",
    ] {
        assert!(
            top.iter().any(|w| w == first),
            "cni-multi <TAB> lacks {first}: {top:?}"
        );
    }
    assert!(
        !top.iter().any(|w| w == "add" || w == "doctor"),
        "cni-multi <TAB> offers cnitool's subcommands: {top:?}"
    );
    assert_eq!(
        bash_offers(&file, "cni-multi i", &[]),
        ["install", "ipvlan"]
    );
    assert_eq!(bash_offers(&file, "cni-multi dhcp ", &[]), ["daemon"]);
    assert!(bash_offers(&file, "cni-multi install --dr", &[]) == ["--dry-run"]);
    assert_eq!(
        bash_offers(&file, "cni-multi cnitool st", &[]),
        ["status", "status-of"]
    );
    assert_eq!(
        bash_offers(&file, "cnitool st", &[]),
        ["status", "status-of"]
    );
    let netns = bash_offers(&file, "cni-multi cnitool netns ", &[]);
    assert_eq!(netns, ["add", "del", "list", "exec"]);
    assert!(bash_offers(&file, "cnitool completion ", &[]) == ["bash", "zsh", "fish"]);
    assert!(
        bash_offers(&file, "cni-multi cnitool --conf-dir /x add --cache-d", &[]) == ["--cache-dir"]
    );
}

#[test]
fn network_and_netns_names_complete_where_they_are_arguments() {
    let dir = TempDir::new("completion");
    let file = dir.0.join("cni-multi.bash");
    std::fs::write(&file, script("bash")).expect("write script");
    let conf = dir.0.join("net.d");
    std::fs::create_dir(&conf).expect("mkdir");
    std::fs::copy("testdata/bridge.conflist", conf.join("10-bridge.conflist")).expect("copy");
    std::fs::copy("testdata/ptp.conflist", conf.join("20-ptp.conflist")).expect("copy");
    std::fs::write(conf.join("30-broken.conf"), "{").expect("write");
    let c = conf.to_string_lossy().into_owned();
    let env = [("NETCONFPATH", c.as_str())];
    assert_eq!(
        bash_offers(&file, "cni-multi cnitool add ", &env),
        ["bridge-net", "ptp-net"]
    );
    assert_eq!(
        bash_offers(&file, "cni-multi cnitool del p", &env),
        ["ptp-net"]
    );
    assert_eq!(
        bash_offers(&file, &format!("cnitool --conf-dir {c} status b"), &[]),
        ["bridge-net"]
    );
    assert_eq!(bash_offers(&file, "cnitool validate ", &env).len(), 2);
    let named = dir.0.join("netns");
    std::fs::create_dir(&named).expect("mkdir");
    for pod in ["pod-a", "pod-b"] {
        std::fs::write(named.join(pod), "").expect("write");
    }
    let n = named.to_string_lossy().into_owned();
    assert_eq!(
        bash_offers(
            &file,
            &format!("cni-multi cnitool netns --dir {n} del "),
            &[]
        ),
        ["pod-a", "pod-b"]
    );
    assert_eq!(
        bash_offers(&file, &format!("cnitool netns --dir={n} del pod-b"), &[]),
        ["pod-b"]
    );
    // The netns of add/check/del: the names under /run/netns (a name there is
    // what cnitool takes), seen in a mount namespace of this thread's own.
    nix::sched::unshare(nix::sched::CloneFlags::CLONE_NEWNS).expect("unshare mount ns");
    let private = nix::mount::MsFlags::MS_REC | nix::mount::MsFlags::MS_PRIVATE;
    nix::mount::mount(None::<&str>, "/", None::<&str>, private, None::<&str>).expect("private /");
    nix::mount::mount(
        Some("tmpfs"),
        "/run",
        Some("tmpfs"),
        nix::mount::MsFlags::empty(),
        None::<&str>,
    )
    .expect("tmpfs on /run");
    std::fs::create_dir("/run/netns").expect("mkdir /run/netns");
    std::fs::write("/run/netns/demo", "").expect("write");
    assert_eq!(
        bash_offers(&file, "cni-multi cnitool add bridge-net ", &env),
        ["demo"]
    );
    assert_eq!(bash_offers(&file, "cnitool netns del ", &env), ["demo"]);
}

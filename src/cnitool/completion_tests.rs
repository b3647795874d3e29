use super::*;
use clap::ArgAction;

fn sample() -> Command {
    Command::new("cnitool")
        .arg(
            Arg::new("conf_dir")
                .long("conf-dir")
                .global(true)
                .help("It's a dir"),
        )
        .arg(Arg::new("quiet").long("quiet").action(ArgAction::SetTrue))
        .subcommand(
            Command::new("add")
                .about("Add it")
                .arg(Arg::new("net"))
                .arg(Arg::new("netns")),
        )
        .subcommand(
            Command::new("netns")
                .arg(Arg::new("dir").long("dir").global(true))
                .subcommand(Command::new("add").arg(Arg::new("name")))
                .subcommand(Command::new("del").arg(Arg::new("name")))
                .arg(Arg::new("v").short('v').action(ArgAction::SetTrue)),
        )
        .subcommand(
            Command::new("completion").arg(Arg::new("shell").value_parser(["bash", "zsh", "fish"])),
        )
}

fn words(of: &str) -> Vec<String> {
    let mut w: Vec<String> = of.split(' ').map(str::to_string).collect();
    if of.ends_with(' ') {
        w.pop();
        w.push(String::new());
    }
    w
}

fn complete(line: &str, env: &[(&str, &str)]) -> Vec<String> {
    let getenv = |k: &str| {
        env.iter()
            .find(|(n, _)| *n == k)
            .map(|(_, v)| v.to_string())
    };
    candidates(sample(), &words(line), &getenv)
        .into_iter()
        .map(|c| c.split('\t').next().unwrap_or_default().to_string())
        .collect()
}

#[test]
fn words_walk_the_tree_and_flags_and_their_values_are_skipped() {
    assert_eq!(complete("cnitool ", &[]), ["add", "netns", "completion"]);
    assert_eq!(complete("cnitool --quiet ne", &[]), ["netns"]);
    assert_eq!(complete("cnitool --conf-dir /x ne", &[]), ["netns"]);
    assert_eq!(complete("cnitool --conf-dir = /x ne", &[]), ["netns"]);
    assert_eq!(complete("cnitool netns ", &[]), ["add", "del"]);
    assert_eq!(
        complete("cnitool netns -", &[]),
        ["--dir", "-v", "--conf-dir", "--help", "-h"]
    );
    assert_eq!(complete("cnitool completion z", &[]), ["zsh"]);
    assert_eq!(complete("cnitool completion --", &[])[0], "--conf-dir");
    // A flag's value: nothing fixed to offer, so the shell's files.
    assert!(complete("cnitool --conf-dir ", &[]).is_empty());
    let described = candidates(sample(), &words("cnitool a"), &|_| None);
    assert_eq!(described, ["add\tAdd it"]);
}

#[test]
fn networks_and_named_namespaces_complete_where_they_are_arguments() {
    let dir = std::env::temp_dir().join(format!("cni-multi-completion-{}", std::process::id()));
    let (conf, ns) = (dir.join("conf"), dir.join("ns"));
    for d in [&conf, &ns] {
        std::fs::create_dir_all(d).expect("mkdir");
    }
    let write = |p: PathBuf, text: &str| std::fs::write(p, text).expect("write");
    write(
        conf.join("10-a.conflist"),
        r#"{"cniVersion":"1.0.0","name":"alpha","plugins":[{"type":"bridge"}]}"#,
    );
    write(
        conf.join("20-b.conf"),
        r#"{"cniVersion":"1.0.0","name":"beta","type":"ptp"}"#,
    );
    write(conf.join("30-broken.conf"), "{");
    write(ns.join("pod1"), "");
    let c = conf.to_string_lossy().into_owned();
    let n = ns.to_string_lossy().into_owned();
    assert_eq!(
        complete("cnitool add ", &[("NETCONFPATH", &c)]),
        ["alpha", "beta"]
    );
    assert_eq!(
        complete(&format!("cnitool --conf-dir {c} add b"), &[]),
        ["beta"]
    );
    assert_eq!(
        complete(&format!("cnitool add --conf-dir={c} a"), &[]),
        ["alpha"]
    );
    assert_eq!(
        complete(&format!("cnitool add --conf-dir={c}"), &[]),
        Vec::<String>::new()
    );
    assert_eq!(
        complete(
            &format!("cnitool --conf-dir {c} add alpha x --conf-dir={c}"),
            &[]
        ),
        Vec::<String>::new()
    );
    assert_eq!(
        complete(&format!("cnitool netns --dir {n} del "), &[]),
        ["pod1"]
    );
    assert!(complete(&format!("cnitool netns --dir {n} add "), &[]).is_empty());
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn the_scripts_quote_the_binary() {
    let bash = script(Shell::Bash, "/opt/it's/cni-multi");
    assert!(
        bash.contains(r"local bin='/opt/it'\''s/cni-multi'"),
        "{bash}"
    );
    for shell in [Shell::Bash, Shell::Zsh, Shell::Fish] {
        assert!(script(shell, "/x").contains("__complete"));
    }
}

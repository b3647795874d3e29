//! The plugin table and the subcommand table are the only lists: a row added
//! to either reaches every consumer (dispatch, `--help`, `--list` and so the
//! symlinks, the clap tree, fuzzing's decoding, the doctor).

use super::table::{Route, SUBCOMMANDS, Subcommand, route};
use super::{commands, names, usage};
use crate::cni::{ArgsPolicy, NetConf, PluginInfo};
use crate::cnitool::doctor::kinds;
use crate::libcni::conf::PluginConf;
use crate::plugins::footprint::Footprint;
use crate::plugins::{Entry, Files, PLUGINS, Repair, STATELESS, State, decode_with};
use std::ffi::OsString;

fn fake_decode(_: &NetConf) -> usize {
    1000
}

fn fake_keys(raw: &serde_json::Map<String, serde_json::Value>, f: &mut Footprint) {
    f.bridge = raw
        .get("fakeBridge")
        .and_then(|v| v.as_str())
        .map(str::to_string);
}

fn fake_main(args: Vec<OsString>) -> i32 {
    i32::try_from(args.len()).unwrap_or(-1)
}

fn with_fake() -> Vec<Entry> {
    let fake = Entry {
        info: PluginInfo {
            name: "fake",
            summary: "a plugin only this test knows",
            cni_args: ArgsPolicy::Ignored,
            plugin: PLUGINS[0].info.plugin,
        },
        decode: fake_decode,
        state: State {
            data_dir: Some("/run/cni/fake"),
            files: Files::Records,
            keys: fake_keys,
            repair: Repair::OwnVerbs { nat: None },
            ..STATELESS
        },
    };
    PLUGINS.iter().copied().chain([fake]).collect()
}

const FAKE_TOOL: Subcommand = Subcommand {
    words: &["fake-tool"],
    as_link: true,
    daemon: false,
    help: "a subcommand only this test knows",
    command: || clap::Command::new("fake-tool"),
    main: fake_main,
};

fn args(words: &[&str]) -> Vec<OsString> {
    words.iter().map(OsString::from).collect()
}

#[test]
fn a_plugin_added_to_the_table_reaches_every_consumer() {
    let table = with_fake();
    // Dispatch, by link name and by first argument.
    for (invoked, argv) in [
        ("fake", args(&["/opt/cni/bin/fake"])),
        ("cni-multi", args(&["cni-multi", "fake"])),
    ] {
        match route(&table, SUBCOMMANDS, invoked, &argv) {
            Route::Plugin(e) => assert_eq!(e.name(), "fake"),
            _ => panic!("{invoked}: not routed to the fake plugin"),
        }
    }
    // --list (symlinks.sh links what it prints), --help, the clap tree.
    assert!(names(&table).contains(&"fake"));
    assert!(!names(PLUGINS).contains(&"fake"));
    assert!(usage(&table, SUBCOMMANDS).contains("a plugin only this test knows"));
    let top = commands::top_of(&table, SUBCOMMANDS);
    assert!(top.find_subcommand("fake").is_some());
    // Fuzzing's decoding of every plugin's keys.
    let conf = NetConf::parse(br#"{"cniVersion":"1.0.0","name":"n","type":"fake"}"#)
        .unwrap_or_else(|e| panic!("{}", e.msg));
    assert_eq!(
        decode_with(&table, &conf),
        decode_with(PLUGINS, &conf) + 1000
    );
    // The doctor: its footprint and the kinds of finding that judge it.
    let raw = serde_json::json!({"type": "fake", "fakeBridge": "br-fake"});
    let p = PluginConf {
        plugin_type: "fake".into(),
        raw: raw.as_object().cloned().unwrap_or_default(),
    };
    let f = Footprint::in_table(&table, &p);
    assert_eq!(
        f.data_dir.as_deref(),
        Some(std::path::Path::new("/run/cni/fake"))
    );
    assert_eq!(f.bridge.as_deref(), Some("br-fake"));
    assert_eq!(kinds::of(&f), ["record", "tmp", "repair"]);
    assert_eq!(Footprint::of(&p), Footprint::default());
}

#[test]
fn a_subcommand_added_to_the_table_reaches_every_consumer() {
    let subs: Vec<Subcommand> = SUBCOMMANDS.iter().map(copy).chain([FAKE_TOOL]).collect();
    for (invoked, argv, rest) in [
        ("fake-tool", args(&["/usr/bin/fake-tool", "-x"]), 2),
        ("cni-multi", args(&["cni-multi", "fake-tool", "-x"]), 2),
    ] {
        match route(PLUGINS, &subs, invoked, &argv) {
            Route::Subcommand(s, a) => {
                assert_eq!(s.words, ["fake-tool"]);
                assert_eq!((s.main)(a), rest);
            }
            _ => panic!("{invoked}: not routed to the fake subcommand"),
        }
    }
    assert!(usage(PLUGINS, &subs).contains("  cni-multi fake-tool ...  a subcommand only"));
    assert!(
        commands::top_of(PLUGINS, &subs)
            .find_subcommand("fake-tool")
            .is_some()
    );
}

/// argv[0], argv, the subcommand's words, the arguments it is handed.
type Case<'a> = (&'a str, &'a [&'a str], &'a [&'a str], &'a [&'a str]);

#[test]
fn the_subcommands_route_as_before() {
    let cases: [Case; 6] = [
        (
            "cnitool",
            &["/bin/cnitool", "ls"],
            &["cnitool"],
            &["/bin/cnitool", "ls"],
        ),
        (
            "x",
            &["x", "cnitool", "ls"],
            &["cnitool"],
            &["cnitool", "ls"],
        ),
        (
            "x",
            &["x", "install", "-v"],
            &["install"],
            &["install", "-v"],
        ),
        (
            "dhcp",
            &["dhcp", "daemon", "-h"],
            &["dhcp", "daemon"],
            &["daemon", "-h"],
        ),
        (
            "x",
            &["x", "dhcp", "daemon", "-h"],
            &["dhcp", "daemon"],
            &["daemon", "-h"],
        ),
        (
            "flanneld",
            &["flanneld", "-h"],
            &["flanneld"],
            &["flanneld", "-h"],
        ),
    ];
    for (invoked, argv, words, handed) in cases {
        match route(PLUGINS, SUBCOMMANDS, invoked, &args(argv)) {
            Route::Subcommand(s, a) => {
                assert_eq!(s.words, words);
                assert_eq!(a, args(handed));
            }
            _ => panic!("{argv:?}: not a subcommand"),
        }
    }
    // --help's lines as they were.
    let help = usage(PLUGINS, SUBCOMMANDS);
    assert!(help.contains("\n  cni-multi cnitool ...    add/check/del/gc/status/list/validate"));
    assert!(help.contains("\n  cni-multi dhcp daemon ... the dhcp plugin's lease daemon"));
    // `install` is no link name; a plain `dhcp` is the plugin.
    assert!(matches!(
        route(PLUGINS, SUBCOMMANDS, "install", &args(&["install"])),
        Route::Own
    ));
    assert!(matches!(
        route(PLUGINS, SUBCOMMANDS, "dhcp", &args(&["dhcp"])),
        Route::Plugin(_)
    ));
}

fn copy(s: &Subcommand) -> Subcommand {
    Subcommand { ..*s }
}

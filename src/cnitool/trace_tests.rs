use super::*;
use crate::cni::env::Command;
use std::ffi::OsString;
use std::path::Path;
use std::time::Duration;

#[test]
fn a_run_shows_env_stdin_status_output_and_time() {
    let env: Vec<(&'static str, OsString)> =
        vec![("CNI_COMMAND", "ADD".into()), ("CNI_ARGS", OsString::new())];
    let text = start(
        "1.2",
        &Event::Start {
            plugin: "bridge",
            path: Path::new("/opt/cni/bin/bridge"),
            in_process: false,
            command: Command::Add,
            env: &env,
            stdin: b"{\"type\":\"bridge\"}",
        },
    );
    assert_eq!(
        text,
        "cnitool: trace [1.2] bridge ADD: exec /opt/cni/bin/bridge\n    \
             CNI_COMMAND=ADD\n    CNI_ARGS (unset)\n    stdin:\n      {\"type\":\"bridge\"}\n"
    );
    let text = end(
        "1",
        &Event::End {
            plugin: "bridge",
            command: Command::Del,
            status: "exit status: 3".into(),
            stdout: "",
            stderr: Some(b"oops\nagain\n"),
            elapsed: Duration::from_micros(1500),
        },
    );
    assert_eq!(
        text,
        "cnitool: trace [1] bridge DEL: exit status: 3 after 1.5 ms\n    \
             stdout: (none)\n    stderr:\n      oops\n      again\n"
    );
}

#[test]
fn runs_are_numbered_by_nesting() {
    let env = Vec::new();
    let s = |plugin| Event::Start {
        plugin,
        path: Path::new("/x"),
        in_process: true,
        command: Command::Add,
        env: &env,
        stdin: b"",
    };
    let e = |plugin| Event::End {
        plugin,
        command: Command::Add,
        status: String::new(),
        stdout: "",
        stderr: None,
        elapsed: Duration::ZERO,
    };
    let labels = std::cell::RefCell::new(Vec::new());
    let seen = |ev: &Event| {
        trace(ev);
        FRAMES.with(|f| labels.borrow_mut().push(label(&f.borrow().0)));
    };
    for ev in [
        s("a"),
        s("ipam"),
        e("ipam"),
        e("a"),
        s("b"),
        s("ipam"),
        e("ipam"),
    ] {
        seen(&ev);
    }
    seen(&e("b"));
    assert_eq!(
        labels.into_inner(),
        ["1", "1.1", "1", "", "2", "2.1", "2", ""]
    );
}

//! bridge `macspoofchk: true` end to end in throwaway namespaces: the
//! reference's `bridge nat` ruleset, frames with a foreign source MAC dropped
//! and the container's own passing, DEL (twice, and with the table gone), a
//! failed ADD undone, GC of attachments not in the valid list.

use crate::harness;

use harness::{Call, Netns, TempDir, enter_test_host, in_netns, plugin_dir, run_in, skip};
use nix::libc;
use serde_json::{Value, json};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::time::{Duration, Instant};

fn conf(bridge: &str, store: &TempDir, subnet: &str) -> Value {
    json!({
        "cniVersion": "1.1.0",
        "name": format!("spoof-{bridge}"),
        "type": "bridge",
        "bridge": bridge,
        "macspoofchk": true,
        "ipam": {"type": "host-local", "subnet": subnet, "dataDir": store.0}
    })
}

fn call(cmd: &str, ns: &Netns, id: &str, conf: &Value, bin: &TempDir) -> Call {
    Call::new("bridge", cmd, ns.path(), &conf.to_string())
        .set("CNI_CONTAINERID", id)
        .path(bin)
}

fn gc(conf: &Value, valid: Value, bin: &TempDir) {
    let mut c = conf.clone();
    c["cni.dev/valid-attachments"] = valid;
    Call::new("bridge", "GC", "", &c.to_string())
        .unset("CNI_CONTAINERID")
        .unset("CNI_IFNAME")
        .unset("CNI_NETNS")
        .path(bin)
        .run()
        .ok();
}

/// `nft list table bridge nat` of the test host, or "" without the table.
fn bridge_nat() -> String {
    let out = std::process::Command::new("nft")
        .args(["list", "table", "bridge", "nat"])
        .output()
        .expect("run nft");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Whether the kernel has nf_tables for the bridge family (else: why not).
fn bridge_family() -> Result<(), String> {
    let out = std::process::Command::new("nft")
        .args(["add", "table", "bridge", "cni_multi_probe"])
        .output()
        .map_err(|e| format!("nft: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "no nf_tables bridge family: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    run_in(
        None,
        "nft",
        &["delete", "table", "bridge", "cni_multi_probe"],
    );
    Ok(())
}

/// The host veth and container MAC of an ADD result.
fn attachment(result: &Value) -> (String, String) {
    let host = result["interfaces"][1]["name"].as_str().expect("host veth");
    let mac = result["interfaces"][2]["mac"]
        .as_str()
        .expect("container mac");
    (host.to_string(), mac.to_string())
}

/// What the reference's go-nft configuration of one ADD says, as nft commands.
fn reference_script(id: &str, host: &str, mac: &str) -> String {
    let c = format!("comment \"macspoofchk-{id}\"");
    format!(
        "add table bridge nat\n\
         add chain bridge nat PREROUTING {{ type filter hook prerouting priority -300; policy accept; }}\n\
         add chain bridge nat cni-br-iface-{id}\n\
         add chain bridge nat cni-br-iface-{id}-mac\n\
         flush chain bridge nat cni-br-iface-{id}\n\
         flush chain bridge nat cni-br-iface-{id}-mac\n\
         add rule bridge nat PREROUTING iifname \"{host}\" jump cni-br-iface-{id} {c}\n\
         add rule bridge nat cni-br-iface-{id} jump cni-br-iface-{id}-mac {c}\n\
         add rule bridge nat cni-br-iface-{id}-mac ether saddr {mac} return {c}\n\
         add rule bridge nat cni-br-iface-{id}-mac drop {c}\n"
    )
}

const ETHERTYPE: u16 = 0x88b5; // IEEE local experimental: no stack answers it

/// A raw packet socket on `ifname` of the calling thread's namespace.
fn packet_socket(ifname: &str) -> OwnedFd {
    let index = nix::net::if_::if_nametoindex(ifname).expect("ifindex");
    // SAFETY: plain socket(2); the result is checked before it is owned.
    let fd = unsafe {
        libc::socket(
            libc::AF_PACKET,
            libc::SOCK_RAW,
            i32::from(ETHERTYPE.to_be()),
        )
    };
    assert!(
        fd >= 0,
        "AF_PACKET socket: {}",
        std::io::Error::last_os_error()
    );
    // SAFETY: fd is a fresh descriptor nothing else owns.
    let fd = unsafe { OwnedFd::from_raw_fd(fd) };
    // SAFETY: sockaddr_ll is plain data; all zero is a valid value.
    let mut addr: libc::sockaddr_ll = unsafe { std::mem::zeroed() };
    addr.sll_family = libc::AF_PACKET as u16;
    addr.sll_protocol = ETHERTYPE.to_be();
    addr.sll_ifindex = index as i32;
    // SAFETY: addr is a valid sockaddr_ll and its size is passed with it.
    let rc = unsafe {
        libc::bind(
            fd.as_raw_fd(),
            (&addr as *const libc::sockaddr_ll).cast(),
            std::mem::size_of::<libc::sockaddr_ll>() as u32,
        )
    };
    assert_eq!(rc, 0, "bind: {}", std::io::Error::last_os_error());
    fd
}

fn parse_mac(s: &str) -> [u8; 6] {
    let v: Vec<u8> = s
        .split(':')
        .map(|b| u8::from_str_radix(b, 16).expect("mac byte"))
        .collect();
    v.try_into().expect("6 bytes")
}

/// Sends one frame `src` → `dst` of ETHERTYPE carrying `tag` out of `ifname` in `ns`.
fn send_frame(ns: &Netns, ifname: &'static str, dst: [u8; 6], src: [u8; 6], tag: &'static [u8]) {
    in_netns(Some(ns.path()), move || {
        let fd = packet_socket(ifname);
        let mut frame = Vec::new();
        frame.extend_from_slice(&dst);
        frame.extend_from_slice(&src);
        frame.extend_from_slice(&ETHERTYPE.to_be_bytes());
        frame.extend_from_slice(tag);
        frame.resize(60, 0);
        for _ in 0..3 {
            // SAFETY: the buffer is valid for its length; fd is a bound packet socket.
            let n = unsafe { libc::send(fd.as_raw_fd(), frame.as_ptr().cast(), frame.len(), 0) };
            assert_eq!(
                n,
                frame.len() as isize,
                "{}",
                std::io::Error::last_os_error()
            );
        }
    });
}

/// The source MACs and tags of the ETHERTYPE frames `fd` receives until it is quiet.
fn received(fd: &OwnedFd) -> Vec<([u8; 6], Vec<u8>)> {
    let mut out = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(2);
    let mut buf = [0u8; 2048];
    while Instant::now() < deadline {
        // SAFETY: buf is valid for its length; MSG_DONTWAIT never blocks.
        let n = unsafe {
            libc::recv(
                fd.as_raw_fd(),
                buf.as_mut_ptr().cast(),
                buf.len(),
                libc::MSG_DONTWAIT,
            )
        };
        if n < 14 {
            std::thread::sleep(Duration::from_millis(20));
            continue;
        }
        let frame = &buf[..n as usize];
        let mut src = [0u8; 6];
        src.copy_from_slice(&frame[6..12]);
        out.push((src, frame[14..].iter().copied().take(8).collect()));
    }
    out
}

#[test]
fn foreign_source_macs_are_dropped_and_the_ruleset_is_the_references() {
    enter_test_host();
    if let Err(why) = bridge_family() {
        return skip("foreign_source_macs_are_dropped", &why);
    }
    let (bin, store) = (plugin_dir(), TempDir::new("spoof"));
    let c = conf("cni-spoof0", &store, "10.77.0.0/24");
    let (a, b) = (Netns::new(), Netns::new());
    let ra = call("ADD", &a, "ctr-a", &c, &bin).run().ok();
    let rb = call("ADD", &b, "ctr-b", &c, &bin).run().ok();
    let (host_a, mac_a) = attachment(&ra);
    let (host_b, mac_b) = attachment(&rb);

    // The same ruleset as nft makes from the reference's configuration.
    let scratch = Netns::new();
    let dir = TempDir::new("spoof-ref");
    let script = dir.0.join("ref.nft");
    std::fs::write(
        &script,
        reference_script("ctr-a-eth0", &host_a, &mac_a)
            + &reference_script("ctr-b-eth0", &host_b, &mac_b),
    )
    .expect("write script");
    scratch.sh("nft", &["-f", script.to_str().expect("path")]);
    let reference = scratch.sh("nft", &["list", "table", "bridge", "nat"]);
    let ours = bridge_nat();
    assert_eq!(ours, reference);
    assert!(ours.contains(&format!(
        "iifname \"{host_a}\" jump cni-br-iface-ctr-a-eth0 comment \"macspoofchk-ctr-a-eth0\""
    )));

    // B listens; A sends a frame with a foreign source MAC, then with its own.
    let rx = in_netns(Some(b.path()), || packet_socket("eth0"));
    let foreign = [0x02, 0, 0, 0, 0xbe, 0xef];
    let (own, dst) = (parse_mac(&mac_a), parse_mac(&mac_b));
    send_frame(&a, "eth0", dst, foreign, b"spoofed!");
    send_frame(&a, "eth0", dst, own, b"genuine!");
    let got = received(&rx);
    assert!(
        got.iter()
            .any(|(src, tag)| *src == own && tag == b"genuine!"),
        "the container's own MAC must pass: {got:?}"
    );
    assert!(
        !got.iter().any(|(src, _)| *src == foreign),
        "a foreign source MAC must be dropped: {got:?}"
    );
    // And from B's side the same holds (both attachments are checked).
    let rx_a = in_netns(Some(a.path()), || packet_socket("eth0"));
    send_frame(&b, "eth0", own, foreign, b"spoofed!");
    send_frame(&b, "eth0", own, dst, b"genuine!");
    let got = received(&rx_a);
    assert!(got.iter().any(|(src, _)| *src == dst), "{got:?}");
    assert!(!got.iter().any(|(src, _)| *src == foreign), "{got:?}");

    // Without macspoofchk the foreign MAC gets through: the check is what drops it.
    call("DEL", &a, "ctr-a", &c, &bin).run().ok();
    let mut open = conf("cni-spoof0", &store, "10.77.0.0/24");
    open["macspoofchk"] = json!(false);
    let ra = call("ADD", &a, "ctr-a", &open, &bin).run().ok();
    let (_, mac_a) = attachment(&ra);
    let rx = in_netns(Some(b.path()), || packet_socket("eth0"));
    send_frame(&a, "eth0", dst, foreign, b"spoofed!");
    let got = received(&rx);
    assert!(
        got.iter().any(|(src, _)| *src == foreign),
        "{got:?} (a: {mac_a})"
    );
}

fn chains_of(ruleset: &str, id: &str) -> usize {
    ruleset.matches(&format!("chain cni-br-iface-{id}")).count()
}

#[test]
fn del_removes_the_attachment_and_is_idempotent_and_a_failed_add_is_undone() {
    enter_test_host();
    if let Err(why) = bridge_family() {
        return skip("del_removes_the_attachment", &why);
    }
    let (bin, store) = (plugin_dir(), TempDir::new("spoof-del"));
    let c = conf("cni-spoof1", &store, "10.78.0.0/24");
    let (a, b) = (Netns::new(), Netns::new());
    call("ADD", &a, "ctr-a", &c, &bin).run().ok();
    call("ADD", &b, "ctr-b", &c, &bin).run().ok();
    let before = bridge_nat();
    assert_eq!(chains_of(&before, "ctr-a-eth0"), 2, "{before}");

    call("DEL", &a, "ctr-a", &c, &bin).run().ok();
    let after = bridge_nat();
    assert_eq!(chains_of(&after, "ctr-a-eth0"), 0, "{after}");
    assert!(!after.contains("macspoofchk-ctr-a-eth0"), "{after}");
    assert_eq!(chains_of(&after, "ctr-b-eth0"), 2, "{after}");
    assert!(after.contains("chain PREROUTING"), "{after}");
    // Again: nothing left to remove is success.
    call("DEL", &a, "ctr-a", &c, &bin).run().ok();
    // With the whole table gone too.
    run_in(None, "nft", &["delete", "table", "bridge", "nat"]);
    call("DEL", &b, "ctr-b", &c, &bin).run().ok();
    call("DEL", &b, "ctr-b", &c, &bin).run().ok();

    // An ADD failing after the check is in place (IPAM not found) takes it out.
    let mut broken = c.clone();
    broken["ipam"] = json!({"type": "no-such-ipam"});
    let d = Netns::new();
    let e = call("ADD", &d, "ctr-d", &broken, &bin).run();
    assert_ne!(e.status, 0, "{e:?}");
    let left = bridge_nat();
    assert_eq!(chains_of(&left, "ctr-d-eth0"), 0, "{left}");
    assert!(!left.contains("macspoofchk-ctr-d-eth0"), "{left}");
}

#[test]
fn gc_removes_stale_attachments_of_its_bridge_only() {
    enter_test_host();
    if let Err(why) = bridge_family() {
        return skip("gc_removes_stale_attachments", &why);
    }
    let (bin, store) = (plugin_dir(), TempDir::new("spoof-gc"));
    let c = conf("cni-spoof2", &store, "10.79.0.0/24");
    let other = conf("cni-spoof3", &store, "10.80.0.0/24");
    let (keep, stale, gone, foreign) = (Netns::new(), Netns::new(), Netns::new(), Netns::new());
    call("ADD", &keep, "ctr-keep", &c, &bin).run().ok();
    call("ADD", &stale, "ctr-stale", &c, &bin).run().ok();
    call("ADD", &gone, "ctr-gone", &c, &bin).run().ok();
    call("ADD", &foreign, "ctr-foreign", &other, &bin)
        .run()
        .ok();
    // A container that vanished without DEL: its veth goes with its netns.
    gone.destroy();

    gc(
        &c,
        json!([{"containerID": "ctr-keep", "ifname": "eth0"}]),
        &bin,
    );
    let after = bridge_nat();
    assert_eq!(chains_of(&after, "ctr-keep-eth0"), 2, "{after}");
    assert!(after.contains("macspoofchk-ctr-keep-eth0"), "{after}");
    assert_eq!(chains_of(&after, "ctr-stale-eth0"), 0, "{after}");
    assert!(!after.contains("macspoofchk-ctr-stale-eth0"), "{after}");
    assert_eq!(chains_of(&after, "ctr-gone-eth0"), 0, "{after}");
    // Another bridge's attachment is another network's business.
    assert_eq!(chains_of(&after, "ctr-foreign-eth0"), 2, "{after}");

    // DEL after GC still succeeds.
    call("DEL", &stale, "ctr-stale", &c, &bin).run().ok();
    call("DEL", &keep, "ctr-keep", &c, &bin).run().ok();
    call("DEL", &foreign, "ctr-foreign", &other, &bin)
        .run()
        .ok();
    let end = bridge_nat();
    assert!(!end.contains("cni-br-iface-"), "{end}");
}

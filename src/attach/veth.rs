//! Veth pairs between the container and the host, and random link names.

use crate::cni::error::Context;
use crate::cni::hint;
use crate::cni::{CniResult, Error};
use crate::kernel::sysctl;
use crate::netlink::Socket;
use crate::netlink::link::{Change, Kind, Link, NewLink};
use crate::netns::NetNs;
use nix::libc;
use std::io::Read;

/// `prefix` + 8 lowercase hex digits from 4 random bytes (`veth1a2b3c4d`).
pub fn random_name(prefix: &str) -> CniResult<String> {
    let mut bytes = [0u8; 4];
    fs_err::File::open("/dev/urandom")
        .and_then(|mut f| f.read_exact(&mut bytes))
        .context("failed to read random bytes")?;
    Ok(format!(
        "{prefix}{}",
        bytes.iter().map(|b| format!("{b:02x}")).collect::<String>()
    ))
}

/// Both ends of a new veth pair.
pub struct VethPair {
    pub host: Link,
    pub container: Link,
}

/// Creates `ifname` in the container with its peer (`veth…`) straight in the host
/// namespace (`host` is the caller's socket there), as the reference does; retries on a peer-name collision. The host
/// end is set up with `accept_ra=0`; the container end stays down.
pub fn setup_veth(
    host: &mut Socket,
    container: &NetNs,
    ifname: &str,
    mtu: Option<u32>,
    mac: Option<[u8; 6]>,
) -> CniResult<VethPair> {
    let host_ns = NetNs::current()?;
    let host_fd = host_ns.fd();
    let (peer_name, container_link) = container.run(|| -> CniResult<(String, Link)> {
        let mut sock = Socket::open()?;
        if sock.link_by_name(ifname).is_ok() {
            return Err(Error::internal(format!(
                "container veth name provided ({ifname}) already exists"
            ))
            .with_hint(Some(hint::link_exists(ifname))));
        }
        for _ in 0..10 {
            let peer = random_name("veth")?;
            let mut spec = NewLink::new(
                ifname,
                Kind::Veth {
                    peer: peer.clone(),
                    peer_netns: Some(host_fd),
                },
            );
            spec.mtu = mtu.filter(|m| *m > 0);
            spec.mac = mac;
            match sock.create_link(&spec) {
                Ok(()) => return Ok((peer, sock.link_by_name(ifname)?)),
                Err(e) if e.is(libc::EEXIST) => continue,
                Err(e) => return Err(e).context("failed to make veth pair"),
            }
        }
        Err(Error::internal(
            "failed to find a unique veth name after 10 tries",
        ))
    })??;
    let host_end = host.link_by_name(&peer_name)?;
    host.set_link(&host_end, Change::Up(true))?;
    // IPv6 may be off on the node: then there is no accept_ra to clear.
    let _ = sysctl::set(&sysctl::conf_key("ipv6", &peer_name, "accept_ra"), "0");
    Ok(VethPair {
        host: host_end,
        container: container_link,
    })
}

//! What every main plugin does with interfaces, on the netlink layer: veth pairs,
//! configuring an interface from an IPAM result (the reference's ConfigureIface),
//! the CHECK validations, forwarding, and temporary names.

use crate::cni::result::{IpConfig, NetResult, Route as ResultRoute};
use crate::cni::{CniResult, Error};
use crate::netlink::addr::{Family, IFA_F_DADFAILED, IFA_F_TENTATIVE};
use crate::netlink::link::{Change, IPV4_DEVCONF_ARP_NOTIFY, Kind, Link, NewLink, parse_mac};
use crate::netlink::route::{RT_TABLE_MAIN, Route};
use crate::netlink::{Socket, sysctl};
use crate::netns::NetNs;
use ipnet::IpNet;
use nix::libc;
use std::io::Read;
use std::net::IpAddr;
use std::time::{Duration, Instant};

/// `prefix` + 8 lowercase hex digits from 4 random bytes (`veth1a2b3c4d`).
pub fn random_name(prefix: &str) -> CniResult<String> {
    let mut bytes = [0u8; 4];
    std::fs::File::open("/dev/urandom")
        .and_then(|mut f| f.read_exact(&mut bytes))
        .map_err(|e| Error::internal(format!("failed to read random bytes: {e}")))?;
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
            )));
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
                Err(e) => return Err(Error::internal(format!("failed to make veth pair: {e}"))),
            }
        }
        Err(Error::internal(
            "failed to find a unique veth name after 10 tries",
        ))
    })??;
    let host_end = host.link_by_name(&peer_name)?;
    host.set_link(host_end.index, Change::Up(true))?;
    // IPv6 may be off on the node: then there is no accept_ra to clear.
    let _ = sysctl::set(&sysctl::conf_key("ipv6", &peer_name, "accept_ra"), "0");
    Ok(VethPair {
        host: host_end,
        container: container_link,
    })
}

/// The first gateway of each family among `ips`.
fn first_gateways(ips: &[&IpConfig]) -> (Option<IpAddr>, Option<IpAddr>) {
    let find = |v4: bool| {
        ips.iter()
            .filter_map(|ip| ip.gateway)
            .find(|gw| gw.is_ipv4() == v4)
    };
    (find(true), find(false))
}

/// The reference's ConfigureIface, run inside the container namespace: the
/// result's addresses for `ifname`, link up, DAD wait, then its routes.
pub fn configure(sock: &mut Socket, ifname: &str, result: &NetResult) -> CniResult<()> {
    let link = sock.link_by_name(ifname)?;
    let mut ips = Vec::new();
    for ip in &result.ips {
        let Some(idx) = ip.interface else {
            continue;
        };
        if result.interfaces.get(idx).map(|i| i.name.as_str()) != Some(ifname) {
            return Err(Error::internal(format!(
                "failed to add IP addr {} to {ifname:?}: invalid interface index",
                ip.address
            )));
        }
        ips.push(ip);
    }
    if ips.iter().any(|ip| ip.address.addr().is_ipv6()) {
        // Only if it was disabled; a node without IPv6 has no such files.
        for dev in [ifname, "lo"] {
            let key = sysctl::conf_key("ipv6", dev, "disable_ipv6");
            if sysctl::get(&key).is_ok_and(|v| v == "1") {
                let _ = sysctl::set(&key, "0");
            }
        }
        let _ = sysctl::set(&sysctl::conf_key("ipv6", ifname, "keep_addr_on_down"), "1");
    }
    for ip in &ips {
        sock.add_address(link.index, ip.address, 0).map_err(|e| {
            Error::internal(format!(
                "failed to add IP addr {} to {ifname:?}: {e}",
                ip.address
            ))
        })?;
    }
    sock.set_link(link.index, Change::Up(true))
        .map_err(|e| Error::internal(format!("failed to set {ifname:?} UP: {e}")))?;
    let (gw4, gw6) = first_gateways(&ips);
    if gw6.is_some() {
        wait_for_dad(sock, &link)?;
    }
    for r in &result.routes {
        let gw = r.gw.or(if r.dst.addr().is_ipv4() { gw4 } else { gw6 });
        let route = kernel_route(r, gw, link.index);
        match sock.append_route(&route) {
            Ok(()) => {}
            Err(e) if e.is(libc::EEXIST) => {}
            Err(e) => {
                return Err(Error::internal(format!(
                    "failed to add route '{} via {} dev {ifname}': {e}",
                    r.dst,
                    gw.map(|g| g.to_string()).unwrap_or_else(|| "<nil>".into())
                )));
            }
        }
    }
    Ok(())
}

/// A result route as the kernel route ConfigureIface adds (mtu/advmss ignored, as the reference).
fn kernel_route(r: &ResultRoute, gw: Option<IpAddr>, oif: u32) -> Route {
    let mut route = Route::new(r.dst.trunc());
    route.gw = gw;
    route.oif = Some(oif);
    route.priority = u32::try_from(r.priority).ok().filter(|p| *p > 0);
    route.table = r
        .table
        .and_then(|t| u32::try_from(t).ok())
        .unwrap_or(RT_TABLE_MAIN);
    if let Some(scope) = r.scope.and_then(|s| u8::try_from(s).ok()) {
        route.scope = scope;
    }
    route
}

/// Waits until no IPv6 address of `link` is tentative (50 ms polls, 5 s).
fn wait_for_dad(sock: &mut Socket, link: &Link) -> CniResult<()> {
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let addrs = sock.addresses(link.index, Family::V6)?;
        if let Some(a) = addrs.iter().find(|a| a.flags & IFA_F_DADFAILED != 0) {
            return Err(Error::internal(format!(
                "failed to add IPv6 address {} to {}: duplicate address detected",
                a.addr, link.name
            )));
        }
        if addrs.iter().all(|a| a.flags & IFA_F_TENTATIVE == 0) {
            return Ok(());
        }
        if Instant::now() >= deadline {
            let current = sock.link_by_index(link.index)?;
            if current.oper_state == crate::netlink::link::OPER_UP {
                return Err(Error::internal(format!(
                    "failed while waiting for addresses of {} to leave tentative state",
                    link.name
                )));
            }
            return Ok(());
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Enables forwarding for each family present, in the calling thread's
/// namespace (where `sock` lives): the sysctl is written only when netlink says
/// it is off, so the usual ADD on a forwarding node walks no /proc/sys path.
pub fn enable_forwarding(sock: &mut Socket, ips: &[IpConfig]) -> CniResult<()> {
    for (family, key) in [
        (Family::V4, "net.ipv4.ip_forward"),
        (Family::V6, "net.ipv6.conf.all.forwarding"),
    ] {
        if !ips.iter().any(|ip| Family::of(ip.address.addr()) == family) {
            continue;
        }
        if sock.forwarding(family).ok().flatten() != Some(true) {
            sysctl::set(key, "1")?;
        }
    }
    Ok(())
}

/// `net.ipv4.conf.<link>.arp_notify=1`, best effort as in the reference, over
/// netlink (no /proc/sys path walk).
pub fn set_arp_notify(sock: &mut Socket, index: u32) {
    let _ = sock.set_link(index, Change::Ipv4Conf(IPV4_DEVCONF_ARP_NOTIFY, 1));
}

/// arp_notify and ndisc_notify on a new container link (best effort, as the
/// reference's macvlan and ipvlan): the kernel announces it when it comes up.
pub fn announce_on_up(ns: &NetNs, ifname: &str, index: u32) -> CniResult<()> {
    ns.run(|| {
        if let Ok(mut sock) = Socket::open() {
            set_arp_notify(&mut sock, index);
        }
        set_conf("ipv6", ifname, "ndisc_notify", "1");
    })?;
    Ok(())
}

/// CHECK: every address of `ifname` in the result is on the link.
pub fn check_addresses(sock: &mut Socket, ifname: &str, result: &NetResult) -> CniResult<()> {
    let link = sock.link_by_name(ifname)?;
    let mut present: Vec<IpNet> = Vec::new();
    for family in [Family::V4, Family::V6] {
        present.extend(
            sock.addresses(link.index, family)?
                .into_iter()
                .map(|a| a.addr),
        );
    }
    for ip in ips_of(result, ifname) {
        if !present.contains(&ip.address) {
            return Err(Error::internal(format!(
                "Failed to match addr {} on interface {ifname}",
                ip.address
            )));
        }
    }
    Ok(())
}

/// CHECK: every result route is in the container's tables.
pub fn check_routes(sock: &mut Socket, result: &NetResult) -> CniResult<()> {
    for r in &result.routes {
        let family = Family::of(r.dst.addr());
        let table = r
            .table
            .and_then(|t| u32::try_from(t).ok())
            .unwrap_or(RT_TABLE_MAIN);
        let routes = sock.routes(family, table, None)?;
        let found = routes
            .iter()
            .any(|k| k.dst == r.dst.trunc() && (r.gw.is_none() || k.gw == r.gw));
        if !found {
            return Err(Error::internal(format!(
                "Failed to match route: {} via {}",
                r.dst,
                r.gw.map(|g| g.to_string()).unwrap_or_default()
            )));
        }
    }
    Ok(())
}

/// The result's IPs assigned to the interface called `ifname`.
pub fn ips_of<'r>(result: &'r NetResult, ifname: &str) -> impl Iterator<Item = &'r IpConfig> {
    result.ips.iter().filter(move |ip| {
        ip.interface
            .and_then(|i| result.interfaces.get(i))
            .is_some_and(|i| i.name == ifname)
    })
}

/// Deletes `ifname` in the container namespace, returning its global addresses
/// (for ipMasq teardown). A missing link is success.
pub fn delete_in_container(ns: &NetNs, ifname: &str) -> CniResult<Vec<IpNet>> {
    ns.run(|| -> CniResult<Vec<IpNet>> {
        let mut sock = Socket::open()?;
        let link = match sock.link_by_name(ifname) {
            Ok(l) => l,
            Err(e) if e.is_not_found() => return Ok(Vec::new()),
            Err(e) => return Err(e.into()),
        };
        let mut addrs = Vec::new();
        for family in [Family::V4, Family::V6] {
            addrs.extend(
                sock.addresses(link.index, family)?
                    .into_iter()
                    .filter(|a| a.scope == 0)
                    .map(|a| a.addr),
            );
        }
        match sock.delete_link_detached(link.index) {
            Ok(()) => Ok(addrs),
            Err(e) => Err(Error::internal(format!("failed to delete {ifname:?}: {e}"))),
        }
    })?
}

/// Sets a per-interface sysctl, ignoring a missing file (that family is off).
pub fn set_conf(family: &str, ifname: &str, name: &str, value: &str) {
    let _ = sysctl::set(&sysctl::conf_key(family, ifname, name), value);
}

/// Opens CNI_NETNS for ADD/CHECK with the reference's message.
pub fn open_netns(path: &str) -> CniResult<NetNs> {
    NetNs::open(path).map_err(|e| Error::internal(format!("failed to open netns {path:?}: {e}")))
}

/// DEL's link removal: nothing to do when CNI_NETNS is empty or the namespace is
/// gone; otherwise deletes `ifname` there. Returns the addresses it had.
pub fn delete_for_del(netns: &str, ifname: &str) -> CniResult<Vec<IpNet>> {
    match NetNs::open_for_del(netns)? {
        Some(ns) => delete_in_container(&ns, ifname),
        None => Ok(Vec::new()),
    }
}

/// A result interface for a link; `sandbox` for the container side.
pub fn result_interface(link: &Link, sandbox: Option<&str>) -> crate::cni::result::Interface {
    crate::cni::result::Interface {
        name: link.name.clone(),
        mac: link.mac_string(),
        sandbox: sandbox.unwrap_or_default().to_string(),
        ..Default::default()
    }
}

/// Deletes a container interface when dropped, unless kept: an ADD that fails
/// after creating it leaves nothing behind.
pub struct ContainerLinkGuard<'a> {
    ns: &'a NetNs,
    ifname: &'a str,
    armed: bool,
}

impl<'a> ContainerLinkGuard<'a> {
    pub fn new(ns: &'a NetNs, ifname: &'a str) -> Self {
        ContainerLinkGuard {
            ns,
            ifname,
            armed: true,
        }
    }

    pub fn keep(mut self) {
        self.armed = false;
    }
}

impl Drop for ContainerLinkGuard<'_> {
    fn drop(&mut self) {
        if self.armed {
            let _ = delete_in_container(self.ns, self.ifname);
        }
    }
}

/// Creates a link for the container under a temporary name, directly in the
/// container namespace (or inside it, when its parent lives there), then renames
/// it to `ifname`, as the reference does for macvlan, ipvlan, vlan and dummy.
pub fn create_in_container(
    ns: &NetNs,
    mut spec: NewLink,
    ifname: &str,
    parent_in_container: bool,
) -> CniResult<Link> {
    spec.name = random_name("veth")?;
    let tmp = spec.name.clone();
    let kind = spec.kind.name();
    if parent_in_container {
        spec.netns = None;
    } else {
        spec.netns = Some(ns.fd());
        Socket::open()?
            .create_link(&spec)
            .map_err(|e| Error::internal(format!("failed to create {kind}: {e}")))?;
    }
    ns.run(|| -> CniResult<Link> {
        let mut sock = Socket::open()?;
        if parent_in_container {
            sock.create_link(&spec)
                .map_err(|e| Error::internal(format!("failed to create {kind}: {e}")))?;
        }
        let link = sock.link_by_name(&tmp)?;
        if let Err(e) = sock.set_link(link.index, Change::Name(ifname)) {
            let _ = sock.delete_link(link.index);
            return Err(Error::internal(format!(
                "failed to rename {kind} to {ifname:?}: {e}"
            )));
        }
        Ok(sock.link_by_index(link.index)?)
    })?
}

/// ADD's second half for plugins with one container interface (result index 0):
/// IPAM (DEL'd again if configuring fails) and ConfigureIface, or just link up
/// without IPAM. `ipam_required` makes a missing `ipam.type` a config error.
pub fn configure_single(
    inv: &crate::cni::Invocation,
    ns: &NetNs,
    ifname: &str,
    mut result: NetResult,
    ipam_required: bool,
) -> CniResult<NetResult> {
    let has_ipam = inv.conf.ipam_type().is_some();
    if !has_ipam {
        if ipam_required {
            return Err(Error::invalid_config("IPAM config missing 'type' key"));
        }
        ns.run(|| -> CniResult<()> {
            let mut sock = Socket::open()?;
            let link = sock.link_by_name(ifname)?;
            Ok(sock.set_link(link.index, Change::Up(true))?)
        })??;
        return Ok(result);
    }
    let ipam = crate::cni::delegate::Delegate::ipam(inv)?;
    let (ipam_result, rollback) = ipam.add_guarded()?;
    adopt_ipam_result(&mut result, ipam_result, 0)?;
    let configured = result.clone();
    ns.run(|| -> CniResult<()> {
        let mut sock = Socket::open()?;
        configure(&mut sock, ifname, &configured)
    })??;
    rollback.keep();
    Ok(result)
}

/// DEL for plugins with one container interface: IPAM DEL, then the link.
pub fn del_single(inv: &crate::cni::Invocation) -> CniResult<()> {
    if inv.conf.ipam_type().is_some() {
        crate::cni::delegate::Delegate::ipam(inv)?.del()?;
    }
    delete_for_del(&inv.env.netns, &inv.env.ifname)?;
    Ok(())
}

/// The link of the first default route (IPv4, then IPv6) in the calling
/// thread's namespace: the reference's default master.
pub fn default_route_link(sock: &mut Socket) -> CniResult<Link> {
    for family in [Family::V4, Family::V6] {
        let routes = sock.routes(family, RT_TABLE_MAIN, None)?;
        if let Some(oif) = routes
            .iter()
            .find(|r| r.dst.prefix_len() == 0)
            .and_then(|r| r.oif)
        {
            return Ok(sock.link_by_index(oif)?);
        }
    }
    Err(Error::internal("no default route interface found"))
}

/// CHECK for plugins with one container interface: the link exists with the
/// prevResult's MAC, its addresses and routes are there. Returns the link.
/// `kind` None accepts any link kind (host-device moves physical devices).
pub fn check_single(inv: &crate::cni::Invocation, kind: Option<&str>) -> CniResult<Link> {
    if inv.conf.ipam_type().is_some() {
        crate::cni::delegate::Delegate::ipam(inv)?.check()?;
    }
    let prev = inv
        .conf
        .prev_result()?
        .ok_or_else(|| Error::invalid_config("Required prevResult missing"))?;
    let ifname = inv.env.ifname.as_str();
    let want = prev
        .interfaces
        .iter()
        .find(|i| i.name == ifname && !i.sandbox.is_empty())
        .cloned()
        .ok_or_else(|| {
            Error::internal(format!(
                "no interface {ifname:?} with a sandbox in prevResult"
            ))
        })?;
    let ns = open_netns(&inv.env.netns)?;
    ns.run(|| -> CniResult<Link> {
        let mut sock = Socket::open()?;
        let link = sock.link_by_name(ifname)?;
        if let Some(kind) = kind
            && link.kind != kind
        {
            return Err(Error::internal(format!(
                "{ifname:?} is a {:?} link, not {kind}",
                link.kind
            )));
        }
        if !want.mac.is_empty() && want.mac != link.mac_string() {
            return Err(Error::internal(format!(
                "interface {ifname} MAC {} does not match prevResult {}",
                link.mac_string(),
                want.mac
            )));
        }
        check_addresses(&mut sock, ifname, &prev)?;
        check_routes(&mut sock, &prev)?;
        Ok(link)
    })?
}

/// GC forwarded to the IPAM plugin, when there is one.
pub fn gc_ipam(inv: &crate::cni::Invocation) -> CniResult<()> {
    match inv.conf.ipam_type() {
        Some(_) => crate::cni::delegate::Delegate::ipam(inv)?.gc(),
        None => Ok(()),
    }
}

/// STATUS forwarded to the IPAM plugin, when there is one.
pub fn status_ipam(inv: &crate::cni::Invocation) -> CniResult<()> {
    match inv.conf.ipam_type() {
        Some(_) => crate::cni::delegate::Delegate::ipam(inv)?.status(),
        None => Ok(()),
    }
}

/// The master of a macvlan/ipvlan/vlan link: by name, or (when `name` is empty)
/// the default-route interface; in the host, or in the container namespace when
/// the config says `linkInContainer`.
pub fn find_master(
    inv: &crate::cni::Invocation,
    name: &str,
    in_container: bool,
) -> CniResult<Link> {
    crate::cni::config::link_name_key("master", name)?;
    let lookup = || -> CniResult<Link> {
        let mut sock = Socket::open()?;
        if name.is_empty() {
            return default_route_link(&mut sock);
        }
        sock.link_by_name(name)
            .map_err(|e| Error::internal(format!("failed to lookup master {name:?}: {e}")))
    };
    if in_container {
        open_netns(&inv.env.netns)?.run(lookup)?
    } else {
        lookup()
    }
}

/// A configured MTU: 0 means the kernel's default; at most the master's MTU.
pub fn mtu_within_master(mtu: i64, master: &Link) -> CniResult<Option<u32>> {
    if mtu < 0 || mtu > i64::from(master.mtu) {
        return Err(Error::invalid_config(format!(
            "invalid MTU {mtu}, must be [0, master MTU({})]",
            master.mtu
        )));
    }
    Ok(u32::try_from(mtu).ok().filter(|m| *m > 0))
}

/// Takes IPAM's addresses, routes and DNS into a plugin's result, the addresses
/// assigned to interface `index`. No address at all is an error.
pub fn adopt_ipam_result(result: &mut NetResult, ipam: NetResult, index: usize) -> CniResult<()> {
    if ipam.ips.is_empty() {
        return Err(Error::internal("IPAM plugin returned missing IP config"));
    }
    result.ips = ipam.ips;
    result.routes = ipam.routes;
    result.dns = ipam.dns;
    for ip in &mut result.ips {
        ip.interface = Some(index);
    }
    Ok(())
}

/// A configured MTU for a link the plugin creates: 0 means the kernel's default.
pub fn optional_mtu(mtu: i64) -> CniResult<Option<u32>> {
    let mtu =
        u32::try_from(mtu).map_err(|_| Error::invalid_config(format!("invalid MTU {mtu}")))?;
    Ok((mtu > 0).then_some(mtu))
}

/// MAC from CNI_ARGS `MAC`, then `args.cni.mac`, then `runtimeConfig.mac`: the last one set wins.
pub fn requested_mac(
    inv: &crate::cni::Invocation,
    from_conf: Option<String>,
) -> CniResult<Option<[u8; 6]>> {
    let mut mac = from_conf.filter(|m| !m.is_empty());
    if let Some(m) = inv.cni_args.get("MAC") {
        mac = Some(m.to_string());
    }
    if let Some(m) = inv.conf.args_cni::<String>("mac")? {
        mac = Some(m);
    }
    if let Some(m) = inv.conf.runtime_config::<String>("mac")? {
        mac = Some(m);
    }
    mac.map(|m| {
        parse_mac(&m).ok_or_else(|| Error::invalid_config(format!("invalid MAC address {m:?}")))
    })
    .transpose()
}

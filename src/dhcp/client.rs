//! The DHCP client, run in the container's network namespace on its
//! interface. Before the interface has an address, DISCOVER/REQUEST go out of a
//! packet socket (IPv4 + UDP built here, from 0.0.0.0 to 255.255.255.255); a
//! bound lease renews, rebinds and releases over a UDP socket on port 68 of
//! the interface, sending from the lease's address. Every call enters the
//! netns on the calling thread and returns in the thread's own namespace.

use super::lease::Lease;
use super::sockets::{BoundSocket, PacketSocket};
use super::wire::{self, Identity, Message, MessageType};
use super::{Error, Result};
use crate::netlink::Socket;
use crate::netlink::addr::Family;
use crate::netlink::link::{Change, Link, OPER_UP};
use crate::netns::NetNs;
use nix::libc;
use serde::{Deserialize, Serialize};
use std::io::Read;
use std::net::Ipv4Addr;
use std::path::PathBuf;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

#[derive(Debug, Clone)]
pub struct Settings {
    /// `-broadcast`: set the BOOTP broadcast flag (replies broadcast, not unicast).
    pub broadcast: bool,
    /// `-timeout` (default 10 s): how long one ADD may take to get a lease
    /// (also bounds one `renew` / `rebind` call).
    pub timeout: Duration,
    /// `-resendmax` (default 62 s): cap of the exponential backoff.
    pub resend_max: Duration,
    /// `-resendtimeout` (default 208 s): overall cap of retries.
    pub resend_timeout: Duration,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            broadcast: false,
            timeout: Duration::from_secs(10),
            resend_max: Duration::from_secs(62),
            resend_timeout: Duration::from_secs(208),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Request {
    /// Absolute; hostprefix already applied by the daemon.
    pub netns: PathBuf,
    pub ifname: String,
    /// Option 61, whole (`options::client_id`).
    pub client_id: Vec<u8>,
    /// Provided options (`options::provided`).
    pub provide: Vec<(u8, Vec<u8>)>,
    /// Option 55 (`options::requested`); empty: not sent.
    pub request: Vec<u8>,
}

/// What a renewal or rebinding got.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Renewal {
    Ack(Lease),
    Nak,
}

/// The reference's retry schedule: 4 fast resends, then exponential.
const FAST_DELAY: Duration = Duration::from_secs(2);
const FAST_RETRIES: u32 = 4;
const FIRST_BACKOFF: Duration = Duration::from_secs(4);
/// Each delay is moved by up to this much either way (RFC 2131 4.1).
const JITTER: Duration = Duration::from_secs(1);
/// REQUESTs in SELECTING without an answer before starting over with DISCOVER.
const REQUESTS_PER_OFFER: u32 = 4;
/// The shortest time a renewal or rebinding is given, even past T2 / expiry.
const MIN_BOUND_TRY: Duration = Duration::from_secs(2);
const IF_OPER_UNKNOWN: u8 = 0;

/// Enters `req.netns`, brings `req.ifname` up and waits until it is up (no
/// first send into a down link), then DISCOVER/OFFER/REQUEST/ACK over a packet
/// socket. A NAK starts over; resends follow the reference's schedule. The
/// whole call is bounded by `settings.timeout` (and `resend_timeout`).
pub fn acquire(req: &Request, settings: &Settings) -> Result<Lease> {
    NetNs::open(&req.netns)?.run(|| acquire_here(req, settings))?
}

/// T1: REQUEST unicast over UDP to `lease.server` from `lease.address`
/// (`ciaddr` set; no requested-IP and no server-id option: RFC 2131 RENEWING).
/// Resends until an ACK or NAK, for at most `settings.timeout` (and not past
/// T2, though always at least 2 s): call again to keep trying. The address
/// must be on the interface (else an Io error, kind AddrNotAvailable).
pub fn renew(req: &Request, settings: &Settings, lease: &Lease) -> Result<Renewal> {
    NetNs::open(&req.netns)?.run(|| bound_exchange(req, settings, lease, false))?
}

/// T2: the same, broadcast (any server may answer); not past expiry.
pub fn rebind(req: &Request, settings: &Settings, lease: &Lease) -> Result<Renewal> {
    NetNs::open(&req.netns)?.run(|| bound_exchange(req, settings, lease, true))?
}

/// DHCPRELEASE unicast to the server, best effort: an absent netns or link is
/// Ok. Sent from the lease's address over UDP when it is on the interface,
/// else over the packet socket (IP unicast in a broadcast frame).
pub fn release(req: &Request, lease: &Lease) -> Result<()> {
    let ns = match NetNs::open(&req.netns) {
        Ok(ns) => ns,
        Err(crate::netns::Error::NotFound(_)) => return Ok(()),
        Err(e) => return Err(e.into()),
    };
    ns.run(|| {
        let mut nl = Socket::open()?;
        let link = match nl.link_by_name(&req.ifname) {
            Ok(link) => link,
            Err(e) if e.is_not_found() => return Ok(()),
            Err(e) => return Err(e.into()),
        };
        let id = identity(req, &link)?;
        let msg = id.release(random_u32(), lease.address, lease.server);
        if has_address(&mut nl, &link, lease.address)? {
            return BoundSocket::open(&req.ifname, lease.address, false)?.send(&msg, lease.server);
        }
        // Not configured (yet, or any more): the kernel would refuse it as a
        // source, so the packet socket sends it, in a broadcast frame as the
        // reference does (the server's MAC is unknown without an address).
        let sock = PacketSocket::open(link.index, &req.ifname)?;
        sock.send(&msg, lease.address, lease.server)
    })?
}

/// At expiry: the link goes down (as the reference). An absent netns or link is Ok.
pub fn expire(req: &Request) -> Result<()> {
    let ns = match NetNs::open(&req.netns) {
        Ok(ns) => ns,
        Err(crate::netns::Error::NotFound(_)) => return Ok(()),
        Err(e) => return Err(e.into()),
    };
    ns.run(|| {
        let mut nl = Socket::open()?;
        match nl.link_by_name(&req.ifname) {
            Ok(link) => Ok(nl.set_link(&link, Change::Up(false))?),
            Err(e) if e.is_not_found() => Ok(()),
            Err(e) => Err(e.into()),
        }
    })?
}

/// CHECK: the lease's address is on the interface.
pub fn address_present(req: &Request, lease: &Lease) -> Result<bool> {
    NetNs::open(&req.netns)?.run(|| {
        let mut nl = Socket::open()?;
        let link = nl.link_by_name(&req.ifname)?;
        has_address(&mut nl, &link, lease.address)
    })?
}

fn has_address(nl: &mut Socket, link: &Link, address: Ipv4Addr) -> Result<bool> {
    let addrs = nl.addresses(link.index, Family::V4)?;
    Ok(addrs
        .iter()
        .any(|a| a.addr.addr() == std::net::IpAddr::V4(address)))
}

/// Who we are on `link`: its MAC as chaddr, and what the request carries.
fn identity(req: &Request, link: &Link) -> Result<Identity> {
    let mac: [u8; 6] = link.mac.as_slice().try_into().map_err(|_| {
        Error::io(
            format!("use {} for DHCP", req.ifname),
            std::io::Error::new(
                std::io::ErrorKind::Unsupported,
                format!(
                    "the link has no Ethernet address ({} bytes)",
                    link.mac.len()
                ),
            ),
        )
    })?;
    Ok(Identity {
        mac,
        client_id: req.client_id.clone(),
        request: req.request.clone(),
        provide: req.provide.clone(),
        max_size: link.mtu.clamp(576, 1500) as u16,
    })
}

fn unix_now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

/// For xids and jitter: /dev/urandom, or the clock if it cannot be read.
fn random_u32() -> u32 {
    let mut b = [0u8; 4];
    if fs_err::File::open("/dev/urandom")
        .and_then(|mut f| f.read_exact(&mut b))
        .is_ok()
    {
        return u32::from_ne_bytes(b);
    }
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0);
    nanos ^ std::process::id().rotate_left(16)
}

/// Resend delays: 2 s four times, then 4 s doubling up to `max`, each ±1 s.
struct Backoff {
    fast_left: u32,
    next: Duration,
    max: Duration,
}

impl Backoff {
    fn new(max: Duration) -> Backoff {
        Backoff {
            fast_left: FAST_RETRIES,
            next: FIRST_BACKOFF,
            max,
        }
    }

    /// The delay before the next resend, without jitter.
    fn base(&mut self) -> Duration {
        if self.fast_left > 0 {
            self.fast_left -= 1;
            return FAST_DELAY;
        }
        let d = self.next.min(self.max);
        self.next = self.next.saturating_mul(2);
        d
    }

    fn delay(&mut self) -> Duration {
        let base = self.base();
        let span = JITTER.as_nanos() as u64 * 2;
        let offset = Duration::from_nanos(u64::from(random_u32()) % span);
        (base + offset)
            .saturating_sub(JITTER)
            .max(Duration::from_millis(100))
    }
}

/// The interface is ready to carry our first frame: administratively up and
/// operationally up, or up with carrier where the driver reports no state.
/// (Until the kernel's link watch marks it up, the qdisc drops what is sent.)
fn ready(link: &Link) -> bool {
    link.is_up()
        && (link.oper_state == OPER_UP
            || (link.oper_state == IF_OPER_UNKNOWN && link.flags & libc::IFF_LOWER_UP as u32 != 0))
}

/// Sets the link up if it is not, and polls until it is `ready`.
fn bring_up(nl: &mut Socket, link: &Link, deadline: Instant) -> Result<Link> {
    if !link.is_up() {
        nl.set_link(link, Change::Up(true))?;
    }
    let mut pause = Duration::from_millis(1);
    loop {
        let current = nl.link_by_index(link.index)?;
        if ready(&current) {
            return Ok(current);
        }
        let now = Instant::now();
        if now >= deadline {
            return Err(Error::io(
                format!("wait for {} to be up", link.name),
                std::io::Error::new(
                    std::io::ErrorKind::TimedOut,
                    format!(
                        "still not operationally up (state {}, carrier {})",
                        current.oper_state,
                        if current.flags & libc::IFF_LOWER_UP as u32 != 0 {
                            "on"
                        } else {
                            "off"
                        }
                    ),
                ),
            ));
        }
        std::thread::sleep(pause.min(deadline - now));
        pause = (pause * 2).min(Duration::from_millis(50));
    }
}

fn acquire_here(req: &Request, settings: &Settings) -> Result<Lease> {
    let start = Instant::now();
    let deadline = start + settings.timeout.min(settings.resend_timeout);
    let mut nl = Socket::open()?;
    let link = nl.link_by_name(&req.ifname)?;
    let link = bring_up(&mut nl, &link, deadline)?;
    drop(nl);
    let id = identity(req, &link)?;
    let mut sock = PacketSocket::open(link.index, &req.ifname)?;
    let mut dora = Dora {
        id: &id,
        ifname: &req.ifname,
        broadcast: settings.broadcast,
        resend_max: settings.resend_max,
        start,
        deadline,
    };
    dora.run(&mut sock)
}

/// What the exchange is waiting for.
enum Phase {
    /// DISCOVER sent, waiting for an OFFER.
    Selecting,
    /// REQUEST for `offered` sent to `server`, waiting for its ACK or NAK.
    Requesting {
        offered: Ipv4Addr,
        server: Ipv4Addr,
        secs: u16,
        sent: u32,
    },
}

/// One DISCOVER/OFFER/REQUEST/ACK exchange, until `deadline`.
struct Dora<'a> {
    id: &'a Identity,
    ifname: &'a str,
    broadcast: bool,
    resend_max: Duration,
    start: Instant,
    deadline: Instant,
}

/// Whether `reply` comes from the server we chose (its id, or its source
/// address when it gives none).
fn from_server(reply: &Message, src: Ipv4Addr, server: Ipv4Addr) -> bool {
    reply.server_id().unwrap_or(src) == server
}

impl Dora<'_> {
    fn run(&mut self, sock: &mut PacketSocket) -> Result<Lease> {
        let mut xid = random_u32();
        let mut phase = Phase::Selecting;
        let mut backoff = Backoff::new(self.resend_max);
        let mut last_nak: Option<String> = None;
        let mut naks = 0u32;
        loop {
            let now = Instant::now();
            if now >= self.deadline {
                return Err(match last_nak {
                    Some(message) => Error::Nak {
                        ifname: self.ifname.to_string(),
                        message,
                    },
                    None => Error::NoAnswer {
                        ifname: self.ifname.to_string(),
                        after: self.start.elapsed(),
                    },
                });
            }
            let secs = u16::try_from(self.start.elapsed().as_secs()).unwrap_or(u16::MAX);
            let msg = match &mut phase {
                Phase::Selecting => self.id.discover(xid, secs, self.broadcast),
                Phase::Requesting {
                    offered,
                    server,
                    secs,
                    sent,
                } => {
                    *sent += 1;
                    self.id
                        .request_selecting(xid, *secs, self.broadcast, *offered, *server)
                }
            };
            sock.send(&msg, Ipv4Addr::UNSPECIFIED, Ipv4Addr::BROADCAST)?;
            let until = (now + backoff.delay()).min(self.deadline);
            let mut answered = false;
            while let Some((src, reply)) = sock.recv(xid, &self.id.mac, until)? {
                let kind = reply.message_type();
                match &phase {
                    Phase::Selecting
                        if kind == Some(MessageType::Offer) && !reply.yiaddr.is_unspecified() =>
                    {
                        phase = Phase::Requesting {
                            offered: reply.yiaddr,
                            server: reply.server_id().unwrap_or(src),
                            secs,
                            sent: 0,
                        };
                        answered = true;
                    }
                    Phase::Requesting { server, .. }
                        if kind == Some(MessageType::Ack)
                            && from_server(&reply, src, *server)
                            && !reply.yiaddr.is_unspecified() =>
                    {
                        return Ok(Lease::from_ack(&reply, *server, unix_now()));
                    }
                    Phase::Requesting { server, .. }
                        if kind == Some(MessageType::Nak) && from_server(&reply, src, *server) =>
                    {
                        last_nak = Some(reply.text());
                        naks += 1;
                        xid = random_u32();
                        phase = Phase::Selecting;
                        // A first NAK (an address taken meanwhile) starts over
                        // at once; a server that keeps refusing waits its turn.
                        answered = naks == 1;
                    }
                    _ => continue,
                }
                break;
            }
            if answered {
                backoff = Backoff::new(self.resend_max);
            } else if let Phase::Requesting { sent, .. } = phase
                && sent >= REQUESTS_PER_OFFER
            {
                // The offering server is gone: ask everyone again.
                xid = random_u32();
                phase = Phase::Selecting;
                backoff = Backoff::new(self.resend_max);
            } else if !answered && naks > 1 {
                // Wait out the delay after a repeated NAK before DISCOVER.
                let left = until.saturating_duration_since(Instant::now());
                std::thread::sleep(left);
            }
        }
    }
}

/// RENEWING (unicast to the server) or REBINDING (broadcast), from the bound address.
fn bound_exchange(
    req: &Request,
    settings: &Settings,
    lease: &Lease,
    rebinding: bool,
) -> Result<Renewal> {
    let start = Instant::now();
    let stage_end = if rebinding {
        lease.expires_at()
    } else {
        lease.rebind_at()
    };
    let stage_left = Duration::from_secs(stage_end.saturating_sub(unix_now()));
    let deadline = start
        + settings
            .timeout
            .min(settings.resend_timeout)
            .min(stage_left.max(MIN_BOUND_TRY));
    let mut nl = Socket::open()?;
    let link = nl.link_by_name(&req.ifname)?;
    // The renewal goes out from the lease's address (the kernel refuses a
    // source that is not local): without it there is nothing to renew from.
    if !has_address(&mut nl, &link, lease.address)? {
        return Err(Error::io(
            format!(
                "{} the lease of {} on {}",
                if rebinding { "rebind" } else { "renew" },
                lease.address,
                req.ifname
            ),
            std::io::Error::new(
                std::io::ErrorKind::AddrNotAvailable,
                "the address is not on the interface",
            ),
        ));
    }
    drop(nl);
    let id = identity(req, &link)?;
    let mut sock = BoundSocket::open(&req.ifname, lease.address, rebinding)?;
    let to = if rebinding {
        Ipv4Addr::BROADCAST
    } else {
        lease.server
    };
    let xid = random_u32();
    let mut backoff = Backoff::new(settings.resend_max);
    loop {
        let now = Instant::now();
        if now >= deadline {
            return Err(Error::NoAnswer {
                ifname: req.ifname.clone(),
                after: start.elapsed(),
            });
        }
        let secs = u16::try_from(start.elapsed().as_secs()).unwrap_or(u16::MAX);
        sock.send(&id.request_bound(xid, secs, lease.address), to)?;
        let until = (now + backoff.delay()).min(deadline);
        while let Some((src, reply)) = sock.recv(xid, &id.mac, until)? {
            match reply.message_type() {
                Some(MessageType::Ack) if !reply.yiaddr.is_unspecified() => {
                    return Ok(Renewal::Ack(renewed(lease, &reply, src)));
                }
                Some(MessageType::Nak) => return Ok(Renewal::Nak),
                _ => {}
            }
        }
    }
}

/// The lease a renewal ACK gives. Options the ACK leaves out keep their old
/// value (some servers send less on renewal); the times come from the new ACK.
fn renewed(old: &Lease, ack: &Message, src: Ipv4Addr) -> Lease {
    let mut lease = Lease::from_ack(ack, src, unix_now());
    for (c, v) in &old.options {
        let timing = [
            wire::code::LEASE_TIME,
            wire::code::RENEWAL_TIME,
            wire::code::REBINDING_TIME,
        ];
        if !timing.contains(c) {
            lease.options.entry(*c).or_insert_with(|| v.clone());
        }
    }
    lease
}

#[cfg(test)]
#[path = "client_tests.rs"]
mod tests;

//! The DHCP client, run in the container's network namespace on its
//! interface. Before the interface has an address, DISCOVER/REQUEST go out of a
//! packet socket (IPv4 + UDP built here, from 0.0.0.0 to 255.255.255.255); a
//! bound lease renews, rebinds and releases over a UDP socket on port 68 of
//! the interface, sending from the lease's address. Every call enters the
//! netns on the calling thread and returns in the thread's own namespace.

use super::lease::Lease;
use super::wire::{self, Identity, Message, MessageType};
use super::{Error, Result};
use crate::netlink::Socket;
use crate::netlink::addr::Family;
use crate::netlink::link::{Change, Link, OPER_UP};
use crate::netns::NetNs;
use nix::libc;
use nix::sys::socket::{
    self, AddressFamily, LinkAddr, MsgFlags, SockFlag, SockType, SockaddrIn, SockaddrLike, sockopt,
};
use serde::{Deserialize, Serialize};
use std::io::Read;
use std::net::{Ipv4Addr, SocketAddrV4, UdpSocket};
use std::os::fd::{AsRawFd, OwnedFd};
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
/// Largest datagram read; DHCP replies are far smaller.
const RECV_LEN: usize = 65536;
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
            Ok(link) => Ok(nl.set_link(link.index, Change::Up(false))?),
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
        nl.set_link(link.index, Change::Up(true))?;
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

/// A classic BPF program on the IPv4 header (SOCK_DGRAM packet sockets see no
/// link header): UDP, not a fragment, destination port 68. Everything is
/// checked again in user space; this only keeps other traffic out of the queue.
const FILTER: [libc::sock_filter; 9] = [
    // ldb [9]: protocol
    bpf(0x30, 0, 0, 9),
    // jeq #17, next, drop
    bpf(0x15, 0, 6, 17),
    // ldh [6]: flags and fragment offset
    bpf(0x28, 0, 0, 6),
    // jset #0x3fff, drop, next
    bpf(0x45, 4, 0, 0x3fff),
    // ldxb 4*([0]&0xf): header length
    bpf(0xb1, 0, 0, 0),
    // ldh [x+2]: UDP destination port
    bpf(0x48, 0, 0, 2),
    // jeq #68, accept, drop
    bpf(0x15, 0, 1, wire::CLIENT_PORT as u32),
    // ret #65535: accept
    bpf(0x06, 0, 0, 0xffff),
    // ret #0: drop
    bpf(0x06, 0, 0, 0),
];

const fn bpf(code: u16, jt: u8, jf: u8, k: u32) -> libc::sock_filter {
    libc::sock_filter { code, jt, jf, k }
}

/// A packet socket (SOCK_DGRAM, IPv4) bound to one interface.
struct PacketSocket {
    fd: OwnedFd,
    ifindex: i32,
    ifname: String,
    buf: Vec<u8>,
}

/// A `sockaddr_ll` for IPv4 on `ifindex`, to `dest` when sending.
fn link_addr(ifindex: i32, dest: [u8; 6]) -> Option<LinkAddr> {
    let mut sll_addr = [0u8; 8];
    sll_addr[..6].copy_from_slice(&dest);
    let sll = libc::sockaddr_ll {
        sll_family: libc::AF_PACKET as u16,
        sll_protocol: (libc::ETH_P_IP as u16).to_be(),
        sll_ifindex: ifindex,
        sll_hatype: 0,
        sll_pkttype: 0,
        sll_halen: 6,
        sll_addr,
    };
    // SAFETY: `sll` is a complete, initialised sockaddr_ll and the length given
    // is its size; from_raw copies it.
    unsafe {
        LinkAddr::from_raw(
            (&sll as *const libc::sockaddr_ll).cast(),
            Some(std::mem::size_of::<libc::sockaddr_ll>() as libc::socklen_t),
        )
    }
}

impl PacketSocket {
    fn open(ifindex: u32, ifname: &str) -> Result<PacketSocket> {
        let op = |what: &str| format!("{what} a packet socket on {ifname}");
        let ifindex = i32::try_from(ifindex).map_err(|_| {
            Error::io(
                op("bind"),
                std::io::Error::new(std::io::ErrorKind::InvalidInput, "interface index"),
            )
        })?;
        // Protocol 0: nothing is queued until bind names IPv4 and the interface.
        let fd = socket::socket(
            AddressFamily::Packet,
            SockType::Datagram,
            SockFlag::SOCK_CLOEXEC,
            None,
        )
        .map_err(|e| Error::os(op("open"), e))?;
        let prog = libc::sock_fprog {
            len: FILTER.len() as u16,
            filter: FILTER.as_ptr().cast_mut(),
        };
        // SAFETY: `prog` and the FILTER it points at are valid for the call, the
        // length is the struct's size; the kernel copies the program. A failure
        // only costs the in-kernel filtering, so it is not an error.
        let _ = unsafe {
            libc::setsockopt(
                fd.as_raw_fd(),
                libc::SOL_SOCKET,
                libc::SO_ATTACH_FILTER,
                (&prog as *const libc::sock_fprog).cast(),
                std::mem::size_of::<libc::sock_fprog>() as libc::socklen_t,
            )
        };
        let local = link_addr(ifindex, [0; 6]).ok_or_else(|| {
            Error::io(
                op("bind"),
                std::io::Error::new(std::io::ErrorKind::InvalidInput, "link address"),
            )
        })?;
        socket::bind(fd.as_raw_fd(), &local).map_err(|e| Error::os(op("bind"), e))?;
        Ok(PacketSocket {
            fd,
            ifindex,
            ifname: ifname.to_string(),
            buf: vec![0; RECV_LEN],
        })
    }

    /// Sends `msg` from `src`:68 to `dst`:67 in a broadcast frame. A full
    /// queue loses the frame as the wire would; the resend covers it.
    fn send(&self, msg: &Message, src: Ipv4Addr, dst: Ipv4Addr) -> Result<()> {
        let packet = wire::ipv4_udp(
            src,
            dst,
            wire::CLIENT_PORT,
            wire::SERVER_PORT,
            &msg.encode(),
        );
        let to = link_addr(self.ifindex, [0xff; 6]).ok_or_else(|| {
            Error::io(
                format!("send on {}", self.ifname),
                std::io::Error::new(std::io::ErrorKind::InvalidInput, "link address"),
            )
        })?;
        match socket::sendto(self.fd.as_raw_fd(), &packet, &to, MsgFlags::empty()) {
            Ok(_) | Err(nix::errno::Errno::ENOBUFS) | Err(nix::errno::Errno::EAGAIN) => Ok(()),
            Err(e) => Err(Error::os(
                format!("send a DHCP {:?} on {}", msg.message_type(), self.ifname),
                e,
            )),
        }
    }

    /// The next reply to `xid` for `mac` before `until`; None at `until`.
    fn recv(
        &mut self,
        xid: u32,
        mac: &[u8; 6],
        until: Instant,
    ) -> Result<Option<(Ipv4Addr, Message)>> {
        loop {
            let now = Instant::now();
            if now >= until {
                return Ok(None);
            }
            // At least 1 µs: a zero receive timeout would block forever.
            let wait = (until - now).max(Duration::from_micros(1));
            let timeout = nix::sys::time::TimeVal::from(libc::timeval {
                tv_sec: wait.as_secs().try_into().unwrap_or(i64::MAX as _),
                tv_usec: wait.subsec_micros().into(),
            });
            socket::setsockopt(&self.fd, sockopt::ReceiveTimeout, &timeout)
                .map_err(|e| Error::os(format!("wait for DHCP on {}", self.ifname), e))?;
            let n = match socket::recv(self.fd.as_raw_fd(), &mut self.buf, MsgFlags::empty()) {
                Ok(n) => n,
                Err(nix::errno::Errno::EAGAIN | nix::errno::Errno::EINTR) => continue,
                Err(e) => {
                    return Err(Error::os(format!("receive DHCP on {}", self.ifname), e));
                }
            };
            if let Some(reply) = wire::reply_in_packet(&self.buf[..n], xid, mac) {
                return Ok(Some(reply));
            }
        }
    }
}

/// A UDP socket on *:68 bound to the interface, sending from the lease's
/// address. Not bound to that address: a NAK comes broadcast (RFC 2131 4.1).
struct BoundSocket {
    sock: UdpSocket,
    ifname: String,
    from: Ipv4Addr,
    buf: Vec<u8>,
}

impl BoundSocket {
    fn open(ifname: &str, from: Ipv4Addr, broadcast: bool) -> Result<BoundSocket> {
        let op = |what: &str| format!("{what} a UDP socket on port 68 of {ifname}");
        let fd = socket::socket(
            AddressFamily::Inet,
            SockType::Datagram,
            SockFlag::SOCK_CLOEXEC,
            None,
        )
        .map_err(|e| Error::os(op("open"), e))?;
        // Another client of the namespace may hold *:68 (reuse lets both bind).
        socket::setsockopt(&fd, sockopt::ReuseAddr, &true)
            .map_err(|e| Error::os(op("set SO_REUSEADDR on"), e))?;
        socket::setsockopt(&fd, sockopt::BindToDevice, &ifname.into())
            .map_err(|e| Error::os(op("bind to the device"), e))?;
        if broadcast {
            socket::setsockopt(&fd, sockopt::Broadcast, &true)
                .map_err(|e| Error::os(op("set SO_BROADCAST on"), e))?;
        }
        let local = SockaddrIn::from(SocketAddrV4::new(Ipv4Addr::UNSPECIFIED, wire::CLIENT_PORT));
        socket::bind(fd.as_raw_fd(), &local).map_err(|e| Error::os(op("bind"), e))?;
        Ok(BoundSocket {
            sock: UdpSocket::from(fd),
            ifname: ifname.to_string(),
            from,
            buf: vec![0; RECV_LEN],
        })
    }

    /// Sends `msg` to `to`:67 with the lease's address as source (IP_PKTINFO).
    fn send(&self, msg: &Message, to: Ipv4Addr) -> Result<()> {
        let bytes = msg.encode();
        let info = libc::in_pktinfo {
            ipi_ifindex: 0,
            ipi_spec_dst: libc::in_addr {
                s_addr: u32::from(self.from).to_be(),
            },
            ipi_addr: libc::in_addr { s_addr: 0 },
        };
        let dest = SockaddrIn::from(SocketAddrV4::new(to, wire::SERVER_PORT));
        socket::sendmsg(
            self.sock.as_raw_fd(),
            &[std::io::IoSlice::new(&bytes)],
            &[socket::ControlMessage::Ipv4PacketInfo(&info)],
            MsgFlags::empty(),
            Some(&dest),
        )
        .map(drop)
        .map_err(|e| {
            Error::os(
                format!(
                    "send a DHCP {:?} from {} to {to} on {}",
                    msg.message_type(),
                    self.from,
                    self.ifname
                ),
                e,
            )
        })
    }

    fn recv(
        &mut self,
        xid: u32,
        mac: &[u8; 6],
        until: Instant,
    ) -> Result<Option<(Ipv4Addr, Message)>> {
        loop {
            let now = Instant::now();
            if now >= until {
                return Ok(None);
            }
            self.sock
                .set_read_timeout(Some(until - now))
                .map_err(|e| Error::io(format!("wait for DHCP on {}", self.ifname), e))?;
            let (n, from) = match self.sock.recv_from(&mut self.buf) {
                Ok(got) => got,
                Err(e)
                    if matches!(
                        e.kind(),
                        std::io::ErrorKind::WouldBlock
                            | std::io::ErrorKind::TimedOut
                            | std::io::ErrorKind::Interrupted
                    ) =>
                {
                    continue;
                }
                // An ICMP error from an earlier send (port unreachable): the
                // server is not there; keep waiting for the resend's answer.
                Err(e) if e.raw_os_error() == Some(libc::ECONNREFUSED) => continue,
                Err(e) => {
                    return Err(Error::io(format!("receive DHCP on {}", self.ifname), e));
                }
            };
            let std::net::SocketAddr::V4(from) = from else {
                continue;
            };
            let Some(m) = self.buf.get(..n).and_then(|b| Message::decode(b).ok()) else {
                continue;
            };
            if m.is_reply_to(xid, mac) {
                return Ok(Some((*from.ip(), m)));
            }
        }
    }
}

#[cfg(test)]
#[path = "client_tests.rs"]
mod tests;

//! The client's two sockets: a packet socket (IPv4 + UDP built here, a BPF
//! filter keeping other traffic out) for DISCOVER/REQUEST before the
//! interface has an address, and a UDP socket on port 68 bound to the
//! interface for a lease's renewals, rebinds and release.

use crate::dhcp::wire::MessageType;

use super::wire::{self, Message};
use super::{Error, Result};
use nix::libc;
use nix::sys::socket::{
    self, AddressFamily, LinkAddr, MsgFlags, SockFlag, SockType, SockaddrIn, SockaddrLike, sockopt,
};
use std::net::{Ipv4Addr, SocketAddrV4, UdpSocket};
use std::os::fd::{AsRawFd, OwnedFd};
use std::time::{Duration, Instant};

/// Largest datagram read; DHCP replies are far smaller.
const RECV_LEN: usize = 65536;

/// A classic BPF program on the IPv4 header (SOCK_DGRAM packet sockets see no
/// link header): UDP, not a fragment, destination port 68. Everything is
/// checked again in user space; this only keeps other traffic out of the queue.
pub(super) const FILTER: [libc::sock_filter; 9] = [
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
pub(super) struct PacketSocket {
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
    pub(super) fn open(ifindex: u32, ifname: &str) -> Result<PacketSocket> {
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
    pub(super) fn send(&self, msg: &Message, src: Ipv4Addr, dst: Ipv4Addr) -> Result<()> {
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
                format!(
                    "send a {} on {}",
                    msg.message_type().map_or("DHCP message", MessageType::name),
                    self.ifname
                ),
                e,
            )),
        }
    }

    /// The next reply to `xid` for `mac` before `until`; None at `until`.
    pub(super) fn recv(
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
pub(super) struct BoundSocket {
    sock: UdpSocket,
    ifname: String,
    from: Ipv4Addr,
    buf: Vec<u8>,
}

impl BoundSocket {
    pub(super) fn open(ifname: &str, from: Ipv4Addr, broadcast: bool) -> Result<BoundSocket> {
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
    pub(super) fn send(&self, msg: &Message, to: Ipv4Addr) -> Result<()> {
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
                    "send a {} from {} to {to} on {}",
                    msg.message_type().map_or("DHCP message", MessageType::name),
                    self.from,
                    self.ifname
                ),
                e,
            )
        })
    }

    pub(super) fn recv(
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
#[path = "sockets_tests.rs"]
mod tests;

//! The fixed header structs that start netlink message bodies, with named
//! fields: built as `RtMsg { family, dst_len, ..RtMsg::default() }` and read
//! back with `parse`, which also returns the attributes that follow. Each
//! `bytes` is the C struct's layout (native byte order, zero padding).

/// `struct ifinfomsg` (linux/rtnetlink.h): a link.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct IfInfoMsg {
    pub family: u8,
    /// ARPHRD_*.
    pub link_type: u16,
    pub index: u32,
    /// IFF_* flags.
    pub flags: u32,
    /// Which of `flags` a change sets.
    pub change: u32,
}

impl IfInfoMsg {
    pub const LEN: usize = 16;

    pub fn bytes(&self) -> [u8; Self::LEN] {
        let mut h = [0u8; Self::LEN];
        h[0] = self.family;
        h[2..4].copy_from_slice(&self.link_type.to_ne_bytes());
        h[4..8].copy_from_slice(&self.index.to_ne_bytes());
        h[8..12].copy_from_slice(&self.flags.to_ne_bytes());
        h[12..16].copy_from_slice(&self.change.to_ne_bytes());
        h
    }

    /// The header of `msg` and the attributes after it.
    pub fn parse(msg: &[u8]) -> Option<(IfInfoMsg, &[u8])> {
        let h: &[u8; Self::LEN] = msg.get(..Self::LEN)?.try_into().ok()?;
        let header = IfInfoMsg {
            family: h[0],
            link_type: u16::from_ne_bytes([h[2], h[3]]),
            index: u32::from_ne_bytes([h[4], h[5], h[6], h[7]]),
            flags: u32::from_ne_bytes([h[8], h[9], h[10], h[11]]),
            change: u32::from_ne_bytes([h[12], h[13], h[14], h[15]]),
        };
        Some((header, &msg[Self::LEN..]))
    }
}

/// `struct ifaddrmsg` (linux/if_addr.h): an address.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct IfAddrMsg {
    pub family: u8,
    pub prefix_len: u8,
    /// IFA_F_* flags that fit 8 bits (the rest go in IFA_FLAGS).
    pub flags: u8,
    pub scope: u8,
    pub index: u32,
}

impl IfAddrMsg {
    pub const LEN: usize = 8;

    pub fn bytes(&self) -> [u8; Self::LEN] {
        let mut h = [0u8; Self::LEN];
        h[0] = self.family;
        h[1] = self.prefix_len;
        h[2] = self.flags;
        h[3] = self.scope;
        h[4..8].copy_from_slice(&self.index.to_ne_bytes());
        h
    }

    pub fn parse(msg: &[u8]) -> Option<(IfAddrMsg, &[u8])> {
        let h: &[u8; Self::LEN] = msg.get(..Self::LEN)?.try_into().ok()?;
        let header = IfAddrMsg {
            family: h[0],
            prefix_len: h[1],
            flags: h[2],
            scope: h[3],
            index: u32::from_ne_bytes([h[4], h[5], h[6], h[7]]),
        };
        Some((header, &msg[Self::LEN..]))
    }
}

/// `struct rtmsg` (linux/rtnetlink.h): a route. `struct fib_rule_hdr`
/// (linux/fib_rules.h) has the same layout, its `action` where `route_type` is
/// and `tos` in the same place.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct RtMsg {
    pub family: u8,
    pub dst_len: u8,
    pub src_len: u8,
    pub tos: u8,
    /// RT_TABLE_*; tables past 255 go in RTA_TABLE with this 0.
    pub table: u8,
    /// RTPROT_*.
    pub protocol: u8,
    /// RT_SCOPE_*.
    pub scope: u8,
    /// RTN_* (a rule's FR_ACT_*).
    pub route_type: u8,
    /// RTM_F_* / RTNH_F_* flags.
    pub flags: u32,
}

impl RtMsg {
    pub const LEN: usize = 12;

    pub fn bytes(&self) -> [u8; Self::LEN] {
        let mut h = [0u8; Self::LEN];
        h[0] = self.family;
        h[1] = self.dst_len;
        h[2] = self.src_len;
        h[3] = self.tos;
        h[4] = self.table;
        h[5] = self.protocol;
        h[6] = self.scope;
        h[7] = self.route_type;
        h[8..12].copy_from_slice(&self.flags.to_ne_bytes());
        h
    }

    pub fn parse(msg: &[u8]) -> Option<(RtMsg, &[u8])> {
        let h: &[u8; Self::LEN] = msg.get(..Self::LEN)?.try_into().ok()?;
        let header = RtMsg {
            family: h[0],
            dst_len: h[1],
            src_len: h[2],
            tos: h[3],
            table: h[4],
            protocol: h[5],
            scope: h[6],
            route_type: h[7],
            flags: u32::from_ne_bytes([h[8], h[9], h[10], h[11]]),
        };
        Some((header, &msg[Self::LEN..]))
    }
}

/// `struct ndmsg` (linux/neighbour.h): a neighbour or FDB entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct NdMsg {
    pub family: u8,
    pub index: u32,
    /// NUD_* state bits.
    pub state: u16,
    /// NTF_* flags.
    pub flags: u8,
    /// RTN_* type.
    pub ndm_type: u8,
}

impl NdMsg {
    pub const LEN: usize = 12;

    pub fn bytes(&self) -> [u8; Self::LEN] {
        let mut h = [0u8; Self::LEN];
        h[0] = self.family;
        h[4..8].copy_from_slice(&self.index.to_ne_bytes());
        h[8..10].copy_from_slice(&self.state.to_ne_bytes());
        h[10] = self.flags;
        h[11] = self.ndm_type;
        h
    }

    pub fn parse(msg: &[u8]) -> Option<(NdMsg, &[u8])> {
        let h: &[u8; Self::LEN] = msg.get(..Self::LEN)?.try_into().ok()?;
        let header = NdMsg {
            family: h[0],
            index: u32::from_ne_bytes([h[4], h[5], h[6], h[7]]),
            state: u16::from_ne_bytes([h[8], h[9]]),
            flags: h[10],
            ndm_type: h[11],
        };
        Some((header, &msg[Self::LEN..]))
    }
}

/// `struct tcmsg` (linux/rtnetlink.h): a qdisc, class or filter.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct TcMsg {
    pub family: u8,
    pub index: u32,
    pub handle: u32,
    pub parent: u32,
    /// A filter's priority (high 16 bits) and protocol (low 16, big-endian).
    pub info: u32,
}

impl TcMsg {
    pub const LEN: usize = 20;

    pub fn bytes(&self) -> [u8; Self::LEN] {
        let mut h = [0u8; Self::LEN];
        h[0] = self.family;
        h[4..8].copy_from_slice(&self.index.to_ne_bytes());
        h[8..12].copy_from_slice(&self.handle.to_ne_bytes());
        h[12..16].copy_from_slice(&self.parent.to_ne_bytes());
        h[16..20].copy_from_slice(&self.info.to_ne_bytes());
        h
    }

    pub fn parse(msg: &[u8]) -> Option<(TcMsg, &[u8])> {
        let h: &[u8; Self::LEN] = msg.get(..Self::LEN)?.try_into().ok()?;
        let word = |at: usize| u32::from_ne_bytes([h[at], h[at + 1], h[at + 2], h[at + 3]]);
        let header = TcMsg {
            family: h[0],
            index: word(4),
            handle: word(8),
            parent: word(12),
            info: word(16),
        };
        Some((header, &msg[Self::LEN..]))
    }
}

/// `struct nfgenmsg` (linux/netfilter/nfnetlink.h): an nfnetlink message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct NfGenMsg {
    /// NFPROTO_*.
    pub family: u8,
    /// NFNETLINK_V0.
    pub version: u8,
    /// The subsystem of a batch message, else 0; big-endian on the wire.
    pub res_id: u16,
}

impl NfGenMsg {
    pub const LEN: usize = 4;

    pub fn bytes(&self) -> [u8; Self::LEN] {
        let [hi, lo] = self.res_id.to_be_bytes();
        [self.family, self.version, hi, lo]
    }
}

/// `struct genlmsghdr` (linux/genetlink.h): a generic netlink message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct GenlMsgHdr {
    pub cmd: u8,
    pub version: u8,
}

impl GenlMsgHdr {
    pub const LEN: usize = 4;

    pub fn bytes(&self) -> [u8; Self::LEN] {
        [self.cmd, self.version, 0, 0]
    }
}

#[cfg(test)]
#[path = "headers_tests.rs"]
mod tests;

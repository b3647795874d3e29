//! From linux/netfilter/nfnetlink_conntrack.h: conntrack messages and the
//! attributes of an entry's tuple and of a dump filter.

// enum cntl_msg_types
pub const IPCTNL_MSG_CT_GET: u16 = 1;
pub const IPCTNL_MSG_CT_DELETE: u16 = 2;

// enum ctattr_type
pub const CTA_TUPLE_ORIG: u16 = 1;
pub const CTA_ZONE: u16 = 18;
pub const CTA_FILTER: u16 = 25;

// enum ctattr_tuple
pub const CTA_TUPLE_PROTO: u16 = 2;

// enum ctattr_l4proto
pub const CTA_PROTO_NUM: u16 = 1;
pub const CTA_PROTO_DST_PORT: u16 = 3;

// enum ctattr_filter
pub const CTA_FILTER_ORIG_FLAGS: u16 = 1;

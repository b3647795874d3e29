//! From linux/netfilter/nf_conntrack_common.h: the conntrack states as bits
//! of a state mask, `NF_CT_STATE_BIT(IP_CT_*)` (xt_conntrack's
//! `XT_CONNTRACK_STATE_BIT` is the same).

/// `NF_CT_STATE_BIT(IP_CT_ESTABLISHED)`.
pub const NF_CT_STATE_ESTABLISHED_BIT: u32 = 1 << 1;
/// `NF_CT_STATE_BIT(IP_CT_RELATED)`.
pub const NF_CT_STATE_RELATED_BIT: u32 = 1 << 2;

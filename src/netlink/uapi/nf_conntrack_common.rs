//! From linux/netfilter/nf_conntrack_common.h: the conntrack states as bits
//! of a state mask, `NF_CT_STATE_BIT(IP_CT_*)` (xt_conntrack's
//! `XT_CONNTRACK_STATE_BIT` is the same). The bits fit xt_conntrack's 16-bit
//! masks; nft's ct state register is 32 bits wide.

/// `NF_CT_STATE_BIT(IP_CT_ESTABLISHED)`.
pub const NF_CT_STATE_ESTABLISHED_BIT: u16 = 1 << 1;
/// `NF_CT_STATE_BIT(IP_CT_RELATED)`.
pub const NF_CT_STATE_RELATED_BIT: u16 = 1 << 2;

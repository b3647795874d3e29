//! From linux/pkt_sched.h: qdisc handles and the tbf and htb options.

/// The root of a link's egress tree, as a parent.
pub const TC_H_ROOT: u32 = 0xFFFF_FFFF;
/// The ingress qdisc (also TC_H_CLSACT), as a parent.
pub const TC_H_INGRESS: u32 = 0xFFFF_FFF1;
/// With TC_H_CLSACT: its ingress side, where ingress filters hang.
pub const TC_H_MIN_INGRESS: u32 = 0xFFF2;
pub const TC_H_MAJ_MASK: u32 = 0xFFFF_0000;

// tbf's TCA_OPTIONS
pub const TCA_TBF_PARMS: u16 = 1;
pub const TCA_TBF_RATE64: u16 = 4;

// htb's TCA_OPTIONS
pub const TCA_HTB_PARMS: u16 = 1;
pub const TCA_HTB_INIT: u16 = 2;
pub const TCA_HTB_RATE64: u16 = 6;
pub const TCA_HTB_CEIL64: u16 = 7;
/// struct tc_htb_glob's `version`.
pub const TC_HTB_PROTOVER: u32 = 3;

//! From linux/tc_act/tc_mirred.h: the mirred action (redirect or mirror).

pub const TCA_MIRRED_PARMS: u16 = 2;
/// struct tc_mirred's `eaction`: redirect to the egress of another link.
pub const TCA_EGRESS_REDIR: i32 = 1;

//! From linux/pkt_cls.h: the u32 classifier, actions and their verdicts.

// u32's TCA_OPTIONS
pub const TCA_U32_CLASSID: u16 = 1;
pub const TCA_U32_SEL: u16 = 5;
pub const TCA_U32_ACT: u16 = 7;
/// struct tc_u32_sel's `flags`: a match ends the classification.
pub const TC_U32_TERMINAL: u8 = 1;

// An action's attributes
pub const TCA_ACT_KIND: u16 = 1;
pub const TCA_ACT_OPTIONS: u16 = 2;

/// The action consumed the packet.
pub const TC_ACT_STOLEN: i32 = 4;

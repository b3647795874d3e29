//! From linux/fib_rules.h: rule attributes (FRA_*) and actions.

pub const FRA_SRC: u16 = 2;
pub const FRA_PRIORITY: u16 = 6;
pub const FRA_TABLE: u16 = 15;
pub const FR_ACT_TO_TBL: u8 = 1;

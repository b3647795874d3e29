//! (to be written: see mod.rs)

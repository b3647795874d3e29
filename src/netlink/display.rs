//! How netlink values read in error texts: as `ip` would print them, never
//! as Rust's `{:?}`.

use super::addr::Family;
use super::link::MacvlanMode;
use super::route::{RT_TABLE_MAIN, Route};
use super::rule::Rule;
use std::fmt;

impl fmt::Display for Family {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Family::V4 => "IPv4",
            Family::V6 => "IPv6",
        })
    }
}

/// `10.0.0.0/24 via 10.0.0.1 dev 3 onlink table 100`.
impl fmt::Display for Route {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.dst)?;
        if let Some(gw) = self.gw {
            write!(f, " via {gw}")?;
        }
        if let Some(oif) = self.oif {
            write!(f, " dev {oif}")?;
        }
        if self.onlink {
            f.write_str(" onlink")?;
        }
        if self.table != RT_TABLE_MAIN {
            write!(f, " table {}", self.table)?;
        }
        Ok(())
    }
}

/// `IPv4 from 10.0.0.0/24 lookup 100 priority 5`, as `ip rule` lists it.
impl fmt::Display for Rule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} from ", self.family)?;
        match self.src {
            Some(src) => write!(f, "{src}")?,
            None => f.write_str("all")?,
        }
        write!(f, " lookup {}", self.table)?;
        if let Some(p) = self.priority {
            write!(f, " priority {p}")?;
        }
        Ok(())
    }
}

/// The mode's `ip link` name.
impl fmt::Display for MacvlanMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.name() {
            Some(name) => f.write_str(name),
            None => write!(f, "mode {}", self.0),
        }
    }
}

#[cfg(test)]
#[path = "display_tests.rs"]
mod tests;

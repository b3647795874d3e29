//! sysctls under /proc/sys/net, read and written from the calling thread, so
//! from inside a container namespace when called on a netns thread.

use std::path::PathBuf;

/// `net.ipv4.conf.eth0.arp_notify` → `/proc/sys/net/ipv4/conf/eth0/arp_notify`.
/// A key with `/` separators keeps dots inside components (`net/ipv4/conf/br0.100/…`),
/// as sysctl(8) does. Only `net.*` keys whose components cannot climb out.
pub fn path(key: &str) -> Result<PathBuf, String> {
    let separator = if key.contains('/') { '/' } else { '.' };
    let parts: Vec<&str> = key.split(separator).collect();
    let escapes = parts
        .iter()
        .any(|p| p.is_empty() || *p == ".." || p.contains('\0'));
    if parts.first() != Some(&"net") || parts.len() < 2 || escapes {
        return Err(format!("invalid net sysctl key {key:?}"));
    }
    Ok(PathBuf::from("/proc/sys").join(parts.join("/")))
}

/// Writes a sysctl.
pub fn set(key: &str, value: &str) -> Result<(), String> {
    let p = path(key)?;
    std::fs::write(&p, value).map_err(|e| format!("failed to set {key}={value}: {e}"))
}

pub fn get(key: &str) -> Result<String, String> {
    let p = path(key)?;
    std::fs::read_to_string(&p)
        .map(|s| s.trim().to_string())
        .map_err(|e| format!("failed to read {key}: {e}"))
}

/// `net/<family>/conf/<ifname>/<name>`: an interface name may contain dots, so
/// the key uses `/` separators that keep it one component.
pub fn conf_key(family: &str, ifname: &str, name: &str) -> String {
    format!("net/{family}/conf/{ifname}/{name}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_stay_under_net() {
        assert_eq!(
            path("net.ipv4.conf.eth0.arp_notify").ok(),
            Some(PathBuf::from("/proc/sys/net/ipv4/conf/eth0/arp_notify"))
        );
        assert_eq!(
            path(&conf_key("ipv4", "br0.100", "forwarding")).ok(),
            Some(PathBuf::from("/proc/sys/net/ipv4/conf/br0.100/forwarding"))
        );
        for bad in [
            "kernel.panic",
            "net..x",
            "net/../kernel",
            "net",
            "net.a\0b",
            "",
        ] {
            assert!(path(bad).is_err(), "{bad:?}");
        }
    }
}

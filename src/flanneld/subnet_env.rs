//! subnet.env, the file our `flannel` plugin (and flannel's) reads: written
//! as flannel's WriteSubnetFile writes it (`pkg/subnet/subnet.go`; atomically,
//! 0644, its directory 0755 as `pkg/subnet/writefile_other.go` and
//! `os.MkdirAll` make them), and read back at start for the subnet this node
//! had (flannel's `main.go` ReadCIDRFromSubnetFile), with the plugin's parser.

use super::alloc::Previous;
use super::config::NetworkConfig;
use crate::plugins::flannel::parse_subnet_env;
use ipnet::{IpNet, Ipv4Net, Ipv6Net};
use std::path::{Path, PathBuf};
use std::{fmt, io};

/// flannel's default `--subnet-file`.
pub const DEFAULT_PATH: &str = "/run/flannel/subnet.env";

/// The file's text: FLANNEL_NETWORK, FLANNEL_SUBNET (the subnet's first
/// host address with its prefix, `10.5.72.1/24`), the IPv6 pair when IPv6 is
/// enabled, FLANNEL_MTU, FLANNEL_IPMASQ, in flannel's order.
pub fn render(
    config: &NetworkConfig,
    subnet: Ipv4Net,
    ipv6_subnet: Option<Ipv6Net>,
    mtu: u32,
    ip_masq: bool,
) -> String {
    let mut out = format!(
        "FLANNEL_NETWORK={}\nFLANNEL_SUBNET={}/{}\n",
        config.network,
        first_host_v4(subnet),
        subnet.prefix_len()
    );
    if let (Some(c), Some(sn6)) = (&config.ipv6, ipv6_subnet) {
        let host = u128::from(sn6.network()).wrapping_add(1);
        out.push_str(&format!(
            "FLANNEL_IPV6_NETWORK={}\nFLANNEL_IPV6_SUBNET={}/{}\n",
            c.network,
            std::net::Ipv6Addr::from(host),
            sn6.prefix_len()
        ));
    }
    out.push_str(&format!("FLANNEL_MTU={mtu}\nFLANNEL_IPMASQ={ip_masq}\n"));
    out
}

fn first_host_v4(subnet: Ipv4Net) -> std::net::Ipv4Addr {
    std::net::Ipv4Addr::from(u32::from(subnet.network()).wrapping_add(1))
}

/// Writes `text` to `path` atomically (a reader sees the old file or the new
/// one), mode 0644, creating its directory 0755 when missing.
pub fn write(path: &Path, text: &str) -> io::Result<()> {
    let dir = path.parent().unwrap_or(Path::new("."));
    crate::files::create_dir_mode(dir, 0o755)?;
    crate::files::write_file_atomic(path, text.as_bytes(), 0o644)
}

/// Why the previous subnet could not be read.
#[derive(Debug)]
pub enum PreviousError {
    Read { path: PathBuf, source: io::Error },
    Parse(crate::cni::Error),
}

impl fmt::Display for PreviousError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PreviousError::Read { path, source } => {
                write!(f, "cannot read {}: {source}", path.display())
            }
            PreviousError::Parse(e) => write!(f, "{e}"),
        }
    }
}

impl std::error::Error for PreviousError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            PreviousError::Read { source, .. } => Some(source),
            PreviousError::Parse(e) => Some(e),
        }
    }
}

/// The subnets the file at `path` names, as network addresses
/// (FLANNEL_SUBNET=10.5.72.1/24 is 10.5.72.0/24). A missing file names none;
/// an unreadable or malformed one is an error (flannel logs it and goes on
/// without: so should the caller).
pub fn read_previous(path: &Path) -> Result<Previous, PreviousError> {
    let text = match crate::files::read_string_limited(path, crate::files::MAX_FILE) {
        Ok(text) => text,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Previous::default()),
        Err(source) => {
            return Err(PreviousError::Read {
                path: path.to_path_buf(),
                source,
            });
        }
    };
    let env = parse_subnet_env(&text, &path.display().to_string()).map_err(PreviousError::Parse)?;
    Ok(Previous {
        subnet: match env.subnet {
            Some(IpNet::V4(n)) => Some(n.trunc()),
            _ => None,
        },
        ipv6_subnet: match env.ipv6_subnet {
            Some(IpNet::V6(n)) => Some(n.trunc()),
            _ => None,
        },
    })
}

#[cfg(test)]
#[path = "subnet_env_tests.rs"]
mod tests;

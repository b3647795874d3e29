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
mod tests {
    use super::*;
    use crate::flanneld::config;

    fn config(text: &str) -> NetworkConfig {
        config::parse(text.as_bytes()).expect("config")
    }

    fn net<T: std::str::FromStr>(s: &str) -> T
    where
        T::Err: std::fmt::Debug,
    {
        s.parse().expect("net")
    }

    /// flannel's own example (`Documentation/reservations.md`): the same
    /// bytes, keys in WriteSubnetFile's order.
    #[test]
    fn renders_flannels_file() {
        let c = config(r#"{"Network":"10.5.0.0/16","Backend":{"Type":"vxlan"}}"#);
        assert_eq!(
            render(&c, net("10.5.52.0/24"), None, 1450, false),
            "FLANNEL_NETWORK=10.5.0.0/16\nFLANNEL_SUBNET=10.5.52.1/24\nFLANNEL_MTU=1450\nFLANNEL_IPMASQ=false\n"
        );
        let c = config(r#"{"Network":"10.5.0.0/16","EnableIPv6":true,"IPv6Network":"fc00::/48"}"#);
        assert_eq!(
            render(
                &c,
                net("10.5.52.0/24"),
                Some(net("fc00:0:0:3::/64")),
                1450,
                true
            ),
            "FLANNEL_NETWORK=10.5.0.0/16\nFLANNEL_SUBNET=10.5.52.1/24\n\
             FLANNEL_IPV6_NETWORK=fc00::/48\nFLANNEL_IPV6_SUBNET=fc00:0:0:3::1/64\n\
             FLANNEL_MTU=1450\nFLANNEL_IPMASQ=true\n"
        );
    }

    /// Our `flannel` plugin reads what is written, and the previous subnet
    /// comes back as its network address; the file is 0644 in a 0755 dir.
    #[test]
    fn the_plugin_reads_what_is_written_and_the_subnet_comes_back() {
        use std::os::unix::fs::PermissionsExt;
        let root =
            std::env::temp_dir().join(format!("cni-multi-subnet-env-{}", std::process::id()));
        let path = root.join("flannel").join("subnet.env");
        assert_eq!(
            read_previous(&path).ok(),
            Some(Previous::default()),
            "no file yet"
        );
        let c = config(r#"{"Network":"10.5.0.0/16","EnableIPv6":true,"IPv6Network":"fc00::/48"}"#);
        let text = render(
            &c,
            net("10.5.72.0/24"),
            Some(net("fc00:0:0:3::/64")),
            1410,
            true,
        );
        write(&path, &text).expect("write");
        let mode = |p: &Path| fs_err::metadata(p).expect("stat").permissions().mode() & 0o7777;
        assert_eq!(mode(&path), 0o644);
        assert_eq!(mode(path.parent().expect("dir")), 0o755);
        let env =
            parse_subnet_env(&fs_err::read_to_string(&path).expect("read"), "t").expect("parse");
        assert_eq!(env.networks, vec![net::<IpNet>("10.5.0.0/16")]);
        assert_eq!(env.subnet, Some(net("10.5.72.0/24")));
        assert_eq!(env.ipv6_networks, vec![net::<IpNet>("fc00::/48")]);
        assert_eq!(env.ipv6_subnet, Some(net("fc00:0:0:3::/64")));
        assert_eq!((env.mtu, env.ipmasq), (1410, true));
        assert_eq!(
            read_previous(&path).ok(),
            Some(Previous {
                subnet: Some(net("10.5.72.0/24")),
                ipv6_subnet: Some(net("fc00:0:0:3::/64")),
            })
        );
        // Rewritten in place: no temporary file left beside it.
        write(&path, &render(&c, net("10.5.9.0/24"), None, 1450, false)).expect("rewrite");
        let names: Vec<_> = fs_err::read_dir(path.parent().expect("dir"))
            .expect("ls")
            .filter_map(|e| e.ok().map(|e| e.file_name()))
            .collect();
        assert_eq!(names, vec![std::ffi::OsString::from("subnet.env")]);
        assert_eq!(
            read_previous(&path).ok().map(|p| p.subnet),
            Some(Some(net("10.5.9.0/24")))
        );
        fs_err::write(&path, "FLANNEL_SUBNET=nonsense\n").expect("garble");
        assert!(matches!(read_previous(&path), Err(PreviousError::Parse(_))));
        let _ = fs_err::remove_dir_all(&root);
    }
}

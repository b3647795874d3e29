//! flanneld's command line and `FLANNELD_*` environment: Go's `flag` syntax
//! (one or two dashes), and an environment variable for every flag not given
//! on the command line (`--etcd-endpoints` <- `FLANNELD_ETCD_ENDPOINTS`),
//! empty values ignored, as flannel's flagutil applies them.

use crate::goflags::{go_to_gnu, parse_go_bool};
use clap::{CommandFactory, FromArgMatches, Parser};
use std::ffi::OsString;
use std::path::PathBuf;

/// flannel's network daemon in etcd mode: leases a subnet for this node from
/// etcd, writes it to the subnet file the flannel CNI plugin reads, and keeps
/// the vxlan or host-gw routes to every other node's subnet.
#[derive(Debug, Parser, Clone)]
#[command(name = "flanneld", version, long_about = None)]
pub struct Flags {
    /// A comma-delimited list of etcd endpoints
    #[arg(
        long,
        value_name = "URLS",
        default_value = "http://127.0.0.1:4001,http://127.0.0.1:2379"
    )]
    pub etcd_endpoints: String,
    /// etcd prefix
    #[arg(long, value_name = "PREFIX", default_value = "/coreos.com/network")]
    pub etcd_prefix: String,
    /// SSL key file used to secure etcd communication
    #[arg(long, value_name = "PATH")]
    pub etcd_keyfile: Option<PathBuf>,
    /// SSL certification file used to secure etcd communication
    #[arg(long, value_name = "PATH")]
    pub etcd_certfile: Option<PathBuf>,
    /// SSL Certificate Authority file used to secure etcd communication
    #[arg(long, value_name = "PATH")]
    pub etcd_cafile: Option<PathBuf>,
    /// Username for BasicAuth to etcd
    #[arg(long, value_name = "NAME")]
    pub etcd_username: Option<String>,
    /// Password for BasicAuth to etcd
    #[arg(long, value_name = "PASSWORD")]
    pub etcd_password: Option<String>,
    /// Interface to use (IP or name) for inter-host communication; repeatable, first usable wins
    #[arg(long, value_name = "IFACE")]
    pub iface: Vec<String>,
    /// Use the interface the kernel would route to this IP on (as `ip route
    /// get IP`), when no --iface is usable
    #[arg(long, value_name = "IP")]
    pub iface_can_reach: Option<std::net::IpAddr>,
    /// IP accessible by other nodes for inter-host communication
    #[arg(long, value_name = "IP")]
    pub public_ip: Option<std::net::Ipv4Addr>,
    /// IPv6 accessible by other nodes for inter-host communication
    #[arg(long, value_name = "IP")]
    pub public_ipv6: Option<std::net::Ipv6Addr>,
    /// Filename where env variables (subnet, MTU, ...) will be written to
    #[arg(long, value_name = "PATH", default_value = "/run/flannel/subnet.env")]
    pub subnet_file: PathBuf,
    /// Setup IP masquerade rule for traffic destined outside of overlay network
    #[arg(long, num_args = 0..=1, default_missing_value = "true", value_parser = parse_go_bool, value_name = "BOOL", default_value = "false")]
    pub ip_masq: bool,
    /// Leave --random-fully off the masquerade rules
    #[arg(long, num_args = 0..=1, default_missing_value = "true", value_parser = parse_go_bool, value_name = "BOOL", default_value = "false")]
    pub ip_masq_fully_random_disable: bool,
    /// Add default accept rules to FORWARD chain in iptables
    #[arg(long, num_args = 0..=1, default_missing_value = "true", value_parser = parse_go_bool, value_name = "BOOL", default_value = "true")]
    pub iptables_forward_rules: bool,
    /// Subnet lease renewal margin, in minutes (1..1439); with etcd keepalives it
    /// only bounds how long etcd may be unreachable before the lease is re-created
    #[arg(long, value_name = "MINUTES", default_value = "60", value_parser = clap::value_parser!(u32).range(1..=1439))]
    pub subnet_lease_renew_margin: u32,
    /// The IP address on which to listen for health checks
    #[arg(long, value_name = "IP", default_value = "0.0.0.0")]
    pub healthz_ip: std::net::IpAddr,
    /// The port to listen on for health checks (0 disables them)
    #[arg(long, value_name = "PORT", default_value = "0")]
    pub healthz_port: u16,
    /// Seconds between checks that the routes, neighbours, FDB entries and
    /// rules flanneld owns are all present (and no stale ones remain)
    #[arg(long, value_name = "SECONDS", default_value = "10", value_parser = clap::value_parser!(u64).range(1..))]
    pub resync: u64,
    /// Subnet lease TTL in seconds (flannel's is fixed at 24 h)
    #[arg(long, value_name = "SECONDS", default_value = "86400", value_parser = clap::value_parser!(i64).range(10..))]
    pub subnet_lease_ttl: i64,
    /// Log verbosity (accepted for compatibility)
    #[arg(short = 'v', long = "v", value_name = "LEVEL", default_value = "0")]
    pub verbosity: u32,
}

/// The flags that take a value (`-name value` in Go syntax).
const VALUED: &[&str] = &[
    "etcd-endpoints",
    "etcd-prefix",
    "etcd-keyfile",
    "etcd-certfile",
    "etcd-cafile",
    "etcd-username",
    "etcd-password",
    "iface",
    "iface-can-reach",
    "public-ip",
    "public-ipv6",
    "subnet-file",
    "subnet-lease-renew-margin",
    "healthz-ip",
    "healthz-port",
    "resync",
    "subnet-lease-ttl",
    "v",
];

impl Flags {
    /// Parses `args` (after the program name), then fills each flag not given
    /// there from `env` (`FLANNELD_<FLAG>`).
    pub fn parse(
        args: &[OsString],
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Result<Flags, clap::Error> {
        let given = go_to_gnu(args, VALUED);
        let named: Vec<String> = given
            .iter()
            .filter_map(|a| a.to_str())
            .filter_map(|a| a.strip_prefix("--"))
            .map(|a| a.split('=').next().unwrap_or(a).to_string())
            .collect();
        let mut argv = vec![OsString::from("flanneld")];
        let cmd = Flags::command();
        for arg in cmd.get_arguments() {
            let Some(long) = arg.get_long() else { continue };
            if long == "help" || long == "version" || named.iter().any(|n| n == long) {
                continue;
            }
            let var = format!(
                "FLANNELD_{}",
                long.to_ascii_uppercase().replace(['-', '.'], "_")
            );
            if let Some(value) = env(&var).filter(|v| !v.is_empty()) {
                if long == "iface" {
                    // flannel's env form of a repeatable flag is a comma list.
                    for one in value.split(',').filter(|v| !v.is_empty()) {
                        argv.push(OsString::from(format!("--{long}={one}")));
                    }
                } else {
                    argv.push(OsString::from(format!("--{long}={value}")));
                }
            }
        }
        argv.extend(given);
        let matches = cmd.try_get_matches_from(argv)?;
        Flags::from_arg_matches(&matches)
    }

    pub fn endpoints(&self) -> Vec<String> {
        self.etcd_endpoints
            .split(',')
            .map(str::trim)
            .filter(|e| !e.is_empty())
            .map(str::to_string)
            .collect()
    }

    /// The key holding the network config, and the prefix of the leases.
    pub fn config_key(&self) -> String {
        format!("{}/config", self.etcd_prefix.trim_end_matches('/'))
    }

    pub fn subnets_prefix(&self) -> String {
        format!("{}/subnets/", self.etcd_prefix.trim_end_matches('/'))
    }
}

#[cfg(test)]
#[path = "flags_tests.rs"]
mod tests;

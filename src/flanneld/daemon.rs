//! The daemon's life: configure, lease, set up, then one loop that keeps the
//! data path equal to what etcd says, until a signal (which leaves the lease,
//! the device, routes and rules in place, so pods keep talking) or the loss
//! of our subnet to another node.

use super::alloc::{Held, Previous};
use super::backend::{DataPath, Mode, Peer, Peer6, Side6, VxlanConf};
use super::config::{self, Backend, NetworkConfig};
use super::flags::Flags;
use super::lease::{LeaseAttrs, VxlanData};
use super::registry::{self, Own, Recovered};
use super::watch::Leases;
use super::{Msg, health, iface, log, subnet_env};
use crate::etcd::Client;
use anyhow::{Context, Result, bail};
use ipnet::{IpNet, Ipv4Net};
use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::time::Duration;

/// How often the iptables rules are checked (flannel: every 5 s).
const RULES_EVERY: Duration = Duration::from_secs(60);

/// Runs until a signal (Ok(0)), our lease is deleted by an operator (Ok(0),
/// as flannel), or a fault (Err: exit 1).
pub fn run(flags: Flags) -> Result<i32> {
    let (tx, rx) = mpsc::channel();
    signals(tx.clone())?;
    let client = Client::new(&etcd_config(&flags)).context("etcd client")?;
    let config = wait_for_config(&client, &flags, &rx)?;
    let Some(config) = config else { return Ok(0) };

    let mut sock = crate::netlink::Socket::open().context("netlink")?;
    let ext = iface::choose(
        &mut sock,
        &flags.iface,
        flags.iface_can_reach,
        flags.public_ip,
    )?;
    log(format!(
        "using interface {} (address {}, public address {}): {}",
        ext.link.name, ext.iface_ip, ext.public_ip, ext.reason
    ));
    let v6 = match &config.ipv6 {
        Some(c6) => {
            let (iface_ip, public_ip) = iface::ipv6_of(&mut sock, &ext.link, flags.public_ipv6)?;
            log(format!(
                "IPv6 on {}: address {iface_ip}, public address {public_ip}",
                ext.link.name
            ));
            Some(Side6 {
                network: c6.network,
                own: None,
                iface_ip,
                public_ip,
            })
        }
        None => None,
    };
    let mode = match &config.backend {
        Backend::Vxlan {
            vni,
            port,
            mtu,
            gbp,
            learning,
            direct_routing,
        } => Mode::Vxlan(VxlanConf {
            vni: *vni,
            port: *port,
            mtu: *mtu,
            gbp: *gbp,
            learning: *learning,
            direct_routing: *direct_routing,
        }),
        Backend::HostGw => {
            if ext.public_ip != ext.iface_ip {
                bail!(
                    "host-gw needs the public IP ({}) to be the interface's ({})",
                    ext.public_ip,
                    ext.iface_ip
                );
            }
            if let Some(s6) = v6.as_ref().filter(|s6| s6.public_ip != s6.iface_ip) {
                bail!(
                    "host-gw needs the public IPv6 ({}) to be the interface's ({})",
                    s6.public_ip,
                    s6.iface_ip
                );
            }
            Mode::HostGw
        }
    };
    let mut path = DataPath {
        mode,
        ext,
        network: config.network,
        own: None,
        v6,
    };
    let public_ipv6 = path.v6.as_ref().map(|s6| s6.public_ip);
    let attrs = match path.ensure_device(&mut sock)? {
        Some(vteps) => {
            let vni = vni_of(&path);
            LeaseAttrs::vxlan(
                path.ext.public_ip,
                VxlanData {
                    vni,
                    vtep_mac: vteps.v4,
                },
                public_ipv6
                    .zip(vteps.v6)
                    .map(|(ip, vtep_mac)| (ip, VxlanData { vni, vtep_mac })),
            )
        }
        None => LeaseAttrs::host_gw(path.ext.public_ip, public_ipv6),
    };

    // A subnet file we cannot read only costs the hint it would give.
    let previous = subnet_env::read_previous(&flags.subnet_file).unwrap_or_else(|e| {
        log(format!("{e}: choosing a subnet without it"));
        Previous::default()
    });
    let Some(mut own) = acquire(&client, &flags, &config, &attrs, &previous, &rx)? else {
        return Ok(0);
    };
    path.own = Some(own.subnet);
    if let Some(s6) = path.v6.as_mut() {
        s6.own = own.ipv6_subnet;
    }
    path.ensure_device(&mut sock)?;
    let env = subnet_env::render(
        &config,
        own.subnet,
        own.ipv6_subnet,
        path.mtu(),
        flags.ip_masq,
    );
    subnet_env::write(&flags.subnet_file, &env)
        .with_context(|| format!("writing {}", flags.subnet_file.display()))?;
    log(format!(
        "wrote {} (subnet {}, MTU {})",
        flags.subnet_file.display(),
        own.subnet,
        path.mtu()
    ));
    let random_fully = |family| {
        flags.ip_masq
            && !flags.ip_masq_fully_random_disable
            && crate::netfilter::flannel::has_random_fully(family)
    };
    let mut plans = vec![crate::netfilter::flannel::Plan {
        network: IpNet::V4(config.network),
        subnet: IpNet::V4(own.subnet),
        masq: flags.ip_masq,
        forward: flags.iptables_forward_rules,
        random_fully: random_fully(crate::netfilter::Family::V4),
    }];
    if let (Some(c6), Some(sn6)) = (&config.ipv6, own.ipv6_subnet) {
        plans.push(crate::netfilter::flannel::Plan {
            network: IpNet::V6(c6.network),
            subnet: IpNet::V6(sn6),
            masq: flags.ip_masq,
            forward: flags.iptables_forward_rules,
            random_fully: random_fully(crate::netfilter::Family::V6),
        });
    }
    let rules = Rules { plans };
    rules.ensure()?;
    let mut rules_checked = std::time::Instant::now();

    let ready = Arc::new(AtomicBool::new(true));
    if flags.healthz_port != 0 {
        let addr = std::net::SocketAddr::new(flags.healthz_ip, flags.healthz_port);
        health::serve(addr, ready.clone())
            .with_context(|| format!("listening on {addr} for health checks"))?;
    }
    health::notify_ready();

    let lease_id = Arc::new(AtomicI64::new(own.lease));
    keepalive(
        client.clone(),
        lease_id.clone(),
        flags.subnet_lease_ttl,
        flags.subnet_lease_renew_margin,
        tx.clone(),
    )?;
    super::watch::spawn(client.clone(), flags.subnets_prefix(), tx)
        .context("starting the watch")?;

    let mut peers: BTreeMap<Ipv4Net, Peer> = BTreeMap::new();
    let resync = Duration::from_secs(flags.resync);
    loop {
        let msg = match rx.recv_timeout(resync) {
            Ok(m) => Some(m),
            Err(RecvTimeoutError::Timeout) => None,
            Err(RecvTimeoutError::Disconnected) => bail!("every worker thread ended"),
        };
        match msg {
            Some(Msg::Stop(signal)) => {
                log(format!(
                    "{signal}: exiting; the lease, device, routes and rules stay for the next start"
                ));
                return Ok(0);
            }
            Some(Msg::Leases(leases)) => {
                if !leases.contains_key(&own.key) {
                    match own_missing(&client, &own, flags.subnet_lease_ttl)? {
                        Some(again) => {
                            own = again;
                            lease_id.store(own.lease, Ordering::SeqCst);
                        }
                        None => {
                            log("Lease has been revoked. Shutting down daemon.");
                            return Ok(0);
                        }
                    }
                }
                peers = peers_of(&flags.subnets_prefix(), &leases, &own);
            }
            Some(Msg::LeaseExpired) => {
                own = recover(&client, &own, flags.subnet_lease_ttl)?;
                lease_id.store(own.lease, Ordering::SeqCst);
            }
            None => {
                // The periodic pass: the device, then rules, then peers below.
                if let Err(e) = path.ensure_device(&mut sock) {
                    log(format!("vxlan device: {e:#}"));
                }
                // Firewall rules less often: each check is two iptables-save runs.
                if (flags.ip_masq || flags.iptables_forward_rules)
                    && rules_checked.elapsed() >= RULES_EVERY
                {
                    rules_checked = std::time::Instant::now();
                    if let Err(e) = rules.ensure() {
                        log(format!("rules: {e:#}"));
                    }
                }
            }
        }
        match path.reconcile(&mut sock, &peers) {
            Ok(c) if !c.is_empty() => log(format!(
                "routes: added [{}], removed [{}]",
                c.added.join(", "),
                c.removed.join(", ")
            )),
            Ok(_) => {}
            Err(e) => log(format!("reconcile: {e:#}")),
        }
    }
}

fn vni_of(path: &DataPath) -> u32 {
    match &path.mode {
        Mode::Vxlan(v) => v.vni,
        Mode::HostGw => 0,
    }
}

pub fn etcd_config(flags: &Flags) -> crate::etcd::Config {
    crate::etcd::Config {
        endpoints: flags.endpoints(),
        ca_file: flags.etcd_cafile.clone(),
        cert_file: flags.etcd_certfile.clone(),
        key_file: flags.etcd_keyfile.clone(),
        username: flags.etcd_username.clone(),
        password: flags.etcd_password.clone(),
        timeout: Duration::from_secs(10),
    }
}

/// flannel retries every second until the config exists; so do we, saying
/// why once per change. None: a signal came first.
fn wait_for_config(
    client: &Client,
    flags: &Flags,
    rx: &mpsc::Receiver<Msg>,
) -> Result<Option<NetworkConfig>> {
    let key = flags.config_key();
    let mut said = String::new();
    loop {
        let why = match client.range(key.as_bytes()) {
            Ok((Some(kv), _)) => match config::parse(&kv.value).and_then(supported) {
                Ok(c) => return Ok(Some(c)),
                Err(e) => format!("{key}: {e}"),
            },
            Ok((None, _)) => format!("flannel config not found in etcd store ({key})"),
            Err(e) => format!("etcd: {e}"),
        };
        if why != said {
            log(format!("{why}; retrying every second"));
            said = why;
        }
        if let Ok(Msg::Stop(_)) = rx.recv_timeout(Duration::from_secs(1)) {
            return Ok(None);
        }
    }
}

/// Acquires our lease, retrying while etcd is unreachable. A config that
/// leaves no subnet for us is fatal, as it is to flannel.
fn acquire(
    client: &Client,
    flags: &Flags,
    config: &NetworkConfig,
    attrs: &LeaseAttrs,
    previous: &Previous,
    rx: &mpsc::Receiver<Msg>,
) -> Result<Option<Own>> {
    let mut backoff = Duration::from_millis(100);
    let mut pick = random_pick();
    loop {
        match registry::acquire(
            client,
            &flags.subnets_prefix(),
            config,
            attrs,
            previous,
            flags.subnet_lease_ttl,
            &mut pick,
        ) {
            Ok((own, choice)) => {
                let v6 = own
                    .ipv6_subnet
                    .map(|s| format!(" and {s}"))
                    .unwrap_or_default();
                log(format!(
                    "leased {}{v6} for public address {} ({choice})",
                    own.subnet, attrs.public_ip
                ));
                return Ok(Some(own));
            }
            Err(e) if is_unavailable(&e) => {
                log(format!(
                    "etcd unreachable while leasing a subnet: {e:#}; retrying in {backoff}",
                    backoff = crate::quote::Took(backoff)
                ));
            }
            Err(e) => return Err(e.context("failed to acquire a subnet lease")),
        }
        if let Ok(Msg::Stop(_)) = rx.recv_timeout(backoff) {
            return Ok(None);
        }
        backoff = (backoff * 2).min(Duration::from_secs(5));
    }
}

fn is_unavailable(e: &anyhow::Error) -> bool {
    e.chain().any(|c| {
        c.downcast_ref::<crate::etcd::Error>()
            .is_some_and(|e| e.is_unavailable())
    })
}

/// Our key is gone from etcd. Deleted while our etcd lease lives: an
/// operator removed this node (flannel shuts down, so do we: None). Gone
/// with the lease: expired while etcd was out of reach, so take it again.
fn own_missing(client: &Client, own: &Own, ttl: i64) -> Result<Option<Own>> {
    let alive = own.lease != 0
        && client
            .lease_time_to_live(own.lease)
            .map(|t| t > 0)
            .unwrap_or(true);
    if own.lease == 0 || alive {
        return Ok(None);
    }
    recover(client, own, ttl).map(Some)
}

fn recover(client: &Client, own: &Own, ttl: i64) -> Result<Own> {
    match registry::recreate(client, own, ttl)? {
        Recovered::Same(again) => {
            log(format!(
                "our lease on {} had expired: taken again",
                own.subnet
            ));
            Ok(again)
        }
        Recovered::Taken(by) => bail!(
            "our subnet {} was leased to {by} while our lease had expired",
            own.subnet
        ),
    }
}

/// Peers from the leases (ours excluded; unreadable ones skipped).
fn peers_of(prefix: &str, leases: &Leases, own: &Own) -> BTreeMap<Ipv4Net, Peer> {
    leases
        .iter()
        .filter(|(key, _)| **key != own.key)
        .filter_map(|(key, kv)| {
            let held = Held::from_kv(key.strip_prefix(prefix)?, &kv.value, kv.lease != 0)?;
            let attrs = held.attrs.ok()?;
            let v6 = match (held.ipv6_subnet, attrs.public_ipv6) {
                (Some(subnet), Some(public_ip)) => Some(Peer6 {
                    subnet,
                    public_ip,
                    vtep_mac: attrs.vxlan_v6_data().ok().map(|d| d.vtep_mac),
                }),
                _ => None,
            };
            let peer = Peer {
                public_ip: attrs.public_ip,
                vtep_mac: attrs.vxlan_data().ok().map(|d| d.vtep_mac),
                backend_type: attrs.backend_type,
                v6,
            };
            Some((held.subnet, peer))
        })
        .collect()
}

/// What this flanneld does not do is refused up front, saying so.
fn supported(c: NetworkConfig) -> Result<NetworkConfig, config::ConfigError> {
    if c.enable_nftables {
        return Err(config::ConfigError("EnableNFTables: nftables mode is not supported by cni-multi flanneld; iptables mode only".into()));
    }
    Ok(c)
}

/// Keeps our etcd lease alive, every min(TTL/3, margin); an expired lease is
/// reported to the loop, which re-creates it.
fn keepalive(
    client: Client,
    lease: Arc<AtomicI64>,
    ttl: i64,
    margin_min: u32,
    tx: mpsc::Sender<Msg>,
) -> Result<()> {
    let period = Duration::from_secs(((ttl / 3).max(1) as u64).min(u64::from(margin_min) * 60));
    std::thread::Builder::new()
        .name("keepalive".into())
        .spawn(move || {
            let mut wait = period;
            loop {
                std::thread::sleep(wait);
                let id = lease.load(Ordering::SeqCst);
                if id == 0 {
                    continue;
                }
                match client.lease_keepalive(id) {
                    Ok(0) => {
                        if tx.send(Msg::LeaseExpired).is_err() {
                            return;
                        }
                        wait = Duration::from_secs(1);
                    }
                    Ok(_) => wait = period,
                    Err(e) => {
                        log(format!("lease keepalive: {e}; retrying"));
                        wait = Duration::from_secs(5).min(period);
                    }
                }
            }
        })
        .context("starting the keepalive thread")?;
    Ok(())
}

/// SIGTERM and SIGINT become a message to the loop (blocked here, before any
/// other thread exists, so every thread inherits the mask).
fn signals(tx: mpsc::Sender<Msg>) -> Result<()> {
    use nix::sys::signal::{SigSet, Signal};
    let mut set = SigSet::empty();
    set.add(Signal::SIGTERM);
    set.add(Signal::SIGINT);
    set.thread_block().context("blocking SIGTERM and SIGINT")?;
    std::thread::Builder::new()
        .name("signals".into())
        .spawn(move || {
            loop {
                match set.wait() {
                    Ok(s) => {
                        let _ = tx.send(Msg::Stop(s));
                        return;
                    }
                    Err(nix::errno::Errno::EINTR) => continue,
                    Err(_) => return,
                }
            }
        })
        .context("starting the signal thread")?;
    Ok(())
}

/// A chooser over `n` free subnets, seeded from the kernel's randomness.
fn random_pick() -> impl FnMut(usize) -> usize {
    let mut state = {
        use std::io::Read;
        let mut seed = [0u8; 8];
        let read = std::fs::File::open("/dev/urandom").and_then(|mut f| f.read_exact(&mut seed));
        if read.is_err() {
            // Time and pid still differ between nodes starting together.
            let now = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap_or_default();
            seed = (now.as_nanos() as u64 ^ u64::from(std::process::id()) << 32).to_ne_bytes();
        }
        u64::from_ne_bytes(seed) | 1
    };
    move |n| {
        // xorshift64*: enough to spread nodes over free subnets.
        state ^= state >> 12;
        state ^= state << 25;
        state ^= state >> 27;
        (state.wrapping_mul(0x2545_F491_4F6C_DD1D) % n.max(1) as u64) as usize
    }
}

/// ip-masq and FORWARD rules (flannel's iptables mode) per family,
/// re-applied when missing.
struct Rules {
    plans: Vec<crate::netfilter::flannel::Plan>,
}

impl Rules {
    fn ensure(&self) -> Result<()> {
        crate::netfilter::flannel::ensure(&self.plans).context("flannel's iptables rules")
    }
}

//! Floors: the kernel work of one pod's ADD or DEL done alone, in this
//! process, so that a row's distance to what the kernel costs is a number.
//! Links, addresses, qdiscs and conntrack go through the library's netlink
//! layer (one request per kernel object; the only reads are the lookups
//! that give a new link's index), rules through `floor_nft.rs`'s minimal
//! nf_tables writer, one batch per plugin on a socket of its own. The
//! plugins' execs are measured apart: `bench/noop.rs`, a static program that
//! reads its config and prints an empty result, run through the same client
//! once per plugin of the chain.

#[path = "floor_nft.rs"]
pub mod nft;

use super::{Bench, Driver, Impl, Res, concurrent, mean_took, ms, percentile};
use cni_multi::kernel::sysctl;
use cni_multi::netlink::link::{Change, IPV4_DEVCONF_ARP_NOTIFY, Kind, NewLink};
use cni_multi::netlink::{Socket, conntrack, tc};
use cni_multi::netns::NetNs;
use ipnet::{IpNet, Ipv4Net};
use serde_json::{Value, json};
use std::net::Ipv4Addr;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// Which rules a floor pod's ADD writes and its DEL removes.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Rules {
    /// The reference's iptables rules, as iptables-nft encodes them.
    IptablesNft,
    /// Our nftables backends' per-pod rules.
    Nftables,
    /// None: on iptables-legacy the rules are no nf_tables objects.
    None,
}

impl Rules {
    pub fn label(self) -> &'static str {
        match self {
            Rules::IptablesNft => "iptables-nft",
            Rules::Nftables => "nftables",
            Rules::None => "none (iptables-legacy)",
        }
    }
}

/// The rules of a network on the iptables backends: iptables-nft's
/// encoding where `iptables` is the nf_tables flavour.
pub fn iptables_rules() -> Rules {
    static NFT: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    let nft = *NFT.get_or_init(|| {
        std::process::Command::new("iptables")
            .arg("-V")
            .output()
            .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).contains("nf_tables"))
    });
    if nft { Rules::IptablesNft } else { Rules::None }
}

/// What floor pods attach to: a network's bridge, up with its gateway
/// address (as after the network's first ADD), and what its chain runs.
#[derive(Clone, Debug)]
pub struct Site {
    bridge: String,
    subnet: Ipv4Net,
    rules: Rules,
    ipmasq: bool,
    portmap: bool,
    bandwidth: bool,
    /// The chain's length: its execs.
    plugins: usize,
    /// Where pods' reservation files go (host-local's store writes one each).
    store: PathBuf,
}

impl Site {
    /// The site of a plugin list (a bridge on a host-local IPv4 subnet).
    pub fn of(plugins: &Value, rules: Rules, store: PathBuf) -> Res<Site> {
        let bridge = &plugins[0];
        let has = |t: &str| {
            plugins
                .as_array()
                .is_some_and(|l| l.iter().any(|p| p["type"] == t))
        };
        std::fs::create_dir_all(&store).map_err(|e| format!("{}: {e}", store.display()))?;
        Ok(Site {
            bridge: bridge["bridge"].as_str().ok_or("no bridge name")?.into(),
            subnet: bridge["ipam"]["subnet"]
                .as_str()
                .and_then(|s| s.parse().ok())
                .ok_or("no IPv4 subnet")?,
            rules,
            ipmasq: bridge["ipMasq"] == true,
            portmap: has("portmap"),
            bandwidth: has("bandwidth"),
            plugins: plugins.as_array().map_or(1, Vec::len),
            store,
        })
    }

    /// How many plugins its chain execs.
    fn plugins(&self) -> usize {
        self.plugins
    }

    /// Pod `n`'s rules: names, comments and port of their own, an address
    /// high in the subnet (host-local hands out from its start).
    fn pod_rules(&self, n: usize) -> nft::PodRules {
        let base = u32::from(self.subnet.network());
        let ip = Ipv4Addr::from(base + 0xfa00 + n as u32 + 1);
        let id = format!("floor-{n:020x}");
        nft::PodRules {
            masq_chain: format!("CNI-FLOOR-{n:018x}"),
            dnat_chain: format!("CNI-DN-FLOOR-{n:015x}"),
            comment: format!("name: \"bench-floor\" id: \"{id}\""),
            dnat_comment: format!("dnat name: \"bench-floor\" id: \"{id}\""),
            ip,
            prefix: self.subnet.prefix_len(),
            host_port: 40000 + n as u16,
            container_port: 80,
        }
    }
}

/// One floor pod as its ADD left it.
pub struct Pod {
    port: u16,
    host: u32,
    ifb: Option<u32>,
    /// Per plugin batch (bridge's, portmap's): what its DEL removes.
    written: Vec<nft::Written>,
    reservation: PathBuf,
}

/// Milliseconds of one ADD or DEL: all of it, and its nf_tables batches.
#[derive(Clone, Copy, Default, Debug)]
pub struct Took {
    pub total: f64,
    pub nft: f64,
}

fn err(what: &str) -> impl Fn(cni_multi::netlink::Error) -> String + '_ {
    move |e| format!("floor: {what}: {e}")
}

/// bandwidth's tbf for 100 Mbit/s with a 1 Mbit burst (what the chains
/// ask), as the plugin computes it.
fn tbf() -> tc::Tbf {
    let (rate, burst) = (100_000_000u64 / 8, 1_000_000u32 / 8);
    let buffer = ((f64::from(burst) * tc::TIME_UNITS_PER_SEC / rate as f64) as u32 as f64
        * tc::tick_in_usec()) as u32;
    let limit = (rate as f64 * 0.025) as u32 + burst;
    tc::Tbf {
        rate,
        limit,
        buffer,
    }
}

/// Pod `n`'s ADD in namespace `netns`: a reservation file; the veth pair
/// (its peer `eth0` made in the namespace), joined to the bridge and up,
/// ipv6 accept_ra off on the host end; in the namespace arp_notify, ipv6
/// accept_dad off, the address, up; bridge(ipMasq)'s and portmap's
/// nf_tables batches; portmap's UDP conntrack flush; bandwidth's tbf on the
/// host end, its IFB (up) with the ingress redirect to it and its tbf.
pub fn add(site: &Site, n: usize, netns: &str) -> Res<(Pod, Took, Pending)> {
    let start = Instant::now();
    let mut pending = Pending::default();
    let rules = site.pod_rules(n);
    let reservation = site.store.join(rules.ip.to_string());
    std::fs::write(&reservation, format!("floor-{n}\r\neth0"))
        .map_err(|e| format!("floor: {}: {e}", reservation.display()))?;
    let ns = NetNs::open(netns).map_err(|e| format!("floor: {netns}: {e}"))?;
    let mut sock = Socket::open().map_err(err("socket"))?;
    let bridge = sock.link_by_name(&site.bridge).map_err(err("bridge"))?;
    let name = format!("flr{n}");
    let veth = Kind::Veth {
        peer: "eth0".into(),
        peer_netns: Some(ns.fd()),
    };
    sock.create_link(&NewLink::new(&name, veth))
        .map_err(err("veth"))?;
    let host = sock.link_by_name(&name).map_err(err("veth"))?;
    sock.set_link(host.index, Change::Master(Some(bridge.index)))
        .map_err(err("master"))?;
    let _ = sysctl::set(&sysctl::conf_key("ipv6", &name, "accept_ra"), "0");
    sock.set_link(host.index, Change::Up(true))
        .map_err(err("up"))?;
    let address = IpNet::V4(
        Ipv4Net::new(rules.ip, rules.prefix).map_err(|e| format!("floor: address: {e}"))?,
    );
    ns.run(|| -> Res<()> {
        let mut sock = Socket::open().map_err(err("socket in the pod"))?;
        let eth0 = sock.link_by_name("eth0").map_err(err("eth0"))?;
        sock.set_link(eth0.index, Change::Ipv4Conf(IPV4_DEVCONF_ARP_NOTIFY, 1))
            .map_err(err("arp_notify"))?;
        let _ = sysctl::set(&sysctl::conf_key("ipv6", "eth0", "accept_dad"), "0");
        sock.add_address(eth0.index, address, 0)
            .map_err(err("address"))?;
        sock.set_link(eth0.index, Change::Up(true))
            .map_err(err("eth0 up"))
    })
    .map_err(|e| format!("floor: {netns}: {e}"))??;
    let nft_start = Instant::now();
    let mut batches = Vec::new();
    if site.ipmasq {
        batches.push(match site.rules {
            Rules::IptablesNft => nft::ipt_masq_add(&rules),
            Rules::Nftables => nft::nft_masq_add(&rules),
            Rules::None => Vec::new(),
        });
    }
    if site.portmap {
        batches.push(match site.rules {
            Rules::IptablesNft => nft::ipt_portmap_add(&rules),
            Rules::Nftables => nft::nft_portmap_add(&rules),
            Rules::None => Vec::new(),
        });
    }
    let mut written = Vec::new();
    for ops in &batches {
        let mut w = nft::Written::default();
        pending.close(nft::commit(ops, &mut w)?);
        written.push(w);
    }
    let nft_ms = ms(nft_start.elapsed());
    if site.portmap {
        // As portmap's ADD: the host port's stale UDP flows are gone
        // before it returns.
        let _ = conntrack::delete_by_dport(2, 17, &[rules.host_port]);
    }
    let mut ifb = None;
    if site.bandwidth {
        sock.add_tbf(host.index, tbf()).map_err(err("tbf"))?;
        let ifb_name = format!("flrb{n}");
        let mut spec = NewLink::new(&ifb_name, Kind::Ifb);
        spec.mtu = Some(host.mtu);
        spec.txqlen = Some(0);
        sock.create_link(&spec).map_err(err("ifb"))?;
        let link = sock.link_by_name(&ifb_name).map_err(err("ifb"))?;
        ifb = Some(link.index);
        sock.set_link(
            link.index,
            Change::Alias(&format!("bench-floor/floor-{n}/eth0")),
        )
        .map_err(err("ifb alias"))?;
        sock.set_link(link.index, Change::Up(true))
            .map_err(err("ifb up"))?;
        sock.add_ingress(host.index).map_err(err("ingress"))?;
        sock.add_redirect(host.index, link.index)
            .map_err(err("redirect"))?;
        sock.add_tbf(link.index, tbf()).map_err(err("ifb tbf"))?;
    }
    let pod = Pod {
        port: rules.host_port,
        host: host.index,
        ifb,
        written,
        reservation,
    };
    let took = Took {
        total: ms(start.elapsed()),
        nft: nft_ms,
    };
    Ok((pod, took, pending))
}

/// What an ADD or DEL leaves for later, off the clock, as a plugin can
/// leave it to a detached child: link deletions waiting out their RCU
/// grace periods on other threads (the links are already unlisted), and
/// the nf_tables sockets, closed once the operation is over: closing one
/// after a batch that deleted rules waits for the kernel's deferred
/// destruction of them (a grace period too), holding the nf_tables commit
/// lock meanwhile, so closed any earlier it would stall the next batch.
/// `wait` gives the closes' time.
#[must_use]
#[derive(Default)]
pub struct Pending {
    links: Vec<std::thread::JoinHandle<Res<()>>>,
    sockets: Vec<neli::socket::NlSocket>,
}

impl Pending {
    fn close(&mut self, sock: Option<neli::socket::NlSocket>) {
        self.sockets.extend(sock);
    }

    /// Closes the sockets and waits for the deletions; the milliseconds
    /// the closes took.
    pub fn wait(self) -> Res<f64> {
        let start = Instant::now();
        drop(self.sockets);
        let closing = ms(start.elapsed());
        for worker in self.links {
            worker
                .join()
                .map_err(|_| "floor: a link deletion panicked".to_string())??;
        }
        Ok(closing)
    }
}

/// Deletes link `index` from another thread and returns once the kernel
/// has unlisted it, as the plugins' DELs return: the deleting call then
/// still waits for RCU grace periods nobody can observe.
fn unlist(sock: &mut Socket, index: u32, pending: &mut Pending) -> Res<()> {
    let worker = std::thread::spawn(move || {
        let mut sock = Socket::open().map_err(err("socket"))?;
        match sock.delete_link(index) {
            Err(e) if !e.is_not_found() => Err(err("delete link")(e)),
            _ => Ok(()),
        }
    });
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        match sock.link_by_index(index) {
            Err(e) if e.is_not_found() => break,
            Err(e) => return Err(err("link")(e)),
            // A deletion that failed leaves the link listed for good.
            Ok(_) if worker.is_finished() || Instant::now() > deadline => {
                worker
                    .join()
                    .map_err(|_| "floor: a link deletion panicked".to_string())??;
                if sock.link_by_index(index).is_ok() {
                    return Err(format!("floor: link {index} is still there"));
                }
                return Ok(());
            }
            Ok(_) => std::thread::sleep(Duration::from_micros(200)),
        }
    }
    pending.links.push(worker);
    Ok(())
}

/// The pod's DEL, in the order the chain's DELs run (bandwidth, portmap,
/// bridge): the IFB; portmap's UDP conntrack flush and batch (its jumps by
/// handle, its chain); bridge(ipMasq)'s batch, the reservation, the veth
/// pair (its qdiscs and filter go with it). The flush goes first: closing
/// its nfnetlink socket after a batch that deleted rules would wait for
/// their deferred destruction (`Pending`).
pub fn del(site: &Site, pod: Pod) -> Res<(Took, Pending)> {
    let start = Instant::now();
    let mut pending = Pending::default();
    let mut sock = Socket::open().map_err(err("socket"))?;
    if let Some(ifb) = pod.ifb {
        unlist(&mut sock, ifb, &mut pending)?;
    }
    if site.portmap {
        let _ = conntrack::delete_by_dport(2, 17, &[pod.port]);
    }
    let mut nft_ms = 0.0;
    for written in pod.written.iter().rev() {
        let t = Instant::now();
        pending.close(nft::commit(
            &written.removal(),
            &mut nft::Written::default(),
        )?);
        nft_ms += ms(t.elapsed());
    }
    std::fs::remove_file(&pod.reservation)
        .map_err(|e| format!("floor: {}: {e}", pod.reservation.display()))?;
    unlist(&mut sock, pod.host, &mut pending)?;
    let took = Took {
        total: ms(start.elapsed()),
        nft: nft_ms,
    };
    Ok((took, pending))
}

/// One ADD per namespace, all at once, each on a thread of its own (pod
/// `i` in `spaces[i]`); the mean per call. Their DELs follow, untimed.
pub fn parallel(site: &Site, spaces: &[String]) -> Res<Took> {
    let added: Vec<Res<(Pod, Took, Pending)>> = std::thread::scope(|scope| {
        let workers: Vec<_> = spaces
            .iter()
            .enumerate()
            .map(|(i, ns)| scope.spawn(move || add(site, i, ns)))
            .collect();
        workers
            .into_iter()
            .map(|w| {
                w.join()
                    .unwrap_or_else(|_| Err("floor: a pod panicked".into()))
            })
            .collect()
    });
    let mut sum = Took::default();
    let mut pods = Vec::new();
    let mut failed = None;
    for a in added {
        match a {
            Ok((pod, took, pending)) => {
                sum.total += took.total;
                sum.nft += took.nft;
                pods.push((pod, pending));
            }
            Err(e) => failed = Some(e),
        }
    }
    let count = pods.len().max(1) as f64;
    for (pod, pending) in pods {
        pending.wait()?;
        del(site, pod)?.1.wait()?;
    }
    match failed {
        Some(e) => Err(e),
        None => Ok(Took {
            total: sum.total / count,
            nft: sum.nft / count,
        }),
    }
}

/// A floor's figures: its parts (kernel work, of which the nf_tables
/// batches; the client's own), each the median (or the mean per call) of
/// what was measured, and their sum.
fn figures(kernel: &[f64], nft: &[f64], exec: &[f64]) -> Value {
    let (kernel, exec) = (percentile(kernel, 0.5), percentile(exec, 0.5));
    json!({
        "total_ms": kernel + exec, "kernel_ms": kernel,
        "nft_ms": percentile(nft, 0.5), "exec_ms": exec,
    })
}

/// Samples of one floor: per measure, the kernel work, its nf_tables part
/// and the no-op chain through the client.
#[derive(Default)]
pub struct Samples {
    /// Per measure: the kernel work, the no-op chain, the socket closes.
    add: Vec<(Took, f64, f64)>,
    del: Vec<(Took, f64, f64)>,
}

impl Samples {
    fn json(v: &[(Took, f64, f64)]) -> Value {
        let kernel: Vec<f64> = v.iter().map(|(t, _, _)| t.total).collect();
        let nft: Vec<f64> = v.iter().map(|(t, _, _)| t.nft).collect();
        let exec: Vec<f64> = v.iter().map(|(_, x, _)| *x).collect();
        let closing: Vec<f64> = v.iter().map(|(_, _, c)| *c).collect();
        let mut f = figures(&kernel, &nft, &exec);
        f["nft_close_ms"] = json!(percentile(&closing, 0.5));
        f
    }

    pub fn to_json(&self) -> Value {
        json!({"add": Samples::json(&self.add), "del": Samples::json(&self.del)})
    }
}

impl Bench {
    /// The client's ADD and DEL of a list of `plugins` no-op plugins: the
    /// execs and the client's own work any plugin set pays through it.
    fn noop_chain(&self, plugins: usize, netns: &str) -> Res<(f64, f64)> {
        let noop = self.noop_impl()?;
        let list: Vec<Value> = (0..plugins)
            .map(|_| json!({"type": "bench-noop"}))
            .collect();
        let name = format!("noop{plugins}");
        let conf = self.conf_dir(&noop, &name, &json!(list))?;
        let none = json!({});
        let add = self.timed(self.cnitool(&noop, &conf, &none, &["add", &name, netns]))?;
        let del = self.timed(self.cnitool(&noop, &conf, &none, &["del", &name, netns]))?;
        Ok((add, del))
    }

    /// Whether the client runs `im`'s plugins in its own process (cnitool
    /// with ours): then no plugin is exec'd, and the client's floor is its
    /// own start and config load, `validate` of the network.
    fn in_process(&self, im: &Impl) -> bool {
        matches!(self.driver, Driver::Cnitool) && im.label == "cni-multi"
    }

    /// What the client costs `im`'s chain of `plugins` on network `net`
    /// (its conf dir and name) before any plugin's own work, ADD and DEL:
    /// the no-op chain, or cnitool's own run where it execs nothing.
    fn client_floor(
        &self,
        im: &Impl,
        net: (&Path, &str),
        plugins: usize,
        ns: &str,
    ) -> Res<(f64, f64)> {
        if self.in_process(im) {
            let none = json!({});
            let validate = || self.timed(self.cnitool(im, net.0, &none, &["validate", net.1]));
            return Ok((validate()?, validate()?));
        }
        self.noop_chain(plugins, ns)
    }

    fn noop_impl(&self) -> Res<Impl> {
        let dir = self.work.join("noop-bin");
        if !dir.join("bench-noop").exists() {
            return Err("the floors need the no-op plugin (--noop)".into());
        }
        Ok(Impl {
            label: "noop",
            plugin_dir: dir,
        })
    }

    /// One floor pod's ADD and DEL (kernel work) in a fresh namespace, and
    /// the client's floor for `im`'s chain on `net`, into `samples`.
    pub fn floor_once(
        &self,
        im: &Impl,
        net: (&Path, &str),
        site: &Site,
        samples: &mut Samples,
    ) -> Res<()> {
        let ns = self.netns()?;
        // Floors are taken one at a time: every one is pod 0.
        let (pod, add, pending) = add(site, 0, &ns)?;
        let add_closing = pending.wait()?;
        if std::env::var_os("BENCH_FLOOR_SHOW").is_some() {
            show(site);
        }
        let (del, pending) = del(site, pod)?;
        let del_closing = pending.wait()?;
        let (noop_add, noop_del) = self.client_floor(im, net, site.plugins(), &ns)?;
        self.drop_netns(&ns);
        samples.add.push((add, noop_add, add_closing));
        samples.del.push((del, noop_del, del_closing));
        Ok(())
    }

    /// The network's state as its rows run in (its bridge and gateway, the
    /// rules' skeleton): one ADD and DEL of it through the client.
    fn prime(&self, im: &Impl, conf: &Path, net: &str, caps: &Value) -> Res<()> {
        let ns = self.netns()?;
        self.timed(self.cnitool(im, conf, caps, &["add", net, &ns]))?;
        self.timed(self.cnitool(im, conf, caps, &["del", net, &ns]))?;
        self.drop_netns(&ns);
        Ok(())
    }

    /// `floor_chain`: the floor of a scenario's ADD and DEL rows, over the
    /// iterations.
    pub fn chain_floor(&self, im: &Impl, name: &str, plugins: &Value, caps: &Value) -> Res<Value> {
        let conf = self.conf_dir(im, name, plugins)?;
        let net = name.replace('+', "-");
        self.prime(im, &conf, &net, caps)?;
        let store = self.work.join(format!("floor-store-{}", im.label));
        let site = Site::of(plugins, iptables_rules(), store)?;
        let mut samples = Samples::default();
        for _ in 0..self.iterations {
            self.floor_once(im, (&conf, &net), &site, &mut samples)?;
        }
        let mut v = samples.to_json();
        v["scenario"] = json!(name);
        v["plugins"] = json!(site.plugins());
        v["rules"] = json!(site.rules.label());
        Ok(v)
    }

    /// `floor_parallel`: `n` floor ADDs of a bridge(ipMasq) pod at once, and
    /// `n` no-op ADDs through the client at once; each the mean per call.
    pub fn parallel_floor(&self, im: &Impl, plugins: &Value, n: usize) -> Res<Value> {
        let conf = self.conf_dir(im, "parallel", plugins)?;
        self.prime(im, &conf, "parallel", &json!({}))?;
        let store = self.work.join(format!("floor-store-{}", im.label));
        let site = Site::of(plugins, iptables_rules(), store)?;
        let spaces: Vec<String> = (0..n).map(|_| self.netns()).collect::<Res<_>>()?;
        let kernel = parallel(&site, &spaces)?;
        let exec = if self.in_process(im) {
            let cmds = spaces.iter().map(|_| {
                let cmd = self.cnitool(im, &conf, &json!({}), &["validate", "parallel"]);
                (cmd, "")
            });
            mean_took(&concurrent(cmds, "parallel validate")?)
        } else {
            let noop = self.noop_impl()?;
            let noop_conf = self.conf_dir(&noop, "noop1", &json!([{"type": "bench-noop"}]))?;
            let run = |verb: &str| {
                let cmds = spaces.iter().map(|ns| {
                    let cmd = self.cnitool(&noop, &noop_conf, &json!({}), &[verb, "noop1", ns]);
                    (cmd, "")
                });
                concurrent(cmds, "parallel no-op")
            };
            let exec = mean_took(&run("add")?);
            run("del")?;
            exec
        };
        for ns in &spaces {
            self.drop_netns(ns);
        }
        Ok(json!({
            "containers": n, "rules": site.rules.label(),
            "add": figures(&[kernel.total], &[kernel.nft], &[exec]),
        }))
    }
}

/// `BENCH_FLOOR_SHOW`: a floor pod's rules as the tools list them, on
/// stderr, to compare with a plugin's.
fn show(site: &Site) {
    let run =
        |cmd: &str, args: &[&str]| {
            let out = std::process::Command::new(cmd).args(args).output();
            let text = out.map(|o| String::from_utf8_lossy(&o.stdout).into_owned());
            for l in text.unwrap_or_default().lines().filter(|l| {
                l.contains("FLOOR") || l.contains("floor-") || l.contains("bench-floor")
            }) {
                eprintln!("floor rule: {l}");
            }
        };
    match site.rules {
        Rules::IptablesNft => run("iptables-save", &["-t", "nat"]),
        Rules::Nftables => run("nft", &["-a", "list", "ruleset"]),
        Rules::None => {}
    }
}

/// The floor of one row: its figures, and the row as a multiple of them.
pub fn cell(row: Option<f64>, floor: &Value) -> String {
    let f = |k: &str| floor[k].as_f64();
    // Closing an nf_tables socket after deletions waits out a grace period
    // a plugin need not wait for: shown, not counted.
    let closing = match f("nft_close_ms") {
        Some(c) if c >= 0.1 => format!("; closing its sockets waits {c:.2} more, not counted"),
        _ => String::new(),
    };
    match (
        row,
        f("total_ms"),
        f("kernel_ms"),
        f("nft_ms"),
        f("exec_ms"),
    ) {
        (Some(row), Some(total), Some(kernel), Some(nft), Some(exec)) if total > 0.0 => format!(
            "{total:.2} ms (kernel {kernel:.2}, of it nf_tables {nft:.2}{closing}; client {exec:.2}); row / floor {:.2}",
            row / total
        ),
        _ => "–".into(),
    }
}

/// The floor of a growth row: the floor's own growth, and the row's as a
/// multiple of it.
pub fn growth_cell(row: Option<f64>, first: &Value, last: &Value) -> String {
    let total = |v: &Value| v["total_ms"].as_f64().filter(|t| *t > 0.0);
    let nft = |v: &Value| v["nft_ms"].as_f64().filter(|t| *t > 0.0);
    match (row, total(first), total(last)) {
        (Some(row), Some(a), Some(b)) => {
            let of_nft = match (nft(first), nft(last)) {
                (Some(x), Some(y)) => format!(" (nf_tables alone {:.2})", y / x),
                _ => String::new(),
            };
            format!("{:.2}{of_nft}; row / floor {:.2}", b / a, row / (b / a))
        }
        _ => "–".into(),
    }
}

/// A floor line of the table: `cells` per implementation (ours, the
/// reference's), empty ratio column.
pub fn line(s: &mut String, label: &str, cells: [String; 2], has_ref: bool) {
    if has_ref {
        s.push_str(&format!("| ↳ {label} | {} | {} | |\n", cells[0], cells[1]));
    } else {
        s.push_str(&format!("| ↳ {label} | {} |\n", cells[0]));
    }
}

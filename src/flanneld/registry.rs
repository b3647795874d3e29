//! This node's subnet lease in etcd, as flannel keeps it
//! (`pkg/subnet/etcd/registry.go`, `local_manager.go`): a key
//! `<prefix>/subnets/<net>-<len>` holding the lease attributes, attached to
//! an etcd lease, created only when absent (a transaction).
//!
//! Where we differ from Go flanneld, on purpose (docs/flanneld.md):
//! - the lease is kept alive with keepalives on one etcd lease, not replaced
//!   by a new lease and a PUT every renewal (no lease build-up, no PUT storm);
//! - a lost creation race is retried (flannel's gives up);
//! - a key without an etcd lease (a reservation) is never given one;
//! - an expired lease (etcd unreachable longer than the TTL) is re-created
//!   on the same subnet; only another node holding it by then is fatal.

use super::alloc::{self, Choice, Held, Previous};
use super::config::NetworkConfig;
use super::lease::{self, LeaseAttrs};
use super::log;
use crate::etcd::{Client, KeyValue};
use anyhow::{Context, Result, bail};
use ipnet::{Ipv4Net, Ipv6Net};

/// Rounds of list-choose-create before giving up (flannel's raceRetries).
const ROUNDS: usize = 10;

/// Our lease as it stands.
#[derive(Debug, Clone)]
pub struct Own {
    pub key: String,
    pub subnet: Ipv4Net,
    /// Our IPv6 subnet (EnableIPv6).
    pub ipv6_subnet: Option<Ipv6Net>,
    /// The etcd lease the key is attached to; 0 for a reservation.
    pub lease: i64,
    pub attrs: LeaseAttrs,
}

/// Finds or creates our lease. `previous` is what the subnet file names from
/// an earlier run; `pick` chooses among free subnets.
#[allow(clippy::too_many_arguments)]
pub fn acquire(
    client: &Client,
    prefix: &str,
    config: &NetworkConfig,
    attrs: &LeaseAttrs,
    previous: &Previous,
    ttl: i64,
    pick: &mut dyn FnMut(usize) -> usize,
) -> Result<(Own, Choice)> {
    let value = attrs.to_json();
    for _ in 0..ROUNDS {
        let (kvs, _) = client
            .range_prefix(prefix.as_bytes())
            .context("listing subnet leases")?;
        let (held, kvs) = held_of(prefix, &kvs);
        let decision = alloc::choose(config, &held, attrs.public_ip, previous, pick)?;
        for &i in &decision.duplicates {
            log(format!(
                "{} also names our public address {}: another node may be configured with it",
                key_str(kvs[i]),
                attrs.public_ip
            ));
        }
        for &i in &decision.delete {
            let key = key_str(kvs[i]);
            log(format!(
                "deleting our old lease {key}: it no longer fits the network config"
            ));
            client
                .delete(&kvs[i].key)
                .with_context(|| format!("deleting {key}"))?;
        }
        let choice = decision.choice;
        match &choice {
            Choice::Reuse {
                index,
                subnet,
                ipv6_subnet,
                reservation,
            } => {
                let kv = kvs[*index];
                let key = key_str(kv);
                // A reservation (no etcd lease) stays one: flannel attaches a
                // lease and so ends it.
                let lease = if *reservation {
                    0
                } else if client.lease_keepalive(kv.lease).unwrap_or(0) > 0 {
                    kv.lease
                } else {
                    client.lease_grant(ttl).context("granting a lease")?.0
                };
                if client.put_if_mod_revision(&kv.key, value.as_bytes(), lease, kv.mod_revision)? {
                    let own = Own {
                        key,
                        subnet: *subnet,
                        ipv6_subnet: *ipv6_subnet,
                        lease,
                        attrs: attrs.clone(),
                    };
                    return Ok((own, choice));
                }
            }
            Choice::Create {
                subnet,
                ipv6_subnet,
                ..
            } => {
                let key = format!("{prefix}{}", lease::subnet_key(*subnet, *ipv6_subnet));
                let (lease, _) = client.lease_grant(ttl).context("granting a lease")?;
                if client.create(key.as_bytes(), value.as_bytes(), lease)? {
                    let own = Own {
                        key,
                        subnet: *subnet,
                        ipv6_subnet: *ipv6_subnet,
                        lease,
                        attrs: attrs.clone(),
                    };
                    return Ok((own, choice));
                }
                // Another node took it between our list and our create:
                // list and choose again (flannel gives up here).
                let _ = client.lease_revoke(lease);
            }
        }
    }
    bail!("could not get a subnet in {ROUNDS} rounds: other nodes kept taking the ones chosen")
}

/// What became of our key after it went missing or its lease expired.
pub enum Recovered {
    Same(Own),
    /// Another node's lease holds the subnet now.
    Taken(String),
}

/// Re-creates our key on the same subnet after our etcd lease expired.
pub fn recreate(client: &Client, own: &Own, ttl: i64) -> Result<Recovered> {
    let value = own.attrs.to_json();
    let (lease, _) = client.lease_grant(ttl).context("granting a lease")?;
    if client.create(own.key.as_bytes(), value.as_bytes(), lease)? {
        return Ok(Recovered::Same(Own {
            lease,
            ..own.clone()
        }));
    }
    let _ = client.lease_revoke(lease);
    let (kv, _) = client
        .range(own.key.as_bytes())
        .context("reading our key")?;
    let Some(kv) = kv else {
        bail!("{} vanished while being re-created", own.key);
    };
    match LeaseAttrs::parse(&kv.value) {
        Ok(a) if a.public_ip == own.attrs.public_ip => Ok(Recovered::Same(Own {
            lease: kv.lease,
            ..own.clone()
        })),
        Ok(a) => Ok(Recovered::Taken(a.public_ip.to_string())),
        Err(e) => Ok(Recovered::Taken(format!("an unreadable lease ({e})"))),
    }
}

/// The leases under `prefix` whose keys are subnet keys, each with its
/// key-value (a broken value is kept: its subnet stays taken).
pub fn held_of<'a>(prefix: &str, kvs: &'a [KeyValue]) -> (Vec<Held>, Vec<&'a KeyValue>) {
    kvs.iter()
        .filter_map(|kv| {
            let key = std::str::from_utf8(&kv.key).ok()?.strip_prefix(prefix)?;
            Some((Held::from_kv(key, &kv.value, kv.lease != 0)?, kv))
        })
        .unzip()
}

fn key_str(kv: &KeyValue) -> String {
    String::from_utf8_lossy(&kv.key).into_owned()
}

//! Keeps an up-to-date copy of `<prefix>/subnets/` and hands every version
//! of it to the daemon: list (snapshot at revision R), then watch from R+1,
//! resuming after the last revision seen. A compacted revision, a cancelled
//! or silent watch, or a broken connection means list again; a periodic full
//! list catches anything a watch could have missed. While etcd is unreachable
//! the thread retries with backoff and says so; nothing is removed meanwhile.

use super::Msg;
use crate::etcd::{Client, KeyValue, WatchMsg};
use std::collections::BTreeMap;
use std::sync::mpsc::Sender;
use std::time::{Duration, Instant};

/// The leases as last seen, by key.
pub type Leases = BTreeMap<String, KeyValue>;

const BACKOFF_FIRST: Duration = Duration::from_millis(100);
const BACKOFF_MAX: Duration = Duration::from_secs(5);
/// How long a watch may stay silent before we ask etcd for progress.
const QUIET: Duration = Duration::from_secs(20);
/// A full list at least this often, whatever the watch says.
const RELIST: Duration = Duration::from_secs(300);

pub fn spawn(client: Client, prefix: String, tx: Sender<Msg>) -> std::io::Result<()> {
    std::thread::Builder::new()
        .name("watch".into())
        .spawn(move || run(&client, &prefix, &tx))?;
    Ok(())
}

fn run(client: &Client, prefix: &str, tx: &Sender<Msg>) {
    let mut backoff = BACKOFF_FIRST;
    let mut down_since: Option<Instant> = None;
    loop {
        match list_then_watch(client, prefix, tx, &mut backoff, &mut down_since) {
            Ok(Stop::Relist(why)) => super::log(format!("listing leases again: {why}")),
            Ok(Stop::Closed) => return,
            Err(e) => {
                if down_since.is_none() {
                    down_since = Some(Instant::now());
                }
                super::log(format!(
                    "etcd: {e}; pods keep their routes; retrying in {backoff}",
                    backoff = crate::quote::Took(backoff)
                ));
                std::thread::sleep(backoff);
                backoff = (backoff * 2).min(BACKOFF_MAX);
            }
        }
    }
}

enum Stop {
    Relist(String),
    /// The daemon is gone.
    Closed,
}

fn list_then_watch(
    client: &Client,
    prefix: &str,
    tx: &Sender<Msg>,
    backoff: &mut Duration,
    down_since: &mut Option<Instant>,
) -> Result<Stop, crate::etcd::Error> {
    let (kvs, revision) = client.range_prefix(prefix.as_bytes())?;
    let mut leases: Leases = kvs
        .into_iter()
        .map(|kv| (String::from_utf8_lossy(&kv.key).into_owned(), kv))
        .collect();
    if let Some(since) = down_since.take() {
        super::log(format!(
            "etcd reachable again after {}",
            crate::quote::Took(since.elapsed())
        ));
    }
    *backoff = BACKOFF_FIRST;
    if tx.send(Msg::Leases(leases.clone())).is_err() {
        return Ok(Stop::Closed);
    }
    let listed = Instant::now();
    let mut watch = client.watch(prefix.as_bytes(), revision + 1)?;
    let mut asked_progress = false;
    loop {
        if listed.elapsed() > RELIST {
            return Ok(Stop::Relist("periodic full list".into()));
        }
        match watch.next(QUIET)? {
            WatchMsg::Created | WatchMsg::Progress { .. } => asked_progress = false,
            WatchMsg::Events { events, .. } => {
                asked_progress = false;
                for ev in events {
                    let key = String::from_utf8_lossy(&ev.kv.key).into_owned();
                    match ev.kind {
                        crate::etcd::EventKind::Put => {
                            leases.insert(key, ev.kv);
                        }
                        crate::etcd::EventKind::Delete => {
                            leases.remove(&key);
                        }
                    }
                }
                if tx.send(Msg::Leases(leases.clone())).is_err() {
                    return Ok(Stop::Closed);
                }
            }
            WatchMsg::Compacted { compact_revision } => {
                return Ok(Stop::Relist(format!(
                    "watch revision compacted (now {compact_revision})"
                )));
            }
            WatchMsg::Canceled { reason } => {
                return Ok(Stop::Relist(format!("watch cancelled: {reason}")));
            }
            WatchMsg::Timeout if asked_progress => {
                return Ok(Stop::Relist(format!(
                    "no answer from etcd in {QUIET}",
                    QUIET = crate::quote::Took(QUIET)
                )));
            }
            WatchMsg::Timeout => {
                watch.request_progress()?;
                asked_progress = true;
            }
        }
    }
}

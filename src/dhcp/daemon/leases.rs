//! The leases the daemon keeps: one slot per attachment, one keeper thread per
//! held lease (renew at T1, rebind at T2, link down at expiry), every change
//! saved to the state directory before it is answered.
//!
//! Locks, always taken in this order: a slot's `op` (one call at a time per
//! attachment), the table, a slot's `held`. Keepers take only `held` (and the
//! table after letting `held` go); no lock is held while talking to a server,
//! except `op` during an ADD's acquisition, which only that attachment waits for.

use super::checks::{check_attachment, check_netns, check_request};
use super::state::StateDir;
use crate::dhcp::client::{self, Renewal, Request, Settings};
use crate::dhcp::error::Error as DhcpError;
use crate::dhcp::lease::Lease;
use crate::dhcp::protocol::{Attachment, Call, Failure, Keep, Kind, Reply};
use std::collections::HashMap;
use std::ffi::OsString;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::PathBuf;
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// Keeper threads need little stack: their buffers are on the heap.
const KEEPER_STACK: usize = 512 * 1024;
/// Longest sleep of a keeper, so a changed wall clock is noticed.
const MAX_NAP: Duration = Duration::from_secs(30);
/// How long a RELEASE waits for a renewal in flight, so it is not overtaken by it.
const RELEASE_WAIT: Duration = Duration::from_secs(3);

/// One line on stderr (the journal under systemd). Never panics: a closed
/// stderr must not take a keeper or the signal thread down.
pub fn log(msg: impl std::fmt::Display) {
    use std::io::Write;
    let line = crate::quote::log_line("dhcp daemon", msg);
    let _ = writeln!(std::io::stderr().lock(), "{line}");
}

/// A lock whose holder panicked is still usable: every critical section below
/// leaves the data consistent at each step (a panic in a keeper must not take
/// the daemon down).
fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// The text of a panic's payload.
pub fn panic_text(payload: &(dyn std::any::Any + Send)) -> String {
    payload
        .downcast_ref::<&str>()
        .map(|s| (*s).to_string())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "panic".into())
}

/// A lease held for an attachment.
#[derive(Clone)]
struct Kept {
    /// As the plugin sent it (without the host prefix).
    request: Request,
    lease: Lease,
    /// Read from disk past its expiry: the keeper asks for it again first.
    reacquire: bool,
    /// Its netns or link is gone: no keeper; kept until DEL or GC.
    dormant: bool,
}

#[derive(Default)]
struct Held {
    kept: Option<Kept>,
    /// Bumped to stop the keeper: one whose generation is old exits.
    generation: u64,
    /// The keeper is talking to the server.
    in_flight: bool,
    /// Out of the table: a call that got this slot looks again.
    retired: bool,
}

struct Slot {
    attachment: Attachment,
    op: Mutex<()>,
    held: Mutex<Held>,
    changed: Condvar,
}

pub struct Leases {
    settings: Settings,
    hostprefix: OsString,
    state: StateDir,
    slots: Mutex<HashMap<Attachment, Arc<Slot>>>,
}

/// What a keeper's step came to.
enum Outcome {
    Renewed(Lease),
    RetryIn(Duration),
    /// Netns or link gone: stop keeping, remember the lease for DEL.
    Gone(String),
    /// Expired, NAK, or not given back: the lease is over.
    Over(String),
}

impl Leases {
    pub fn new(settings: Settings, hostprefix: String, state: StateDir) -> Arc<Leases> {
        Arc::new(Leases {
            settings,
            hostprefix: hostprefix.into(),
            state,
            slots: Mutex::new(HashMap::new()),
        })
    }

    /// Takes up the leases saved by an earlier run: each gets its keeper,
    /// which renews it when due (or asks for it again when it has expired).
    pub fn resume(self: &Arc<Self>) -> anyhow::Result<usize> {
        let (saved, problems) = self.state.load()?;
        for p in problems {
            log(format!("ignoring a lease file: {p}"));
        }
        let count = saved.len();
        let now = now();
        for s in saved {
            // Written by a daemon that took any path: not entered again.
            if let Err(f) = check_netns(&s.request.netns) {
                log(format!(
                    "{}: dropping the lease of {}: {f}",
                    s.attachment, s.lease.address
                ));
                if let Err(e) = self.state.remove(&s.attachment) {
                    log(format!("{e:#}"));
                }
                continue;
            }
            let slot = self.slot(&s.attachment);
            let reacquire = now >= s.lease.expires_at();
            log(format!(
                "{}: resuming the lease of {}{}",
                s.attachment,
                s.lease.address,
                if reacquire {
                    " (expired: asking for it again)"
                } else {
                    ""
                }
            ));
            let generation = {
                let mut held = lock(&slot.held);
                held.kept = Some(Kept {
                    request: s.request,
                    lease: s.lease,
                    reacquire,
                    dormant: false,
                });
                held.generation
            };
            if let Err(e) = self.spawn_keeper(&slot, generation) {
                log(format!("{}: {e}; the lease is not renewed", s.attachment));
                if let Some(k) = lock(&slot.held).kept.as_mut() {
                    k.dormant = true;
                }
            }
        }
        Ok(count)
    }

    /// Answers one call.
    pub fn handle(self: &Arc<Self>, call: Call) -> Reply {
        match call {
            Call::Allocate {
                attachment,
                request,
            } => self.allocate(attachment, request),
            Call::Release { attachment, .. } => match check_attachment(&attachment) {
                Ok(()) => self.release(&attachment),
                Err(f) => Reply::Failed(f),
            },
            Call::Check {
                attachment,
                request,
            } => self.check(attachment, request),
            Call::Gc { network, valid } => self.gc(&network, &valid),
            Call::Status => Reply::Done,
        }
    }

    fn slot(&self, a: &Attachment) -> Arc<Slot> {
        lock(&self.slots)
            .entry(a.clone())
            .or_insert_with(|| {
                Arc::new(Slot {
                    attachment: a.clone(),
                    op: Mutex::new(()),
                    held: Mutex::new(Held::default()),
                    changed: Condvar::new(),
                })
            })
            .clone()
    }

    fn existing(&self, a: &Attachment) -> Option<Arc<Slot>> {
        lock(&self.slots).get(a).cloned()
    }

    /// Drops a slot without a lease from the table, so memory stays flat.
    fn retire_if_empty(&self, slot: &Arc<Slot>) {
        let mut slots = lock(&self.slots);
        let mut held = lock(&slot.held);
        if held.kept.is_none() && !held.in_flight && !held.retired {
            held.retired = true;
            if slots
                .get(&slot.attachment)
                .is_some_and(|s| Arc::ptr_eq(s, slot))
            {
                slots.remove(&slot.attachment);
            }
        }
    }

    /// The request as this process opens it: the host prefix before the netns.
    fn prefixed(&self, request: &Request) -> Request {
        let mut r = request.clone();
        if !self.hostprefix.is_empty() {
            let mut path = self.hostprefix.clone();
            path.push(request.netns.as_os_str());
            r.netns = PathBuf::from(path);
        }
        r
    }

    fn allocate(self: &Arc<Self>, a: Attachment, request: Request) -> Reply {
        if let Err(f) = check_attachment(&a).and_then(|()| check_request(&a, &request)) {
            return Reply::Failed(f);
        }
        loop {
            let slot = self.slot(&a);
            let _op = lock(&slot.op);
            let held_lease = {
                let mut held = lock(&slot.held);
                if held.retired {
                    continue;
                }
                match &held.kept {
                    Some(k) if k.request.netns == request.netns && !k.dormant && !k.reacquire => {
                        Some(k.lease.clone())
                    }
                    Some(k) => {
                        // Another sandbox (or one whose link went away) had this
                        // attachment: its keeper stops, the new ADD asks afresh
                        // with the same client-id.
                        log(format!(
                            "{a}: replacing the lease of {} kept for {}",
                            k.lease.address,
                            k.request.netns.display()
                        ));
                        held.generation += 1;
                        held.kept = None;
                        slot.changed.notify_all();
                        if let Err(e) = self.state.remove(&a) {
                            log(format!("{e:#}"));
                        }
                        None
                    }
                    None => None,
                }
            };
            if let Some(lease) = held_lease {
                return Reply::Lease(Box::new(lease));
            }
            let reply = self.acquire_into(&slot, &a, request);
            self.retire_if_empty(&slot);
            return reply;
        }
    }

    /// A new lease for `a` into its slot (whose `op` the caller holds), saved
    /// and with its keeper.
    fn acquire_into(self: &Arc<Self>, slot: &Arc<Slot>, a: &Attachment, request: Request) -> Reply {
        let wire = self.prefixed(&request);
        let lease = match client::acquire(&wire, &self.settings) {
            Ok(lease) => lease,
            Err(e) => {
                log(format!("{a}: {e}"));
                return Reply::Failed(Failure::new(Kind::of(&e), e.to_string()));
            }
        };
        let generation = {
            let mut held = lock(&slot.held);
            if let Err(e) = self.state.save(a, &request, &lease) {
                drop(held);
                let _ = client::release(&wire, &lease);
                log(format!("{a}: {e:#}"));
                return Reply::Failed(Failure::new(Kind::Failed, format!("{e:#}")));
            }
            held.kept = Some(Kept {
                request,
                lease: lease.clone(),
                reacquire: false,
                dormant: false,
            });
            held.generation
        };
        if let Err(e) = self.spawn_keeper(slot, generation) {
            // Without a keeper the lease would silently lapse: give it back.
            let kept = {
                let mut held = lock(&slot.held);
                held.generation += 1;
                held.kept.take()
            };
            let _ = self.state.remove(a);
            if let Some(k) = kept {
                let _ = client::release(&self.prefixed(&k.request), &k.lease);
            }
            return Reply::Failed(Failure::new(Kind::Failed, format!("{a}: {e}")));
        }
        log(format!(
            "{a}: leased {} from {} for {} s",
            lease.address, lease.server, lease.lease_secs
        ));
        Reply::Lease(Box::new(lease))
    }

    fn release(&self, a: &Attachment) -> Reply {
        let Some(slot) = self.existing(a) else {
            return Reply::Done;
        };
        let _op = lock(&slot.op);
        let kept = {
            let mut held = lock(&slot.held);
            let start = std::time::Instant::now();
            while held.in_flight && start.elapsed() < RELEASE_WAIT {
                held = slot
                    .changed
                    .wait_timeout(held, RELEASE_WAIT.saturating_sub(start.elapsed()))
                    .unwrap_or_else(PoisonError::into_inner)
                    .0;
            }
            if held.kept.is_some()
                && let Err(e) = self.state.remove(a)
            {
                // The file would bring the lease back at the next start: keep
                // everything as it is and let the runtime retry the DEL.
                log(format!("{a}: {e:#}"));
                return Reply::Failed(Failure::new(Kind::Failed, format!("{e:#}")));
            }
            held.generation += 1;
            held.kept.take()
        };
        slot.changed.notify_all();
        if let Some(k) = kept {
            match client::release(&self.prefixed(&k.request), &k.lease) {
                Ok(()) => log(format!("{a}: released {}", k.lease.address)),
                Err(e) => log(format!(
                    "{a}: forgot {}; DHCPRELEASE not sent: {e}",
                    k.lease.address
                )),
            }
        }
        self.retire_if_empty(&slot);
        Reply::Done
    }

    fn check(&self, a: Attachment, request: Request) -> Reply {
        if let Err(f) = check_attachment(&a) {
            return Reply::Failed(f);
        }
        let not_held = || {
            Reply::Failed(Failure::new(
                Kind::NotHeld,
                format!("the dhcp daemon holds no lease for {a}"),
            ))
        };
        let Some(slot) = self.existing(&a) else {
            return not_held();
        };
        let _op = lock(&slot.op);
        let Some(kept) = lock(&slot.held).kept.clone() else {
            return not_held();
        };
        if kept.dormant {
            return Reply::Failed(Failure::new(
                Kind::NotHeld,
                format!(
                    "the lease of {} for {a} is no longer kept: its netns or interface went away",
                    kept.lease.address
                ),
            ));
        }
        if !request.netns.as_os_str().is_empty() && request.netns != kept.request.netns {
            return Reply::Failed(Failure::new(
                Kind::NotHeld,
                format!(
                    "the lease for {a} is held for netns {}, not {}",
                    kept.request.netns.display(),
                    request.netns.display()
                ),
            ));
        }
        match client::address_present(&self.prefixed(&kept.request), &kept.lease) {
            Ok(true) => Reply::Lease(Box::new(kept.lease)),
            Ok(false) => Reply::Failed(Failure::new(
                Kind::AddressMissing,
                format!(
                    "{}: the leased address {} is not on the interface",
                    a, kept.lease.address
                ),
            )),
            Err(e) => Reply::Failed(Failure::new(Kind::of(&e), format!("{a}: {e}"))),
        }
    }

    fn gc(&self, network: &str, valid: &[Keep]) -> Reply {
        let stale: Vec<Attachment> = lock(&self.slots)
            .keys()
            .filter(|a| a.network == network && !is_kept(a, valid))
            .cloned()
            .collect();
        let mut failures = Vec::new();
        for a in stale {
            if let Reply::Failed(f) = self.release(&a) {
                failures.push(f.message);
            }
        }
        if failures.is_empty() {
            Reply::Done
        } else {
            Reply::Failed(Failure::new(Kind::Failed, failures.join("; ")))
        }
    }

    fn spawn_keeper(self: &Arc<Self>, slot: &Arc<Slot>, generation: u64) -> std::io::Result<()> {
        let (leases, slot) = (Arc::clone(self), Arc::clone(slot));
        std::thread::Builder::new()
            .name("lease keeper".into())
            .stack_size(KEEPER_STACK)
            .spawn(move || {
                let run = catch_unwind(AssertUnwindSafe(|| leases.keep(&slot, generation)));
                if let Err(payload) = run {
                    log(format!(
                        "{}: the lease keeper panicked ({}); the lease is no longer renewed",
                        slot.attachment,
                        panic_text(payload.as_ref())
                    ));
                    let mut held = lock(&slot.held);
                    held.in_flight = false;
                    if held.generation == generation
                        && let Some(k) = held.kept.as_mut()
                    {
                        k.dormant = true;
                    }
                    slot.changed.notify_all();
                }
            })
            .map(drop)
    }

    /// The keeper of one lease: sleeps until the next step is due, takes it,
    /// and goes on until the lease is released, over, or its link is gone.
    fn keep(&self, slot: &Arc<Slot>, generation: u64) {
        let a = &slot.attachment;
        let mut retry_at: Option<u64> = None;
        loop {
            let kept = {
                let mut held = lock(&slot.held);
                loop {
                    if held.generation != generation {
                        return;
                    }
                    let Some(k) = held.kept.as_ref() else {
                        return;
                    };
                    let now = now();
                    let due = if k.reacquire {
                        now
                    } else {
                        next_due(&k.lease, retry_at, now)
                    };
                    if now >= due {
                        break;
                    }
                    let nap = Duration::from_secs(due - now).min(MAX_NAP);
                    held = slot
                        .changed
                        .wait_timeout(held, nap)
                        .unwrap_or_else(PoisonError::into_inner)
                        .0;
                }
                held.in_flight = true;
                held.kept.clone()
            };
            let Some(kept) = kept else {
                return;
            };
            let outcome = self.step(a, &kept);
            let mut held = lock(&slot.held);
            held.in_flight = false;
            slot.changed.notify_all();
            if held.generation != generation {
                return;
            }
            match outcome {
                Outcome::Renewed(lease) => {
                    retry_at = None;
                    if let Err(e) = self.state.save(a, &kept.request, &lease) {
                        log(format!("{e:#}"));
                    }
                    if let Some(k) = held.kept.as_mut() {
                        k.lease = lease;
                        k.reacquire = false;
                    }
                }
                Outcome::RetryIn(pause) => retry_at = Some(now() + pause.as_secs().max(1)),
                Outcome::Gone(why) => {
                    log(format!(
                        "{a}: {why}; no longer renewing {}",
                        kept.lease.address
                    ));
                    if let Some(k) = held.kept.as_mut() {
                        k.dormant = true;
                    }
                    return;
                }
                Outcome::Over(why) => {
                    log(format!("{a}: lease of {} over: {why}", kept.lease.address));
                    if let Err(e) = self.state.remove(a) {
                        log(format!("{e:#}"));
                    }
                    held.kept = None;
                    held.generation += 1;
                    drop(held);
                    self.retire_if_empty(slot);
                    return;
                }
            }
        }
    }

    /// One due step of a keeper, talking to the server (no lock held).
    fn step(&self, a: &Attachment, kept: &Kept) -> Outcome {
        let wire = self.prefixed(&kept.request);
        let lease = &kept.lease;
        let now = now();
        if kept.reacquire {
            return match client::acquire(&wire, &self.settings) {
                Ok(new) if new.address == lease.address => Outcome::Renewed(new),
                Ok(new) => {
                    let _ = client::release(&wire, &new);
                    self.expire(a, &wire);
                    Outcome::Over(format!(
                        "expired while the daemon was down, and the server now offers {}",
                        new.address
                    ))
                }
                Err(e) if link_gone(&e) => Outcome::Gone(e.to_string()),
                Err(e) => {
                    self.expire(a, &wire);
                    Outcome::Over(format!(
                        "expired while the daemon was down, and asking again failed: {e}"
                    ))
                }
            };
        }
        if now >= lease.expires_at() {
            self.expire(a, &wire);
            return Outcome::Over("expired".into());
        }
        let ((phase, done), result, next_deadline) = if now >= lease.rebind_at() {
            (
                ("rebind", "rebound"),
                client::rebind(&wire, &self.settings, lease),
                lease.expires_at(),
            )
        } else {
            (
                ("renew", "renewed"),
                client::renew(&wire, &self.settings, lease),
                lease.rebind_at(),
            )
        };
        match result {
            Ok(Renewal::Ack(new)) => {
                log(format!(
                    "{a}: {done} {} for {} s",
                    new.address, new.lease_secs
                ));
                Outcome::Renewed(new)
            }
            Ok(Renewal::Nak) => {
                self.expire(a, &wire);
                Outcome::Over(format!("the server refused to {phase} it (DHCPNAK)"))
            }
            Err(e) if link_gone(&e) => Outcome::Gone(e.to_string()),
            Err(e) => {
                // RFC 2131 4.4.5: try again after half the time left (here at
                // least 1 s and at most 60 s).
                let half = next_deadline.saturating_sub(now) / 2;
                let pause = Duration::from_secs(half.clamp(1, 60));
                log(format!(
                    "{a}: failed to {phase} {}: {e}; trying again in {} s",
                    lease.address,
                    pause.as_secs()
                ));
                Outcome::RetryIn(pause)
            }
        }
    }

    /// At expiry the interface goes down, as the reference does.
    fn expire(&self, a: &Attachment, wire: &Request) {
        if let Err(e) = client::expire(wire) {
            log(format!("{a}: failed to take the interface down: {e}"));
        }
    }
}

/// When the keeper acts next: T1, then each retry until the lease is over.
fn next_due(lease: &Lease, retry_at: Option<u64>, now: u64) -> u64 {
    if now < lease.renew_at() {
        return lease.renew_at();
    }
    if now >= lease.expires_at() {
        return now;
    }
    let mut due = retry_at.unwrap_or(now);
    // Crossing into rebinding or expiry acts at once, whatever the retry said.
    for edge in [lease.rebind_at(), lease.expires_at()] {
        if due > edge && now < edge {
            due = edge;
        }
    }
    due
}

/// Whether a failure means the container's netns or interface no longer exists.
fn link_gone(e: &DhcpError) -> bool {
    match e {
        DhcpError::Netns(crate::netns::Error::NotFound(_)) => true,
        DhcpError::Netlink(n) => n.is_not_found(),
        DhcpError::Io { source, .. } => matches!(
            source.raw_os_error(),
            Some(nix::libc::ENODEV | nix::libc::ENXIO)
        ),
        _ => false,
    }
}

fn is_kept(a: &Attachment, valid: &[Keep]) -> bool {
    valid
        .iter()
        .any(|k| k.container_id == a.container_id && (k.ifname.is_empty() || k.ifname == a.ifname))
}

#[cfg(test)]
#[path = "leases_tests.rs"]
mod tests;

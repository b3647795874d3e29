//! tap devices: created through /dev/net/tun ioctls (the kernel refuses
//! RTM_NEWLINK for kind "tun"), made persistent, then handled as links.

use crate::netlink::Error;
use crate::quote::quoted;
use nix::errno::Errno;
use nix::libc;
use std::os::fd::AsRawFd;

/// `struct ifreq` with the flags member of its union; 40 bytes as in C.
#[repr(C)]
struct IfReq {
    name: [u8; libc::IFNAMSIZ],
    flags: libc::c_short,
    _pad: [u8; 22],
}

nix::ioctl_write_ptr_bad!(tun_set_iff, libc::TUNSETIFF, IfReq);
nix::ioctl_write_int_bad!(tun_set_persist, libc::TUNSETPERSIST);
nix::ioctl_write_int_bad!(tun_set_owner, libc::TUNSETOWNER);
nix::ioctl_write_int_bad!(tun_set_group, libc::TUNSETGROUP);

/// How to create the tap.
#[derive(Debug, Clone, Default)]
pub struct TapSpec {
    pub name: String,
    pub multi_queue: bool,
    /// The vnet header, as the reference's netlink path sets it (owner and group given).
    pub vnet_hdr: bool,
    /// Packet information header off (`IFF_NO_PI`), as `ip tuntap` creates taps.
    pub no_pi: bool,
    pub owner: Option<u32>,
    pub group: Option<u32>,
}

/// Creates a persistent tap in the calling thread's namespace.
pub fn create_tap(spec: &TapSpec) -> crate::netlink::Result<()> {
    if spec.name.is_empty() || spec.name.len() >= libc::IFNAMSIZ {
        return Err(Error::os(
            format!("invalid tap name {}", quoted(&spec.name)),
            Errno::EINVAL,
        ));
    }
    let tun = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open("/dev/net/tun")
        .map_err(|e| Error::io("open /dev/net/tun", &e))?;
    let mut flags = libc::IFF_TAP;
    if spec.vnet_hdr {
        flags |= libc::IFF_VNET_HDR;
    }
    if spec.no_pi || spec.multi_queue {
        flags |= libc::IFF_NO_PI;
    }
    if spec.multi_queue {
        flags |= libc::IFF_MULTI_QUEUE;
    }
    let mut req = IfReq {
        name: [0; libc::IFNAMSIZ],
        // IFF_* of if_tun.h: every combination fits the 16-bit field.
        flags: libc::c_short::try_from(flags)
            .map_err(|_| Error::os("TUNSETIFF flags", Errno::EINVAL))?,
        _pad: [0; 22],
    };
    req.name[..spec.name.len()].copy_from_slice(spec.name.as_bytes());
    let fd = tun.as_raw_fd();
    // SAFETY: `fd` is an open /dev/net/tun descriptor and `req` is a valid,
    // initialised ifreq-sized struct that outlives each call.
    unsafe {
        tun_set_iff(fd, &req).map_err(|e| Error::os(format!("TUNSETIFF {}", spec.name), e))?;
        if let Some(uid) = spec.owner {
            // The kernel reads the int back as a uid_t.
            tun_set_owner(fd, uid.cast_signed()).map_err(|e| Error::os("TUNSETOWNER", e))?;
        }
        if let Some(gid) = spec.group {
            tun_set_group(fd, gid.cast_signed()).map_err(|e| Error::os("TUNSETGROUP", e))?;
        }
        tun_set_persist(fd, 1).map_err(|e| Error::os("TUNSETPERSIST", e))?;
    }
    Ok(())
}

#[cfg(test)]
#[path = "tun_tests.rs"]
mod tests;

//! The allow-list's child side, run between `fork` and `exec` (system calls only): a network
//! namespace of the child's own holding only loopback, and a bridge process in it that listens on
//! `127.0.0.1:`[`PROXY_PORT`] and hands every accepted connection to the bot's proxy over a
//! Unix socket pair (`SCM_RIGHTS`). The child has no route out, no DNS server to ask and no way
//! to the bot's listeners; what it reaches, it reaches through the proxy.
//!
//! ```text
//! unshare(user + net) → uid/gid map of its own ids → lo up → listen on 127.0.0.1:PROXY_PORT
//!   → (the usual confinement: capabilities, no_new_privs, Landlock, seccomp)
//!   → clone the bridge (dies with the child, PR_SET_PDEATHSIG) → exec the command
//! ```

use crate::child::check;
use std::os::fd::{AsRawFd, OwnedFd};

/// The port of the proxy inside a confined process's own network namespace (`HTTP_PROXY=
/// http://127.0.0.1:3128`, the port HTTP proxies are known by).
pub const PROXY_PORT: u16 = 3128;

/// What one spawn needs in the child to join the allow-list: the child's end of the socket pair
/// whose other end the proxy reads, and the id maps, formatted in the host (the child may not
/// allocate).
#[derive(Debug)]
pub(crate) struct ChildNet {
    control: OwnedFd,
    uid_map: Vec<u8>,
    gid_map: Vec<u8>,
}

impl ChildNet {
    /// The child's part for `control` (one end of a `SOCK_SEQPACKET` pair, close-on-exec): the
    /// process keeps its own uid and gid inside the new user namespace.
    pub(crate) fn new(control: OwnedFd) -> ChildNet {
        // SAFETY: getuid/getgid cannot fail and touch no memory.
        #[allow(unsafe_code)]
        let (uid, gid) = unsafe { (libc::getuid(), libc::getgid()) };
        ChildNet {
            control,
            uid_map: format!("{uid} {uid} 1\n").into_bytes(),
            gid_map: format!("{gid} {gid} 1\n").into_bytes(),
        }
    }

    /// Enters the new namespaces and opens the bridge's listener; its descriptor (close-on-exec).
    /// Before the rest of the confinement: making namespaces is what seccomp then forbids.
    pub(crate) fn enter(&self) -> std::io::Result<libc::c_int> {
        check(sys::unshare(libc::CLONE_NEWUSER | libc::CLONE_NEWNET).into())?;
        sys::write_file(c"/proc/self/setgroups", b"deny")?;
        sys::write_file(c"/proc/self/uid_map", &self.uid_map)?;
        sys::write_file(c"/proc/self/gid_map", &self.gid_map)?;
        sys::loopback_up()?;
        sys::listen_loopback(PROXY_PORT)
    }

    /// Starts the bridge on `listener` as a child of this (confined) process, then closes the
    /// listener here: the command never holds it or the control socket.
    pub(crate) fn start_bridge(&self, listener: libc::c_int) -> std::io::Result<()> {
        let started = sys::fork_bridge(listener, self.control.as_raw_fd());
        sys::close(listener);
        started
    }
}

/// The raw system calls (no crate wraps them without allocating, which a forked child of a
/// multi-threaded process must not do).
#[allow(unsafe_code)]
mod sys {
    use super::check;
    use std::ffi::CStr;

    pub(super) fn unshare(flags: libc::c_int) -> libc::c_int {
        // SAFETY: integer argument only.
        unsafe { libc::unshare(flags) }
    }

    pub(super) fn close(fd: libc::c_int) {
        // SAFETY: closing a descriptor this code opened; an error changes nothing.
        unsafe { libc::close(fd) };
    }

    /// Writes `bytes` to the file `path` in one `write` (the id-map files take one write).
    pub(super) fn write_file(path: &CStr, bytes: &[u8]) -> std::io::Result<()> {
        // SAFETY: a NUL-terminated path; flags only.
        let fd = unsafe { libc::open(path.as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC) };
        check(fd.into())?;
        // SAFETY: `bytes` is valid for its length.
        let written = unsafe { libc::write(fd, bytes.as_ptr().cast(), bytes.len()) };
        let result = if written < 0 {
            Err(std::io::Error::last_os_error())
        } else {
            Ok(())
        };
        close(fd);
        result
    }

    /// `ip link set lo up` through `SIOCSIFFLAGS` (the namespace's own `CAP_NET_ADMIN`).
    pub(super) fn loopback_up() -> std::io::Result<()> {
        // SAFETY: integer arguments only.
        let fd = unsafe { libc::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0) };
        check(fd.into())?;
        // SAFETY: an all-zero ifreq is valid; the name is copied within its 16 bytes.
        let mut request: libc::ifreq = unsafe { std::mem::zeroed() };
        for (slot, byte) in request.ifr_name.iter_mut().zip(b"lo\0") {
            *slot = *byte as libc::c_char;
        }
        // SAFETY: the union member for SIOC[GS]IFFLAGS is ifru_flags; the kernel reads and
        // writes only the ifreq passed.
        let result = unsafe {
            check(libc::ioctl(fd, libc::SIOCGIFFLAGS, &mut request).into()).and_then(|()| {
                request.ifr_ifru.ifru_flags |= (libc::IFF_UP | libc::IFF_RUNNING) as libc::c_short;
                check(libc::ioctl(fd, libc::SIOCSIFFLAGS, &request).into())
            })
        };
        close(fd);
        result
    }

    /// A TCP listener on `127.0.0.1:port`, close-on-exec.
    pub(super) fn listen_loopback(port: u16) -> std::io::Result<libc::c_int> {
        // SAFETY: integer arguments only.
        let fd = unsafe { libc::socket(libc::AF_INET, libc::SOCK_STREAM | libc::SOCK_CLOEXEC, 0) };
        check(fd.into())?;
        let address = libc::sockaddr_in {
            sin_family: libc::AF_INET as libc::sa_family_t,
            sin_port: port.to_be(),
            sin_addr: libc::in_addr {
                s_addr: u32::from(std::net::Ipv4Addr::LOCALHOST).to_be(),
            },
            sin_zero: [0; 8],
        };
        let size = std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t;
        // SAFETY: a sockaddr_in of the size given.
        let bound = unsafe { libc::bind(fd, (&raw const address).cast(), size) };
        // SAFETY: integer arguments only.
        match check(bound.into()).and_then(|()| check(unsafe { libc::listen(fd, 64) }.into())) {
            Ok(()) => Ok(fd),
            Err(e) => {
                close(fd);
                Err(e)
            }
        }
    }

    /// Clones the bridge: a plain `clone` (libc's `fork` would run the host's fork handlers,
    /// which may take locks another thread of the host held). The bridge never returns.
    pub(super) fn fork_bridge(listener: libc::c_int, control: libc::c_int) -> std::io::Result<()> {
        // SAFETY: no arguments.
        let parent = unsafe { libc::getpid() };
        // SAFETY: clone with SIGCHLD alone and no new stack is fork without its handlers; the
        // child only makes system calls (below) and leaves with _exit.
        let pid = unsafe {
            libc::syscall(
                libc::SYS_clone,
                libc::SIGCHLD as libc::c_ulong,
                0usize,
                0usize,
                0usize,
                0usize,
            )
        };
        match pid {
            0 => bridge(parent, listener, control),
            p if p < 0 => Err(std::io::Error::last_os_error()),
            _ => Ok(()),
        }
    }

    /// The bridge: keeps only the listener (as fd 1) and the control socket (fd 0), dies with
    /// the command, and hands every accepted connection to the proxy.
    fn bridge(parent: libc::pid_t, listener: libc::c_int, control: libc::c_int) -> ! {
        // SAFETY: integer arguments only; PR_SET_NAME reads 16 bytes at most of a NUL-terminated
        // string.
        unsafe {
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL, 0, 0, 0);
            if libc::getppid() != parent {
                libc::_exit(0);
            }
            libc::prctl(libc::PR_SET_NAME, c"sandbox-bridge".as_ptr(), 0, 0, 0);
            // Every other descriptor goes: the host's, the command's stdio, the spawn's
            // exec-error pipe (the host waits for it to close).
            if libc::dup2(control, 0) < 0 || libc::dup2(listener, 1) < 0 {
                libc::_exit(1);
            }
            libc::syscall(libc::SYS_close_range, 2u32, u32::MAX, 0u32);
        }
        loop {
            // SAFETY: no peer address asked for.
            let connection =
                unsafe { libc::accept4(1, std::ptr::null_mut(), std::ptr::null_mut(), libc::SOCK_CLOEXEC) };
            if connection < 0 {
                if std::io::Error::last_os_error().raw_os_error() == Some(libc::EINTR) {
                    continue;
                }
                // SAFETY: leaving the bridge.
                unsafe { libc::_exit(1) };
            }
            let sent = send_descriptor(0, connection);
            close(connection);
            if !sent {
                // The proxy's end is gone (the host stopped): nothing more to bridge.
                // SAFETY: leaving the bridge.
                unsafe { libc::_exit(0) };
            }
        }
    }

    /// Sends `fd` over the socket `control` with one byte of data (`SCM_RIGHTS`); false when the
    /// peer is gone.
    fn send_descriptor(control: libc::c_int, fd: libc::c_int) -> bool {
        let mut byte = [0u8; 1];
        let mut iov = libc::iovec {
            iov_base: byte.as_mut_ptr().cast(),
            iov_len: 1,
        };
        // Room for one descriptor's control message, aligned for cmsghdr.
        let mut space = [0u64; 4];
        // SAFETY: a zeroed msghdr is valid; every pointer set below outlives the sendmsg call,
        // and the control buffer (32 bytes) holds CMSG_SPACE(4) (24 on 64-bit Linux).
        unsafe {
            let mut message: libc::msghdr = std::mem::zeroed();
            message.msg_iov = &mut iov;
            message.msg_iovlen = 1;
            message.msg_control = space.as_mut_ptr().cast();
            message.msg_controllen = libc::CMSG_SPACE(std::mem::size_of::<libc::c_int>() as u32) as _;
            let header = libc::CMSG_FIRSTHDR(&message);
            if header.is_null() {
                return false;
            }
            (*header).cmsg_level = libc::SOL_SOCKET;
            (*header).cmsg_type = libc::SCM_RIGHTS;
            (*header).cmsg_len = libc::CMSG_LEN(std::mem::size_of::<libc::c_int>() as u32) as _;
            std::ptr::write_unaligned(libc::CMSG_DATA(header).cast::<libc::c_int>(), fd);
            loop {
                if libc::sendmsg(control, &message, libc::MSG_NOSIGNAL) >= 0 {
                    return true;
                }
                if std::io::Error::last_os_error().raw_os_error() != Some(libc::EINTR) {
                    return false;
                }
            }
        }
    }
}

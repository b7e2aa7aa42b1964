//! Network namespaces: opening Sluice's listeners inside a sandbox's
//! namespace, and the namespace cookie that keys the eBPF maps.
//!
//! A socket keeps the namespace it was created in, so the daemon enters the
//! namespace on a throwaway thread, binds, and hands the sockets back; they
//! then serve from any thread of the runtime. The daemon's own threads never
//! change namespace.

use std::{
    fs::File,
    io,
    net::{Ipv4Addr, Ipv6Addr, SocketAddr, TcpListener, UdpSocket},
    os::fd::{AsFd, BorrowedFd},
    path::{Path, PathBuf},
};

use nix::sched::{CloneFlags, setns};

#[derive(Debug, thiserror::Error)]
pub enum NetnsError {
    #[error("cannot open network namespace {path}: {source}")]
    Open { path: PathBuf, source: io::Error },
    #[error("cannot enter network namespace {path}: {source}")]
    Enter { path: PathBuf, source: nix::Error },
    #[error("cannot bind {what} in network namespace {where_}: {source}")]
    Bind {
        what: &'static str,
        where_: String,
        source: io::Error,
    },
}

/// The steering listeners of one namespace: TCP on 127.0.0.1 and ::1 (same
/// port), and the namespace's cookie.
pub struct Listeners {
    pub tcp4: TcpListener,
    pub tcp6: Option<TcpListener>,
    pub cookie: u64,
}

impl Listeners {
    pub fn tcp_port(&self) -> u16 {
        self.tcp4.local_addr().map(|a| a.port()).unwrap_or(0)
    }
}

/// One sandbox's DNS sockets: UDP on 127.0.0.1 and ::1 (same port).
pub struct DnsSockets {
    pub udp4: UdpSocket,
    pub udp6: Option<UdpSocket>,
    pub port: u16,
}

/// Opens the TCP listeners in the namespace at `netns` (or the daemon's own
/// when `None`). Port 0 picks a free port; the IPv6 socket reuses the IPv4
/// port (`paired`).
pub fn open_listeners(netns: Option<&Path>, tcp_port: u16) -> Result<Listeners, NetnsError> {
    let where_ = describe(netns);
    in_optional_netns(netns, move || {
        let (tcp4, tcp6) = paired::<TcpListener>(tcp_port, &where_)?;
        let cookie = netns_cookie(tcp4.as_fd()).map_err(bind_err("SO_NETNS_COOKIE", &where_))?;
        for listener in std::iter::once(&tcp4).chain(tcp6.as_ref()) {
            listener
                .set_nonblocking(true)
                .map_err(bind_err("nonblocking", &where_))?;
        }
        Ok(Listeners { tcp4, tcp6, cookie })
    })
}

/// Opens a sandbox's DNS sockets on a free port in its namespace.
pub fn open_dns(netns: Option<&Path>) -> Result<DnsSockets, NetnsError> {
    let where_ = describe(netns);
    in_optional_netns(netns, move || {
        let (udp4, udp6) = paired::<UdpSocket>(0, &where_)?;
        let port = udp4
            .local_addr()
            .map_err(bind_err("udp 127.0.0.1", &where_))?
            .port();
        for socket in std::iter::once(&udp4).chain(udp6.as_ref()) {
            socket
                .set_nonblocking(true)
                .map_err(bind_err("nonblocking", &where_))?;
        }
        Ok(DnsSockets { udp4, udp6, port })
    })
}

/// Attempts at a free port both loopbacks have before giving up.
const PAIR_ATTEMPTS: usize = 16;

/// A socket kind bound on loopback by [`paired`].
trait Loopback: Sized {
    /// For errors: `tcp` or `udp`, then the address.
    const V4: &'static str;
    const V6: &'static str;
    fn bind(addr: SocketAddr) -> io::Result<Self>;
    fn port(&self) -> io::Result<u16>;
}

impl Loopback for TcpListener {
    const V4: &'static str = "tcp 127.0.0.1";
    const V6: &'static str = "tcp ::1";
    fn bind(addr: SocketAddr) -> io::Result<Self> {
        TcpListener::bind(addr)
    }
    fn port(&self) -> io::Result<u16> {
        Ok(self.local_addr()?.port())
    }
}

impl Loopback for UdpSocket {
    const V4: &'static str = "udp 127.0.0.1";
    const V6: &'static str = "udp ::1";
    fn bind(addr: SocketAddr) -> io::Result<Self> {
        UdpSocket::bind(addr)
    }
    fn port(&self) -> io::Result<u16> {
        Ok(self.local_addr()?.port())
    }
}

/// Binds 127.0.0.1 and ::1 on one port (`port`, or a free one when 0): the
/// eBPF programs steer both families there. IPv6 is optional, since a
/// namespace without `::1` cannot have the port taken there either, and
/// IPv6 connects from it then fail, closed. But a port whose `::1` side
/// another socket holds (a process binding `[::]` with `IPV6_V6ONLY` on
/// every port) is never used: that socket would get the sandboxes' IPv6
/// traffic. A free port is tried again; a given one is an error.
fn paired<S: Loopback>(port: u16, where_: &str) -> Result<(S, Option<S>), NetnsError> {
    let mut attempts = 0;
    loop {
        attempts += 1;
        let v4 = S::bind(SocketAddr::from((Ipv4Addr::LOCALHOST, port)))
            .map_err(bind_err(S::V4, where_))?;
        let bound = v4.port().map_err(bind_err(S::V4, where_))?;
        match S::bind(SocketAddr::from((Ipv6Addr::LOCALHOST, bound))) {
            Ok(v6) => return Ok((v4, Some(v6))),
            Err(err) if no_ipv6_loopback(&err) => return Ok((v4, None)),
            Err(err) if port == 0 && attempts < PAIR_ATTEMPTS => {
                tracing::debug!(%err, port = bound, "the ::1 side of a free port is taken; trying another");
            }
            Err(err) => return Err(bind_err(S::V6, where_)(err)),
        }
    }
}

/// Whether a bind on `::1` failed for want of IPv6 loopback here.
fn no_ipv6_loopback(err: &io::Error) -> bool {
    matches!(
        err.raw_os_error(),
        Some(libc::EADDRNOTAVAIL | libc::EAFNOSUPPORT)
    )
}

fn describe(netns: Option<&Path>) -> String {
    netns
        .map(|p| p.display().to_string())
        .unwrap_or_else(|| "host".to_owned())
}

fn bind_err(what: &'static str, where_: &str) -> impl FnOnce(io::Error) -> NetnsError {
    let where_ = where_.to_owned();
    move |source| NetnsError::Bind {
        what,
        where_,
        source,
    }
}

fn in_optional_netns<T: Send + 'static>(
    netns: Option<&Path>,
    f: impl FnOnce() -> Result<T, NetnsError> + Send + 'static,
) -> Result<T, NetnsError> {
    match netns {
        None => f(),
        Some(path) => in_netns(path, f),
    }
}

/// Runs `f` on a dedicated thread that has entered the namespace at `path`.
pub fn in_netns<T: Send + 'static>(
    path: &Path,
    f: impl FnOnce() -> Result<T, NetnsError> + Send + 'static,
) -> Result<T, NetnsError> {
    let file = File::open(path).map_err(|source| NetnsError::Open {
        path: path.to_owned(),
        source,
    })?;
    let path = path.to_owned();
    std::thread::spawn(move || {
        setns(&file, CloneFlags::CLONE_NEWNET).map_err(|source| NetnsError::Enter {
            path: path.clone(),
            source,
        })?;
        f()
    })
    .join()
    .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
}

/// The cookie of the namespace a socket lives in (what
/// `bpf_get_netns_cookie` returns for sockets of that namespace).
pub fn netns_cookie(fd: BorrowedFd<'_>) -> io::Result<u64> {
    crate::sys::netns_cookie(fd)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn host_listeners_share_ports_and_report_a_cookie() {
        let listeners = open_listeners(None, 0).expect("bind on loopback");
        assert_ne!(listeners.tcp_port(), 0);
        assert_ne!(listeners.cookie, 0);
        if let Some(tcp6) = &listeners.tcp6 {
            assert_eq!(
                tcp6.local_addr().expect("addr").port(),
                listeners.tcp_port()
            );
        }
    }

    #[test]
    fn a_port_whose_ipv6_side_is_taken_is_not_used() {
        // Another socket holds [::1]:P (as one bound on [::] with
        // IPV6_V6ONLY would): 127.0.0.1:P alone would send the sandboxes'
        // IPv6 traffic to it.
        let Ok(squatter) = UdpSocket::bind((Ipv6Addr::LOCALHOST, 0)) else {
            return; // no IPv6 loopback here: nothing to squat
        };
        let port = squatter.local_addr().expect("addr").port();
        let Err(err) = paired::<UdpSocket>(port, "host") else {
            panic!("::1 is taken");
        };
        assert!(err.to_string().contains("udp ::1"), "{err}");
        // A free port is paired on both sides.
        let (v4, v6) = paired::<UdpSocket>(0, "host").expect("a free pair");
        let v6 = v6.expect("::1 exists here");
        assert_eq!(v4.port().expect("port"), v6.port().expect("port"));
    }

    #[test]
    fn missing_namespace_names_its_path() {
        let err = open_listeners(Some(Path::new("/run/netns/nope-sluice")), 0)
            .err()
            .expect("no such namespace");
        assert!(err.to_string().contains("/run/netns/nope-sluice"), "{err}");
    }
}

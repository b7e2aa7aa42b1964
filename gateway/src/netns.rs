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
    os::fd::{AsFd, AsRawFd, BorrowedFd},
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

/// The listeners of one namespace: TCP on 127.0.0.1 and ::1 (same port), UDP
/// DNS on 127.0.0.1 and ::1 (same port), and the namespace's cookie.
pub struct Listeners {
    pub tcp4: TcpListener,
    pub tcp6: Option<TcpListener>,
    pub dns4: UdpSocket,
    pub dns6: Option<UdpSocket>,
    pub cookie: u64,
}

impl Listeners {
    pub fn tcp_port(&self) -> u16 {
        self.tcp4.local_addr().map(|a| a.port()).unwrap_or(0)
    }
    pub fn dns_port(&self) -> u16 {
        self.dns4.local_addr().map(|a| a.port()).unwrap_or(0)
    }
}

/// Opens the listeners in the namespace at `netns` (or the daemon's own when
/// `None`). Port 0 picks a free port; the IPv6 sockets reuse the IPv4 port.
/// IPv6 is optional: a namespace without `::1` gets IPv4 only, and IPv6
/// connects from it then fail, which is closed, not open.
pub fn open_listeners(
    netns: Option<&Path>,
    tcp_port: u16,
    dns_port: u16,
) -> Result<Listeners, NetnsError> {
    let where_ = netns
        .map(|p| p.display().to_string())
        .unwrap_or_else(|| "host".to_owned());
    let bind = move || -> Result<Listeners, NetnsError> {
        let err = |what: &'static str| {
            let where_ = where_.clone();
            move |source| NetnsError::Bind {
                what,
                where_,
                source,
            }
        };
        let tcp4 =
            TcpListener::bind((Ipv4Addr::LOCALHOST, tcp_port)).map_err(err("tcp 127.0.0.1"))?;
        let tcp_port = tcp4.local_addr().map_err(err("tcp 127.0.0.1"))?.port();
        let dns4 =
            UdpSocket::bind((Ipv4Addr::LOCALHOST, dns_port)).map_err(err("udp 127.0.0.1"))?;
        let dns_port = dns4.local_addr().map_err(err("udp 127.0.0.1"))?.port();
        let tcp6 = bind_v6_tcp(tcp_port).ok();
        let dns6 = UdpSocket::bind(SocketAddr::from((Ipv6Addr::LOCALHOST, dns_port))).ok();
        let cookie = netns_cookie(tcp4.as_fd()).map_err(err("SO_NETNS_COOKIE"))?;
        for listener in std::iter::once(&tcp4).chain(tcp6.as_ref()) {
            listener.set_nonblocking(true).map_err(err("nonblocking"))?;
        }
        for socket in std::iter::once(&dns4).chain(dns6.as_ref()) {
            socket.set_nonblocking(true).map_err(err("nonblocking"))?;
        }
        Ok(Listeners {
            tcp4,
            tcp6,
            dns4,
            dns6,
            cookie,
        })
    };
    match netns {
        None => bind(),
        Some(path) => in_netns(path, bind),
    }
}

fn bind_v6_tcp(port: u16) -> io::Result<TcpListener> {
    // std binds IPv6 sockets dual-stack only for `::`; `::1` is v6-only anyway.
    TcpListener::bind(SocketAddr::from((Ipv6Addr::LOCALHOST, port)))
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
    let mut cookie: u64 = 0;
    let mut len = std::mem::size_of::<u64>() as libc::socklen_t;
    // SAFETY: `fd` is a valid socket for the call's duration, and the out
    // pointers point at a u64 and its length.
    let rc = unsafe {
        libc::getsockopt(
            fd.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_NETNS_COOKIE,
            (&mut cookie as *mut u64).cast(),
            &mut len,
        )
    };
    if rc == 0 {
        Ok(cookie)
    } else {
        Err(io::Error::last_os_error())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn host_listeners_share_ports_and_report_a_cookie() {
        let listeners = open_listeners(None, 0, 0).expect("bind on loopback");
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
    fn missing_namespace_names_its_path() {
        let err = open_listeners(Some(Path::new("/run/netns/nope-sluice")), 0, 0)
            .err()
            .expect("no such namespace");
        assert!(err.to_string().contains("/run/netns/nope-sluice"), "{err}");
    }
}

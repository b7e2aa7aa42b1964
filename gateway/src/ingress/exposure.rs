//! Whether a port of a sandbox in the host's network namespace is bound
//! where others could reach it without the ingress: read from
//! `/proc/net/tcp` and `/proc/net/tcp6` (listening sockets on the port and
//! their addresses). A sandbox with its own namespace needs no such check:
//! nothing outside it can reach its ports, and the ingress dials inside.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// `/proc/net/tcp*`'s state of a listening socket.
const TCP_LISTEN: &str = "0A";

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ExposureError {
    #[error(
        "port {port} is listening on {addr}, reachable without the ingress; bind the app to \
         127.0.0.1 (or ::1), or give the sandbox its own network namespace"
    )]
    NotLoopback { port: u16, addr: IpAddr },
    #[error("reading {0}")]
    Read(String),
}

/// The local addresses of sockets listening on `port` in one
/// `/proc/net/tcp` or `/proc/net/tcp6` text.
pub fn listening(text: &str, port: u16) -> Vec<IpAddr> {
    text.lines()
        .skip(1)
        .filter_map(|line| {
            let mut fields = line.split_whitespace();
            let local = fields.nth(1)?;
            let state = fields.nth(1)?;
            if state != TCP_LISTEN {
                return None;
            }
            let (addr, p) = local.split_once(':')?;
            (u16::from_str_radix(p, 16).ok()? == port).then(|| parse_addr(addr))?
        })
        .collect()
}

/// `/proc/net` addresses are the kernel's words printed in hex, each in
/// host byte order.
fn parse_addr(hex: &str) -> Option<IpAddr> {
    match hex.len() {
        8 => {
            let word = u32::from_str_radix(hex, 16).ok()?;
            Some(IpAddr::V4(Ipv4Addr::from(word.to_ne_bytes())))
        }
        32 => {
            let mut bytes = [0u8; 16];
            for (i, chunk) in bytes.chunks_mut(4).enumerate() {
                let word = u32::from_str_radix(hex.get(i * 8..i * 8 + 8)?, 16).ok()?;
                chunk.copy_from_slice(&word.to_ne_bytes());
            }
            Some(IpAddr::V6(Ipv6Addr::from(bytes)))
        }
        _ => None,
    }
}

/// Refuses a port any listener has bound beyond loopback.
pub fn decide(port: u16, addrs: &[IpAddr]) -> Result<(), ExposureError> {
    let exposed = addrs.iter().find(|a| {
        let loopback = match a {
            IpAddr::V6(v6) => v6
                .to_ipv4_mapped()
                .map_or(v6.is_loopback(), |v4| v4.is_loopback()),
            IpAddr::V4(v4) => v4.is_loopback(),
        };
        !loopback
    });
    match exposed {
        Some(addr) => Err(ExposureError::NotLoopback { port, addr: *addr }),
        None => Ok(()),
    }
}

/// Reads the host's listening sockets and decides.
pub fn check_host_port(port: u16) -> Result<(), ExposureError> {
    let mut addrs = Vec::new();
    for path in ["/proc/net/tcp", "/proc/net/tcp6"] {
        match std::fs::read_to_string(path) {
            Ok(text) => addrs.extend(listening(&text, port)),
            // A kernel without IPv6 has no tcp6.
            Err(e) if e.kind() == std::io::ErrorKind::NotFound && path.ends_with('6') => {}
            Err(e) => return Err(ExposureError::Read(format!("{path}: {e}"))),
        }
    }
    decide(port, &addrs)
}

#[cfg(test)]
mod tests {
    use super::*;

    const TCP: &str = "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 0100007F:1F90 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 1 1 0 100 0 0 10 0
   1: 00000000:0BB8 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 2 1 0 100 0 0 10 0
   2: 0100007F:0BB8 0100007F:9C40 01 00000000:00000000 00:00000000 00000000     0        0 3 1 0 100 0 0 10 0
   3: 0A00000A:1389 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 4 1 0 100 0 0 10 0
";
    const TCP6: &str =
        "  sl  local_address                         remote_address                        st
   0: 00000000000000000000000001000000:1F91 00000000000000000000000000000000:0000 0A 0
   1: 00000000000000000000000000000000:1F92 00000000000000000000000000000000:0000 0A 0
   2: 0000000000000000FFFF00000100007F:1F93 00000000000000000000000000000000:0000 0A 0
";

    #[test]
    fn listeners_are_read_from_proc() {
        let v4 = |s: &str| s.parse::<IpAddr>().expect("ip");
        assert_eq!(listening(TCP, 8080), [v4("127.0.0.1")]);
        assert_eq!(
            listening(TCP, 3000),
            [v4("0.0.0.0")],
            "an established socket is not listening"
        );
        assert_eq!(listening(TCP, 5001), [v4("10.0.0.10")]);
        assert_eq!(listening(TCP, 9), Vec::<IpAddr>::new());
        assert_eq!(listening(TCP6, 8081), [v4("::1")]);
        assert_eq!(listening(TCP6, 8082), [v4("::")]);
        assert_eq!(listening(TCP6, 8083), [v4("::ffff:127.0.0.1")]);
    }

    #[test]
    fn only_loopback_listeners_may_be_published() {
        let table: Vec<(&str, u16, bool)> = vec![
            (TCP, 8080, true),
            (TCP, 3000, false),
            (TCP, 5001, false),
            (TCP, 9, true),
            (TCP6, 8081, true),
            (TCP6, 8082, false),
            (TCP6, 8083, true),
        ];
        for (text, port, ok) in table {
            assert_eq!(decide(port, &listening(text, port)).is_ok(), ok, "{port}");
        }
    }
}

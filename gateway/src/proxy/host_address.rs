//! Whether an address is the host's own, asked of the host's routes: a UDP
//! socket connected to it (which sends nothing) takes the source address of
//! its route, and the host's own addresses route to themselves. Always
//! current, with no list of interfaces to keep; the daemon dials from the
//! host's namespace, which is the one asked.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, UdpSocket};

use crate::policy::network::NetworkPolicy;

/// [`ConnRequest::host_address`](crate::policy::network::ConnRequest) for
/// `network`: the routes are asked only where the answer can change its
/// verdict, so most connections (guard off, or an address the tables
/// already refuse) cost no syscall.
pub fn for_policy(network: &NetworkPolicy, ip: IpAddr) -> bool {
    network.asks_host_address(ip) && is_host_address(ip)
}

/// Whether the host would deliver a connection to `ip` to itself. `false`
/// when there is no route to it at all (nothing would be delivered).
pub fn is_host_address(ip: IpAddr) -> bool {
    let ip = ip.to_canonical();
    let any: SocketAddr = match ip {
        IpAddr::V4(_) => (Ipv4Addr::UNSPECIFIED, 0).into(),
        IpAddr::V6(_) => (Ipv6Addr::UNSPECIFIED, 0).into(),
    };
    let Ok(socket) = UdpSocket::bind(any) else {
        return false;
    };
    // Any port: connecting a UDP socket only looks the route up.
    socket.connect((ip, 9)).is_ok() && socket.local_addr().is_ok_and(|local| local.ip() == ip)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_hosts_own_addresses_route_to_themselves() {
        assert!(is_host_address(IpAddr::from(Ipv4Addr::LOCALHOST)));
        assert!(is_host_address(IpAddr::from(Ipv6Addr::LOCALHOST)));
        assert!(is_host_address("::ffff:127.0.0.1".parse().expect("ip")));
        // Every address of an interface here, whatever its class.
        let local = UdpSocket::bind("0.0.0.0:0").expect("bind");
        if local.connect("198.51.100.1:9").is_ok() {
            let own = local.local_addr().expect("local").ip();
            assert!(is_host_address(own), "{own}");
        }
        // Somewhere else: 198.51.100.1 is no address of a test machine.
        assert!(!is_host_address("198.51.100.1".parse().expect("ip")));
    }
}

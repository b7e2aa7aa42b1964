//! The peer proxies Sluice is compared with. mitmproxy and Squid do the
//! same job as Sluice: an explicit proxy that intercepts TLS (`CONNECT`, a
//! certificate minted under the peers' CA) and verifies the upstream
//! against the bench's upstream CA. nginx is the reference that inspects
//! nothing: a TLS-terminating reverse proxy, dialled directly. Each runs
//! as a child process killed on drop.

pub mod mitmproxy;
pub mod nginx;
pub mod squid;

use std::{
    net::{Ipv4Addr, SocketAddr, TcpListener, TcpStream},
    path::Path,
    process::Child,
    time::{Duration, Instant},
};

use anyhow::{Context as _, bail};
use nix::{
    sys::signal::{Signal, kill},
    unistd::Pid,
};
use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, KeyPair, KeyUsagePurpose};

/// Where `cargo xtask setup` puts mitmproxy (and matplotlib for the chart).
pub const VENV: &str = "/opt/sluice-bench-venv";

/// A CA the peers mint their certificates under; the client trusts it.
pub struct PeerCa {
    pub cert_pem: String,
    pub key_pem: String,
}

impl PeerCa {
    pub fn new() -> anyhow::Result<PeerCa> {
        let key = KeyPair::generate()?;
        let mut params = CertificateParams::default();
        params
            .distinguished_name
            .push(DnType::CommonName, "sluice-bench peer CA");
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params.key_usages = vec![
            KeyUsagePurpose::KeyCertSign,
            KeyUsagePurpose::CrlSign,
            KeyUsagePurpose::DigitalSignature,
        ];
        let cert = params.self_signed(&key)?;
        Ok(PeerCa {
            cert_pem: cert.pem(),
            key_pem: key.serialize_pem(),
        })
    }
}

/// A running peer: its address and process.
pub struct Peer {
    pub addr: SocketAddr,
    pub child: Child,
}

impl Drop for Peer {
    /// SIGTERM first, so a master takes its workers down with it (nginx's
    /// worker outlives a SIGKILLed master); SIGKILL after 5 s.
    fn drop(&mut self) {
        if let Ok(pid) = i32::try_from(self.child.id()) {
            let _ = kill(Pid::from_raw(pid), Signal::SIGTERM);
            let deadline = Instant::now() + Duration::from_secs(5);
            while Instant::now() < deadline {
                if matches!(self.child.try_wait(), Ok(Some(_))) {
                    return;
                }
                std::thread::sleep(Duration::from_millis(20));
            }
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A port nothing listens on right now (the peers take a port number, not
/// a socket; the window between closing and their bind is tiny).
pub fn free_port() -> anyhow::Result<u16> {
    Ok(TcpListener::bind((Ipv4Addr::LOCALHOST, 0))?
        .local_addr()?
        .port())
}

/// Waits until `addr` accepts connections, or the child exits.
pub fn wait_listening(child: &mut Child, addr: SocketAddr, log: &Path) -> anyhow::Result<()> {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        if let Some(status) = child.try_wait()? {
            bail!(
                "exited ({status}) before listening; its log:\n{}",
                std::fs::read_to_string(log).unwrap_or_default()
            );
        }
        if TcpStream::connect(addr).is_ok() {
            return Ok(());
        }
        if Instant::now() > deadline {
            bail!("not listening on {addr} after 60 s");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// A file the peer's log goes to.
fn log_file(path: &Path) -> anyhow::Result<std::fs::File> {
    std::fs::File::create(path).with_context(|| format!("creating {}", path.display()))
}

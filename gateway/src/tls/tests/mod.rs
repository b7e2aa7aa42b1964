//! Tests for the CA, minting and upstream trust, with real rustls handshakes
//! in memory (sync `Connection`s, or tokio-rustls over a duplex pipe where
//! the io::Error a proxy sees matters).

use std::{
    fs,
    os::unix::fs::PermissionsExt as _,
    path::Path,
    sync::{
        Arc,
        atomic::{AtomicU64, Ordering},
    },
    time::{Duration, Instant, SystemTime},
};

use prometheus::IntCounter;
use rcgen::{
    BasicConstraints, CertificateParams, DnType, DnValue, IsCa, KeyIdMethod, KeyPair,
    KeyUsagePurpose, string::PrintableString,
};
use rustls::{
    CertificateError, ClientConfig, ClientConnection, Connection, ProtocolVersion, RootCertStore,
    ServerConfig, ServerConnection,
    client::{WebPkiServerVerifier, danger::ServerCertVerifier as _},
    pki_types::{CertificateDer, ServerName, UnixTime},
    sign::CertifiedKey,
};

use super::{Ca, CaError, MintError, Minter, UpstreamTlsError, VERSIONS, provider};

mod ca;
mod mint;
mod upstream;

const HOUR: Duration = Duration::from_secs(3600);
const DAY: Duration = Duration::from_secs(24 * 3600);

fn counter() -> IntCounter {
    IntCounter::new(
        "sluice_certificates_minted_total",
        "Leaf certificates minted.",
    )
    .expect("counter")
}

/// A CA that lives in memory; its files go away with the temporary dir.
fn test_ca() -> Arc<Ca> {
    let dir = tempfile::tempdir().expect("tempdir");
    Arc::new(Ca::init(dir.path()).expect("init CA"))
}

fn minter(ca: &Arc<Ca>, capacity: usize) -> (Minter, IntCounter) {
    let minted = counter();
    (
        Minter::new(ca.clone(), capacity, DAY, minted.clone()),
        minted,
    )
}

fn roots(certs: &[&CertificateDer<'static>]) -> Arc<RootCertStore> {
    let mut roots = RootCertStore::empty();
    for cert in certs {
        roots.add((*cert).clone()).expect("root");
    }
    Arc::new(roots)
}

fn client_trusting(certs: &[&CertificateDer<'static>], alpn: &[&[u8]]) -> Arc<ClientConfig> {
    let mut config = ClientConfig::builder_with_provider(provider())
        .with_protocol_versions(VERSIONS)
        .expect("versions")
        .with_root_certificates(roots(certs))
        .with_no_client_auth();
    config.alpn_protocols = alpn.iter().map(|p| p.to_vec()).collect();
    Arc::new(config)
}

fn server_name(name: &str) -> ServerName<'static> {
    ServerName::try_from(name.to_owned()).expect("server name")
}

/// Moves every pending TLS record from `from` to `to` and processes it.
fn pump(from: &mut Connection, to: &mut Connection) -> Result<(), rustls::Error> {
    let mut wire = Vec::new();
    while from.wants_write() {
        from.write_tls(&mut wire).expect("write_tls into a Vec");
    }
    let mut wire = &wire[..];
    while !wire.is_empty() {
        to.read_tls(&mut wire).expect("read_tls from a slice");
        to.process_new_packets()?;
    }
    Ok(())
}

/// A complete handshake in memory. The error is the first either side hit.
fn handshake(
    client: Arc<ClientConfig>,
    server: Arc<ServerConfig>,
    name: &str,
) -> Result<(Connection, Connection), rustls::Error> {
    let mut client = Connection::Client(ClientConnection::new(client, server_name(name))?);
    let mut server = Connection::Server(ServerConnection::new(server)?);
    // TLS 1.2 needs two round trips, 1.3 one and a half; a few spare rounds
    // cost nothing.
    for _ in 0..8 {
        pump(&mut client, &mut server)?;
        pump(&mut server, &mut client)?;
        if !client.is_handshaking() && !server.is_handshaking() {
            return Ok((client, server));
        }
    }
    Err(rustls::Error::General(
        "handshake did not finish".to_owned(),
    ))
}

fn mode(path: &Path) -> u32 {
    fs::metadata(path).expect("metadata").permissions().mode() & 0o7777
}

/// Runs a future to completion on a fresh current-thread runtime, for the
/// sync tests above that need one leaf.
fn futures_block_on<F: Future>(future: F) -> F::Output {
    tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("runtime")
        .block_on(future)
}

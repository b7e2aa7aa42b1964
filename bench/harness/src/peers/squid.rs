//! Squid with ssl-bump (Debian's squid-openssl) as an explicit proxy:
//! peek at the client's SNI, then bump (intercept) with certificates
//! generated under the peer CA, the upstream verified against the upstream
//! CA; no caching, no access log. Foreground (`-N`), one process plus its
//! certificate helpers.

use std::{
    net::{Ipv4Addr, SocketAddr},
    path::Path,
    process::{Command, Stdio},
};

use anyhow::{Context as _, bail};

use super::{Peer, PeerCa, free_port, log_file, wait_listening};

pub const SQUID: &str = "/usr/sbin/squid";
const CERTGEN: &str = "/usr/lib/squid/security_file_certgen";

pub fn start(dir: &Path, ca: &PeerCa, upstream_ca: &Path) -> anyhow::Result<Peer> {
    for bin in [SQUID, CERTGEN] {
        if !Path::new(bin).is_file() {
            bail!("{bin} is missing (run `cargo xtask setup`: it installs squid-openssl)");
        }
    }
    let dir = dir.join("squid");
    std::fs::create_dir_all(&dir)?;
    let ca_pem = dir.join("ca.pem");
    std::fs::write(&ca_pem, format!("{}{}", ca.cert_pem, ca.key_pem))?;
    let trusted = dir.join("upstream-ca.pem");
    std::fs::copy(upstream_ca, &trusted)?;
    let db = dir.join("ssl_db");
    let _ = std::fs::remove_dir_all(&db);
    let status = Command::new(CERTGEN)
        .arg("-c")
        .arg("-s")
        .arg(&db)
        .args(["-M", "16MB"])
        .stdout(Stdio::null())
        .status()?;
    if !status.success() {
        bail!("{CERTGEN} -c failed: {status}");
    }
    let port = free_port()?;
    let conf = dir.join("squid.conf");
    std::fs::write(
        &conf,
        format!(
            "http_port 127.0.0.1:{port} ssl-bump tls-cert={ca} generate-host-certificates=on dynamic_cert_mem_cache_size=16MB
sslcrtd_program {CERTGEN} -s {db} -M 16MB
sslcrtd_children 4 startup=1 idle=1
acl step1 at_step SslBump1
ssl_bump peek step1
ssl_bump bump all
tls_outgoing_options cafile={trusted}
http_access allow all
cache deny all
cache_mem 8 MB
access_log none
cache_store_log none
cache_log {dir}/cache.log
pid_filename {dir}/squid.pid
coredump_dir {dir}
shutdown_lifetime 0 seconds
",
            ca = ca_pem.display(),
            db = db.display(),
            trusted = trusted.display(),
            dir = dir.display(),
        ),
    )?;
    // Squid drops to the `proxy` user: everything it reads or writes must
    // be its own.
    let status = Command::new("chown")
        .args(["-R", "proxy:proxy"])
        .arg(&dir)
        .status()?;
    if !status.success() {
        bail!("chown -R proxy:proxy {} failed", dir.display());
    }
    let log = dir.join("squid.stderr");
    let mut child = Command::new(SQUID)
        .arg("-N")
        .arg("-f")
        .arg(&conf)
        .stdin(Stdio::null())
        .stdout(log_file(&log)?)
        .stderr(log_file(&log)?)
        .spawn()
        .context("starting squid")?;
    let addr = SocketAddr::from((Ipv4Addr::LOCALHOST, port));
    wait_listening(&mut child, addr, &dir.join("cache.log")).context("squid")?;
    Ok(Peer { addr, child })
}

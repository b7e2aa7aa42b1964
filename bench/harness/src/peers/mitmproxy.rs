//! mitmproxy (PyPI) as a regular proxy: `CONNECT`, TLS intercepted with a
//! certificate under the peer CA, the upstream verified against the
//! upstream CA, large bodies streamed instead of buffered.

use std::{
    net::{Ipv4Addr, SocketAddr},
    path::{Path, PathBuf},
    process::{Command, Stdio},
};

use anyhow::{Context as _, bail};

use super::{Peer, PeerCa, VENV, free_port, log_file, wait_listening};

pub fn mitmdump() -> PathBuf {
    Path::new(VENV).join("bin/mitmdump")
}

pub fn start(dir: &Path, ca: &PeerCa, upstream_ca: &Path) -> anyhow::Result<Peer> {
    let bin = mitmdump();
    if !bin.is_file() {
        bail!(
            "mitmproxy is missing at {} (run `cargo xtask setup`)",
            bin.display()
        );
    }
    let confdir = dir.join("mitmproxy");
    std::fs::create_dir_all(&confdir)?;
    // mitmproxy reads its CA (key, then certificate) from this file.
    std::fs::write(
        confdir.join("mitmproxy-ca.pem"),
        format!("{}{}", ca.key_pem, ca.cert_pem),
    )?;
    let port = free_port()?;
    let log = dir.join("mitmproxy.log");
    let mut child = Command::new(&bin)
        .args([
            "--listen-host",
            "127.0.0.1",
            "--listen-port",
            &port.to_string(),
        ])
        .arg("--set")
        .arg(format!("confdir={}", confdir.display()))
        .arg("--set")
        .arg(format!(
            "ssl_verify_upstream_trusted_ca={}",
            upstream_ca.display()
        ))
        .args([
            "--set",
            "stream_large_bodies=256k",
            "--set",
            "flow_detail=0",
            "--set",
            "termlog_verbosity=error",
            "--quiet",
        ])
        .stdin(Stdio::null())
        .stdout(log_file(&log)?)
        .stderr(log_file(&dir.join("mitmproxy.stderr"))?)
        .spawn()
        .with_context(|| format!("starting {}", bin.display()))?;
    let addr = SocketAddr::from((Ipv4Addr::LOCALHOST, port));
    wait_listening(&mut child, addr, &log).context("mitmproxy")?;
    Ok(Peer { addr, child })
}

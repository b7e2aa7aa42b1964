//! Entering a network namespace by its path (`/run/netns/NAME`): a client
//! dialling the published web app directly enters it for good; the app's
//! listener is made on a thread that enters it and ends, and the socket
//! keeps the namespace it was made in.

use std::{net::TcpListener, path::Path};

use anyhow::Context as _;
use nix::sched::{CloneFlags, setns};

/// Moves the calling thread into the namespace at `path`; threads it
/// starts afterwards are born there.
pub fn enter(path: &Path) -> anyhow::Result<()> {
    let file = std::fs::File::open(path).with_context(|| format!("opening {}", path.display()))?;
    setns(&file, CloneFlags::CLONE_NEWNET)
        .with_context(|| format!("entering the network namespace {}", path.display()))
}

/// A listener on a free port of 127.0.0.1 inside the namespace at `path`,
/// made on a thread of its own so this one stays where it is.
pub fn listen_in(path: &Path) -> anyhow::Result<TcpListener> {
    let path = path.to_owned();
    std::thread::spawn(move || {
        enter(&path)?;
        TcpListener::bind(("127.0.0.1", 0)).context("binding in the namespace")
    })
    .join()
    .map_err(|_| anyhow::anyhow!("the namespace thread panicked"))?
}

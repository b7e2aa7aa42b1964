//! The admin API: HTTP/1.1 over a root-only Unix socket, through which the
//! control plane and the `sluice sandbox|session|status` CLI register
//! sandboxes and sessions and read the daemon's status.
//!
//! [`api`] holds the wire types and the [`Backend`] trait the daemon
//! implements, [`server`] the socket, peer check and routing, [`client`] the
//! caller's side. The peer guard refuses non-root peers and any peer inside
//! the sandbox cgroup subtree, so a sandbox cannot administer itself.

pub mod api;
pub mod client;
mod peer;
pub mod server;
pub mod status_text;

#[cfg(test)]
mod tests;

pub use api::{
    AdminError, Backend, SandboxInfo, SandboxSpec, SessionInfo, SessionSpec, Status, TaskSpec,
};
pub use client::{Client, ClientError};
pub use peer::{PeerError, PeerGuard};
pub use server::{bind, serve};

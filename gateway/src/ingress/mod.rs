//! The web-app ingress: what a sandbox serves, published to the viewers
//! its owner chose, with nothing of theirs reaching it.
//!
//! A publication (`publish`) routes `NAME.<apps domain>` or a path prefix
//! (`route`) to a port of a sandbox. A viewer proves who they are with a
//! control-plane token (`token`), exchanged once for a session cookie
//! (`session`); the publication's scope decides (`scope`); all of it in
//! `admit`, pure. The request goes on with an allowlist of its headers
//! and the answer comes back without those acting on the apps domain,
//! with the operator's CSP (`headers`). The I/O: `listener` (viewers'
//! side) and `forward` (the app's side, dialled inside the sandbox's
//! namespace).

pub mod admit;
pub mod config;
pub mod exposure;
pub mod forward;
pub mod headers;
pub mod listener;
pub mod metrics;
pub mod pool;
pub mod publish;
pub mod route;
pub mod scope;
pub mod session;
pub mod token;
pub mod viewer_header;

#[cfg(test)]
mod test_keys;

#[cfg(test)]
mod in_process;

//! Credentials: the real secrets the daemon holds on the sandboxes' behalf, the
//! placeholders the sandboxes hold instead, and the pure logic that swaps one
//! for the other at the edge.
//!
//! The pieces, in the order a request meets them:
//!
//! | module          | owns                                                            |
//! |-----------------|-----------------------------------------------------------------|
//! | [`config`]      | the `credentials:` section of the daemon config and its checks  |
//! | `scheme_config` | each scheme's options and where a secret comes from (`Source`), re-exported by [`config`] |
//! | [`secret`]      | [`Secret`]: zeroized bytes that never print                     |
//! | [`store`]       | [`CredentialStore`]: loading secrets, rotation without restart  |
//! | [`placeholder`] | [`Placeholders`]: stable per-sandbox stand-ins, the daemon key  |
//! | [`hosts`]       | [`HostSet`]: exact and `*.suffix` host patterns                 |
//! | [`binding`]     | finding placeholders in a request and deciding inject / refuse |
//! | [`scheme`]      | rewriting a request head with the secret, and redaction needles |
//! | `scheme_error`  | `SchemeError`, shared by the schemes and [`config`]; re-exported by [`scheme`] |
//! | `percent`       | percent-encoding and decoding of query and form values          |
//! | `forbidden_headers` | the framing and routing headers no scheme may write         |
//! | [`sigv4`]       | the `aws_sigv4` scheme (signing through the `aws-sigv4` crate)   |
//! | [`oauth`]       | the `oauth2` scheme: token requests, answers, the token cache   |
//! | [`token_endpoint`] | asking token endpoints for tokens (through [`crate::outbound`]) |
//! | [`kept`]        | rotated refresh tokens, kept in `state_dir` across restarts; the `Keep` trait |
//! | [`sealed`]      | secrets at rest: `state_dir` files sealed (AEAD) under the state key, and where that key lives |
//! | [`body`]        | placeholders in request bodies: bounded buffering, replacement |
//!
//! Imports point one way. `secret`, `hosts`, `body`, `scheme_config`,
//! `scheme_error`, `percent` and `forbidden_headers` import nothing from
//! here; [`sealed`] imports only `scheme_config` and [`store`]'s path
//! helper; [`kept`] imports only [`secret`] and [`sealed`]; [`sigv4`],
//! [`oauth`] and `hmac` take those leaves directly; [`scheme`] builds a [`Scheme`] from a
//! [`SchemeConfig`] on top of them; [`config`] checks credentials with
//! [`scheme`]; [`placeholder`], [`binding`] and [`store`] sit above
//! [`config`], and [`token_endpoint`] above [`oauth`].
//!
//! Nothing here does I/O on the request path except [`CredentialStore::reload_changed`]
//! (one `stat` per file-backed credential) and [`token_endpoint`] (an `oauth2`
//! token fetch when none is cached). Wiring into the proxy lives elsewhere:
//! the proxy scans with [`PlaceholderIndex`], calls [`decide`], and on
//! [`Binding::Inject`] fetches the secret (or an access token) and calls
//! [`Scheme::apply_to`] as the last request stage, so no earlier stage ever
//! sees the real secret.

pub mod binding;
pub mod body;
pub mod config;
mod forbidden_headers;
pub mod hosts;
pub mod kept;
pub mod oauth;
mod percent;
pub mod placeholder;
pub mod scheme;
mod scheme_config;
mod scheme_error;
pub mod sealed;
pub mod secret;
pub mod sigv4;
pub mod store;
pub mod systemd;
pub mod token_endpoint;

pub use binding::{
    Binding, BindingError, Bindings, Found, Location, PlaceholderIndex, Transport, decide,
};
pub use config::{CredentialConfig, PlaceholderShape, SchemeConfig, Source};
pub use hosts::HostSet;
pub use placeholder::{Placeholders, env_name, load_or_create_key};
pub use scheme::{Redactions, Scheme};
pub use secret::Secret;
pub use store::{CredentialStore, Env, ProcessEnv};

#[cfg(test)]
mod tests;

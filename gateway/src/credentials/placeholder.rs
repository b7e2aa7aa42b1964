//! [`Placeholders`]: the stand-ins sandboxes hold instead of real secrets,
//! and the per-daemon key they are derived from.
//!
//! A placeholder is `prefix + tail`, where the tail is alphanumeric and drawn
//! from HMAC-SHA256(key, sandbox, credential). Deriving instead of generating
//! means a sandbox keeps the same placeholder across daemon restarts with no
//! per-sandbox state on disk, while one sandbox's placeholder reveals nothing
//! about another's or about the secret.
//!
//! Length: `shape.length` when set (validated to leave at least
//! [`MIN_CONFIGURED_TAIL`] random characters); else the real secret's length,
//! so SDKs that check a key's length accept it, but never fewer than
//! [`MIN_TAIL`] random characters. A secret rotated to a different length
//! therefore changes an unset-length placeholder: set `length` for
//! credentials whose length varies.

use std::io;
use std::path::Path;

use hmac::{Hmac, Mac};
use sha2::Sha256;
use zeroize::Zeroizing;

use super::config::{CredentialConfig, MIN_CONFIGURED_TAIL, PlaceholderShape};
use super::sealed::{self, StateKey};

/// Random characters in a placeholder whose length is not configured.
pub const MIN_TAIL: usize = 24;

/// File name of the derivation key inside the daemon's state directory
/// (sealed under the state key, [`super::sealed`]).
pub const KEY_FILE: &str = "placeholder.key";

const ALPHABET: &[u8; 62] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";

/// Bumped if the derivation ever changes, so old and new cannot collide.
const DOMAIN: &[u8] = b"sluice/placeholder/v1";

type HmacSha256 = Hmac<Sha256>;

/// Derives placeholders from the per-daemon key.
pub struct Placeholders {
    key: Zeroizing<[u8; 32]>,
}

impl std::fmt::Debug for Placeholders {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Placeholders(** key **)")
    }
}

impl Placeholders {
    pub fn new(key: [u8; 32]) -> Self {
        Self {
            key: Zeroizing::new(key),
        }
    }

    /// The placeholder `sandbox` holds for `credential`.
    pub fn placeholder(
        &self,
        sandbox: &str,
        credential: &str,
        shape: &PlaceholderShape,
        secret_len: usize,
    ) -> String {
        let prefix = shape.prefix.as_deref().unwrap_or("");
        let tail_len = match shape.length {
            Some(total) => total.saturating_sub(prefix.len()).max(MIN_CONFIGURED_TAIL),
            None => secret_len.saturating_sub(prefix.len()).max(MIN_TAIL),
        };
        let mut out = String::with_capacity(prefix.len() + tail_len);
        out.push_str(prefix);
        let mut block: u64 = 0;
        while out.len() < prefix.len() + tail_len {
            for b in self.block(sandbox, credential, block) {
                // Rejection sampling: 248 = 4 * 62, so accepted bytes map to
                // the alphabet without bias.
                if b < 248 && out.len() < prefix.len() + tail_len {
                    out.push(char::from(ALPHABET[usize::from(b % 62)]));
                }
            }
            block = block.wrapping_add(1);
        }
        out
    }

    /// `(ENV_NAME, placeholder)` for each `(credential, secret length)`, for
    /// the sandbox's environment.
    pub fn env<'a>(
        &self,
        sandbox: &str,
        creds: impl IntoIterator<Item = (&'a CredentialConfig, usize)>,
    ) -> Vec<(String, String)> {
        creds
            .into_iter()
            .map(|(c, len)| {
                (
                    env_name(&c.name),
                    self.placeholder(sandbox, &c.name, &c.placeholder, len),
                )
            })
            .collect()
    }

    fn block(&self, sandbox: &str, credential: &str, counter: u64) -> [u8; 32] {
        let Ok(mut mac) = HmacSha256::new_from_slice(self.key.as_slice()) else {
            // HMAC accepts keys of any length; unreachable, but no panic.
            return [0; 32];
        };
        // Length-prefixed fields so ("ab", "c") and ("a", "bc") differ.
        for field in [DOMAIN, sandbox.as_bytes(), credential.as_bytes()] {
            mac.update(&(field.len() as u64).to_be_bytes());
            mac.update(field);
        }
        mac.update(&counter.to_be_bytes());
        mac.finalize().into_bytes().into()
    }
}

/// The environment variable a credential's placeholder is exposed as: the
/// name uppercased, every other character `_`, and a leading `_` if it would
/// start with a digit.
pub fn env_name(credential: &str) -> String {
    let mut out: String = credential
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_uppercase()
            } else {
                '_'
            }
        })
        .collect();
    if out.starts_with(|c: char| c.is_ascii_digit()) || out.is_empty() {
        out.insert(0, '_');
    }
    out
}

/// Reads `state_dir/placeholder.key`, sealed under the state key
/// ([`super::sealed`]), creating it (32 random bytes, sealed, mode 0600) the
/// first time. A key an earlier version kept in the clear (exactly 32
/// bytes) is read once and rewritten sealed, so placeholders do not change.
/// Refuses a key of the wrong size, one readable by group or others, or one
/// sealed under another state key, rather than repairing it, since each
/// means someone else touched it (or the state key is not the one it was
/// sealed with).
pub fn load_or_create_key(
    state_dir: &Path,
    state_key: &StateKey,
) -> io::Result<Zeroizing<[u8; 32]>> {
    let path = state_dir.join(KEY_FILE);
    let wrong_size = |len: usize| {
        io::Error::new(
            io::ErrorKind::InvalidData,
            format!(
                "{} must hold exactly 32 bytes, found {len}; remove it to generate a new key (all placeholders change)",
                path.display()
            ),
        )
    };
    let mut key = Zeroizing::new([0u8; 32]);
    match sealed::read(state_dir, KEY_FILE, state_key)? {
        sealed::Read::Sealed(bytes) => {
            if bytes.len() != key.len() {
                return Err(wrong_size(bytes.len()));
            }
            key.copy_from_slice(&bytes);
        }
        sealed::Read::Plain(bytes) => {
            if bytes.len() != key.len() {
                return Err(wrong_size(bytes.len()));
            }
            key.copy_from_slice(&bytes);
            sealed::write(state_dir, KEY_FILE, state_key, &key[..])?;
            tracing::info!(key = %path.display(), "sealed the placeholder key an earlier version kept in the clear");
        }
        sealed::Read::Missing => {
            rand::fill(&mut key[..]);
            sealed::write(state_dir, KEY_FILE, state_key, &key[..])?;
        }
    }
    Ok(key)
}

#[cfg(test)]
#[path = "placeholder_tests.rs"]
mod tests;

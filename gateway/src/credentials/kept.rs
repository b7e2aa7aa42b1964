//! Refresh tokens an `oauth2` endpoint rotated to, kept in
//! `state_dir/oauth_refresh.json` (mode 0600, sealed under the state key:
//! [`super::sealed`]) so that a restart goes on from the newest one: an
//! endpoint that rotates refresh tokens has retired the one in the
//! credential's source file. A file an earlier version wrote in the clear
//! is read once and rewritten sealed.
//!
//! Each is kept with the SHA-256 of the source secret it descends from.
//! When the source changes (an operator put a new token there) the source
//! wins, as it does in memory ([`super::oauth::TokenCache`]).
//!
//! [`Keep`] is what a token cache hands rotations to (so the cache and its
//! tests need no file); [`KeptTokens::for_credential`] is the one backed by
//! the file. [`digest`] is what a kept token is filed under.

use std::collections::BTreeMap;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use serde::{Deserialize, Serialize};
use sha2::{Digest as _, Sha256};
use zeroize::Zeroizing;

use super::sealed::{self, StateKey};
use super::secret::Secret;

/// The file, in the daemon's `state_dir`.
pub const FILE: &str = "oauth_refresh.json";

/// The digest a kept token is filed under: its source secret's SHA-256.
pub fn digest(source: &Secret) -> [u8; 32] {
    Sha256::digest(source.expose()).into()
}

/// Where a refresh grant's rotated token outlives the process (the
/// daemon's `state_dir`, [`KeptTokens`]); [`super::oauth::TokenCache`]
/// hands each rotation to one.
pub trait Keep: Send + Sync {
    /// The token an earlier run rotated to, and the digest
    /// ([`digest`]) of the source secret it descends from.
    fn kept(&self) -> Option<(Arc<Secret>, [u8; 32])>;
    /// Called after each rotation, with the fetch's lock held.
    fn keep(&self, rotated: &Secret, source: [u8; 32]);
}

#[derive(Serialize, Deserialize)]
struct Entry {
    /// The source secret's SHA-256, in base64.
    source_sha256: String,
    refresh_token: Zeroizing<String>,
}

/// Every credential's kept refresh token, and the file they are saved in.
pub struct KeptTokens {
    dir: PathBuf,
    key: Arc<StateKey>,
    entries: Mutex<BTreeMap<String, Entry>>,
}

impl KeptTokens {
    /// Reads `dir/oauth_refresh.json` (none yet: nothing kept), sealed
    /// under `key`; one an earlier version wrote in the clear is rewritten
    /// sealed at once. A file that group or others may read is refused, not
    /// repaired: it holds secrets, and someone else made it so.
    pub fn load(dir: &Path, key: Arc<StateKey>) -> io::Result<KeptTokens> {
        let path = dir.join(FILE);
        let parse = |text: &[u8]| {
            serde_json::from_slice::<BTreeMap<String, Entry>>(text).map_err(|e| {
                io::Error::new(
                    io::ErrorKind::InvalidData,
                    format!("{}: {e}", path.display()),
                )
            })
        };
        let (entries, plain) = match sealed::read(dir, FILE, &key)? {
            sealed::Read::Missing => (BTreeMap::new(), false),
            sealed::Read::Sealed(text) => (parse(&text)?, false),
            sealed::Read::Plain(text) => (parse(&text)?, true),
        };
        let tokens = KeptTokens {
            dir: dir.to_owned(),
            key,
            entries: Mutex::new(entries),
        };
        if plain {
            tokens.save(&tokens.lock())?;
            tracing::info!(file = %path.display(), "sealed the refresh tokens an earlier version kept in the clear");
        }
        Ok(tokens)
    }

    /// `credential`'s kept token and the digest of the source it descends
    /// from.
    pub fn kept(&self, credential: &str) -> Option<(Arc<Secret>, [u8; 32])> {
        let entries = self.lock();
        let entry = entries.get(credential)?;
        let source = STANDARD
            .decode(&entry.source_sha256)
            .ok()?
            .try_into()
            .ok()?;
        let token = Secret::new(entry.refresh_token.as_bytes().to_vec());
        Some((Arc::new(token), source))
    }

    /// Keeps `rotated` for `credential` and saves the file, sealed.
    pub fn keep(&self, credential: &str, rotated: &Secret, source: [u8; 32]) -> io::Result<()> {
        let token = std::str::from_utf8(rotated.expose())
            .map_err(|_| io::Error::new(io::ErrorKind::InvalidData, "not UTF-8"))?;
        let mut entries = self.lock();
        entries.insert(
            credential.to_owned(),
            Entry {
                source_sha256: STANDARD.encode(source),
                refresh_token: Zeroizing::new(token.to_owned()),
            },
        );
        // Written under the lock: saves land in the order of the changes.
        self.save(&entries)
    }

    /// Seals `entries` into the file (0600), whole or not at all
    /// ([`crate::replace_file`]).
    fn save(&self, entries: &BTreeMap<String, Entry>) -> io::Result<()> {
        // Sized up front, so the JSON (which holds the tokens) is not
        // reallocated and left behind, unzeroized, in freed memory.
        let size: usize = entries
            .iter()
            .map(|(name, e)| 2 * (name.len() + e.refresh_token.len()) + e.source_sha256.len() + 64)
            .sum();
        let mut text = Zeroizing::new(Vec::with_capacity(size + 2));
        serde_json::to_writer(&mut *text, entries).map_err(io::Error::other)?;
        sealed::write(&self.dir, FILE, &self.key, &text)
    }

    /// What `credential`'s token cache keeps through.
    pub fn for_credential(self: &Arc<Self>, credential: &str) -> Box<dyn Keep> {
        Box::new(KeptFor {
            tokens: self.clone(),
            credential: credential.to_owned(),
        })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, BTreeMap<String, Entry>> {
        self.entries.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

struct KeptFor {
    tokens: Arc<KeptTokens>,
    credential: String,
}

impl Keep for KeptFor {
    fn kept(&self) -> Option<(Arc<Secret>, [u8; 32])> {
        self.tokens.kept(&self.credential)
    }

    fn keep(&self, rotated: &Secret, source: [u8; 32]) {
        if let Err(err) = self.tokens.keep(&self.credential, rotated, source) {
            tracing::warn!(
                credential = %self.credential,
                %err,
                "the rotated refresh token is kept in memory only: after a restart the credential starts again from its source"
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use std::fs;
    use std::os::unix::fs::PermissionsExt as _;

    use super::*;

    fn key() -> Arc<StateKey> {
        Arc::new(StateKey::derive(&[7; 32]))
    }

    #[test]
    fn kept_tokens_survive_a_reload_sealed_and_private() {
        let dir = tempfile::tempdir().expect("tempdir");
        let tokens = KeptTokens::load(dir.path(), key()).expect("no file yet");
        assert!(tokens.kept("rt").is_none());
        let source = digest(&Secret::from("r1"));
        tokens
            .keep("rt", &Secret::from("r2-ROTATED"), source)
            .expect("kept");
        tokens
            .keep("other", &Secret::from("o2"), [9; 32])
            .expect("kept");

        let path = dir.path().join(FILE);
        let mode = fs::metadata(&path).expect("file").permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
        let bytes = fs::read(&path).expect("read");
        assert!(sealed::is_sealed(&bytes));
        assert!(!bytes.windows(10).any(|w| w == b"r2-ROTATED"));
        let again = KeptTokens::load(dir.path(), key()).expect("reload");
        let (token, from) = again.kept("rt").expect("rt kept");
        assert_eq!(token.expose(), b"r2-ROTATED");
        assert_eq!(from, source);
        assert_eq!(again.kept("other").expect("other").0.expose(), b"o2");
        // No temp file is left behind.
        assert_eq!(fs::read_dir(dir.path()).expect("dir").count(), 1);

        let other = Arc::new(StateKey::derive(&[8; 32]));
        let err = KeptTokens::load(dir.path(), other)
            .err()
            .expect("another key");
        assert!(err.to_string().contains("state key"), "{err}");

        fs::set_permissions(&path, fs::Permissions::from_mode(0o644)).expect("chmod");
        let err = KeptTokens::load(dir.path(), key()).err().expect("refused");
        assert!(err.to_string().contains("chmod 600"), "{err}");
    }

    #[test]
    fn a_file_kept_in_the_clear_by_an_earlier_version_is_sealed_on_load() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join(FILE);
        let source = STANDARD.encode([3u8; 32]);
        let old =
            format!(r#"{{"rt":{{"source_sha256":"{source}","refresh_token":"rt-OLD-CLEAR"}}}}"#);
        fs::write(&path, &old).expect("write");
        fs::set_permissions(&path, fs::Permissions::from_mode(0o600)).expect("chmod");

        let tokens = KeptTokens::load(dir.path(), key()).expect("migrates");
        assert_eq!(tokens.kept("rt").expect("kept").0.expose(), b"rt-OLD-CLEAR");
        let bytes = fs::read(&path).expect("read");
        assert!(sealed::is_sealed(&bytes), "rewritten sealed");
        assert!(!bytes.windows(12).any(|w| w == b"rt-OLD-CLEAR"));
        let mode = fs::metadata(&path).expect("file").permissions().mode();
        assert_eq!(mode & 0o777, 0o600);

        let again = KeptTokens::load(dir.path(), key()).expect("reload");
        let (token, from) = again.kept("rt").expect("nothing lost");
        assert_eq!(token.expose(), b"rt-OLD-CLEAR");
        assert_eq!(from, [3u8; 32]);
    }

    #[test]
    fn a_damaged_file_is_an_error_naming_it() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join(FILE);
        for bytes in [
            &b"{not json"[..],
            &sealed::MAGIC[..],
            &b"\x89SLS\x01short"[..],
        ] {
            fs::write(&path, bytes).expect("write");
            fs::set_permissions(&path, fs::Permissions::from_mode(0o600)).expect("chmod");
            let err = KeptTokens::load(dir.path(), key()).err().expect("refused");
            assert!(err.to_string().contains(FILE), "{err}");
        }
    }
}

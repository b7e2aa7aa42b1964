//! Refresh tokens an `oauth2` endpoint rotated to, kept in
//! `state_dir/oauth_refresh.json` (mode 0600) so that a restart goes on
//! from the newest one: an endpoint that rotates refresh tokens has retired
//! the one in the credential's source file.
//!
//! Each is kept with the SHA-256 of the source secret it descends from.
//! When the source changes (an operator put a new token there) the source
//! wins, as it does in memory ([`super::oauth::TokenCache`]).
//!
//! [`Keep`] is what a token cache hands rotations to (so the cache and its
//! tests need no file); [`KeptTokens::for_credential`] is the one backed by
//! the file. [`digest`] is what a kept token is filed under.

use std::collections::BTreeMap;
use std::fs;
use std::io;
use std::os::unix::fs::PermissionsExt as _;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use serde::{Deserialize, Serialize};
use sha2::{Digest as _, Sha256};
use zeroize::Zeroizing;

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
    entries: Mutex<BTreeMap<String, Entry>>,
}

impl KeptTokens {
    /// Reads `dir/oauth_refresh.json` (none yet: nothing kept). A file that
    /// group or others may read is refused, not repaired: it holds secrets,
    /// and someone else made it so.
    pub fn load(dir: &Path) -> io::Result<KeptTokens> {
        let path = dir.join(FILE);
        let entries = match fs::File::open(&path) {
            Ok(file) => {
                if file.metadata()?.permissions().mode() & 0o077 != 0 {
                    return Err(io::Error::new(
                        io::ErrorKind::PermissionDenied,
                        format!(
                            "{} is readable by group or others; chmod 600 it",
                            path.display()
                        ),
                    ));
                }
                serde_json::from_reader(io::BufReader::new(file)).map_err(|e| {
                    io::Error::new(
                        io::ErrorKind::InvalidData,
                        format!("{}: {e}", path.display()),
                    )
                })?
            }
            Err(e) if e.kind() == io::ErrorKind::NotFound => BTreeMap::new(),
            Err(e) => return Err(io::Error::new(e.kind(), format!("{}: {e}", path.display()))),
        };
        Ok(KeptTokens {
            dir: dir.to_owned(),
            entries: Mutex::new(entries),
        })
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

    /// Keeps `rotated` for `credential` and saves the file (0600), whole
    /// or not at all ([`crate::replace_file`]).
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
        let text = Zeroizing::new(serde_json::to_vec(&*entries).map_err(io::Error::other)?);
        crate::replace_file::replace(&self.dir, FILE, &text, 0o600)
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
    use super::*;

    #[test]
    fn kept_tokens_survive_a_reload_and_stay_private() {
        let dir = tempfile::tempdir().expect("tempdir");
        let tokens = KeptTokens::load(dir.path()).expect("no file yet");
        assert!(tokens.kept("rt").is_none());
        let source = digest(&Secret::from("r1"));
        tokens
            .keep("rt", &Secret::from("r2"), source)
            .expect("kept");
        tokens
            .keep("other", &Secret::from("o2"), [9; 32])
            .expect("kept");

        let path = dir.path().join(FILE);
        let mode = fs::metadata(&path).expect("file").permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
        let again = KeptTokens::load(dir.path()).expect("reload");
        let (token, from) = again.kept("rt").expect("rt kept");
        assert_eq!(token.expose(), b"r2");
        assert_eq!(from, source);
        assert_eq!(again.kept("other").expect("other").0.expose(), b"o2");
        // No temp file is left behind.
        assert_eq!(fs::read_dir(dir.path()).expect("dir").count(), 1);

        fs::set_permissions(&path, fs::Permissions::from_mode(0o644)).expect("chmod");
        let err = KeptTokens::load(dir.path()).err().expect("refused");
        assert!(err.to_string().contains("chmod 600"), "{err}");
    }

    #[test]
    fn a_damaged_file_is_an_error_naming_it() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join(FILE);
        fs::write(&path, "{not json").expect("write");
        fs::set_permissions(&path, fs::Permissions::from_mode(0o600)).expect("chmod");
        let err = KeptTokens::load(dir.path()).err().expect("refused");
        assert!(err.to_string().contains(FILE), "{err}");
    }
}

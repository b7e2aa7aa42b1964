//! Secrets at rest: the files of `state_dir` that hold secrets (the
//! placeholder key, rotated refresh tokens) are sealed with an AEAD
//! (ChaCha20-Poly1305) under the state key, which lives outside
//! `state_dir`, so a copy of `state_dir` (a backup, a snapshot, a node's
//! volume) holds no secret in the clear.
//!
//! A sealed file is `MAGIC`, a version byte, a 96-bit nonce drawn at random
//! for each write, then the ciphertext and its 16-byte tag. The associated
//! data is the magic, the version and the file's name, so a sealed file
//! renamed over another (say, an old `oauth_refresh.json` over the
//! placeholder key) does not open.
//!
//! The state key ([`KeySource`], `state_key:` in the daemon config): a
//! systemd credential or a key file; unset, `$CREDENTIALS_DIRECTORY/state-key`
//! when systemd passes one, else the key file `<state_dir>.key` beside the
//! state directory (`/var/lib/sluice.key`), created (32 random bytes, mode
//! 0600) when missing. The key is derived from the whole content with
//! SHA-256, so any material of at least [`MIN_KEY_MATERIAL`] bytes serves
//! (raw random bytes, or their base64). A key file inside `state_dir` is
//! refused: it would travel with what it protects.
//!
//! Files written in the clear by earlier versions are read once and
//! rewritten sealed by their owners ([`Read::Plain`]).

use std::ffi::OsString;
use std::fs::{self, OpenOptions};
use std::io::{self, Read as _, Write as _};
use std::os::unix::fs::{OpenOptionsExt as _, PermissionsExt as _};
use std::path::{Path, PathBuf};

use ring::aead::{Aad, CHACHA20_POLY1305, LessSafeKey, NONCE_LEN, Nonce, UnboundKey};
use ring::rand::{SecureRandom as _, SystemRandom};
use serde::Deserialize;
use sha2::{Digest as _, Sha256};
use thiserror::Error;
use zeroize::Zeroizing;

/// The first bytes of every sealed file. `0x89` is no UTF-8 or JSON start,
/// so a sealed file is never mistaken for one written in the clear.
pub const MAGIC: [u8; 4] = *b"\x89SLS";
/// The format's version: the AEAD and the header's layout.
pub const VERSION: u8 = 1;
/// Magic, version, nonce.
pub const HEADER_LEN: usize = MAGIC.len() + 1 + NONCE_LEN;
/// What sealing adds to the plaintext: the header and the tag.
pub const OVERHEAD: usize = HEADER_LEN + 16;
/// The fewest bytes a state key file or credential may hold.
pub const MIN_KEY_MATERIAL: usize = 32;
/// The systemd credential read when `state_key` is unset.
pub const DEFAULT_CREDENTIAL: &str = "state-key";

/// Bumped if the derivation ever changes.
const KEY_DOMAIN: &[u8] = b"sluice/state-key/v1\0";

/// The key sealed files are sealed under. Never printed.
pub struct StateKey(Zeroizing<[u8; 32]>);

impl std::fmt::Debug for StateKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("StateKey(** key **)")
    }
}

impl StateKey {
    /// The key derived from `material` (a key file's or credential's whole
    /// content).
    pub fn derive(material: &[u8]) -> StateKey {
        let mut hash = Sha256::new();
        hash.update(KEY_DOMAIN);
        hash.update(material);
        let mut key = Zeroizing::new([0u8; 32]);
        key.copy_from_slice(&hash.finalize());
        StateKey(key)
    }

    fn aead(&self) -> LessSafeKey {
        // 32 bytes is ChaCha20-Poly1305's key length: this cannot fail.
        let unbound = UnboundKey::new(&CHACHA20_POLY1305, &self.0[..])
            .unwrap_or_else(|_| unreachable!("a 32-byte ChaCha20-Poly1305 key"));
        LessSafeKey::new(unbound)
    }
}

/// Why a sealed file did not open.
#[derive(Debug, Error, PartialEq, Eq)]
pub enum OpenError {
    #[error("not a sealed file")]
    NotSealed,
    #[error("sealed by a newer version (format {0})")]
    Version(u8),
    #[error("truncated")]
    Truncated,
    #[error(
        "does not open with the state key: sealed under another key, altered, or another file's"
    )]
    Forged,
}

/// Whether `bytes` start as a sealed file does.
pub fn is_sealed(bytes: &[u8]) -> bool {
    bytes.starts_with(&MAGIC)
}

/// `plaintext` sealed under `key` for the file `name`, with a fresh
/// random nonce.
pub fn seal(key: &StateKey, name: &str, plaintext: &[u8]) -> io::Result<Vec<u8>> {
    let mut nonce = [0u8; NONCE_LEN];
    SystemRandom::new()
        .fill(&mut nonce)
        .map_err(|_| io::Error::other("the system random generator failed"))?;
    // The plaintext's copy is sealed in place; the buffer is wiped on drop.
    let mut body = Zeroizing::new(Vec::with_capacity(plaintext.len() + 16));
    body.extend_from_slice(plaintext);
    key.aead()
        .seal_in_place_append_tag(
            Nonce::assume_unique_for_key(nonce),
            Aad::from(aad(name)),
            &mut *body,
        )
        .map_err(|_| io::Error::other("sealing failed"))?;
    let mut out = Vec::with_capacity(HEADER_LEN + body.len());
    out.extend_from_slice(&MAGIC);
    out.push(VERSION);
    out.extend_from_slice(&nonce);
    out.extend_from_slice(&body);
    Ok(out)
}

/// The plaintext of the sealed file `name`.
pub fn open(key: &StateKey, name: &str, sealed: &[u8]) -> Result<Zeroizing<Vec<u8>>, OpenError> {
    if sealed.len() < MAGIC.len() + 1 {
        return Err(if MAGIC.starts_with(sealed) {
            OpenError::Truncated
        } else {
            OpenError::NotSealed
        });
    }
    if !is_sealed(sealed) {
        return Err(OpenError::NotSealed);
    }
    if sealed[MAGIC.len()] != VERSION {
        return Err(OpenError::Version(sealed[MAGIC.len()]));
    }
    if sealed.len() < OVERHEAD {
        return Err(OpenError::Truncated);
    }
    let mut nonce = [0u8; NONCE_LEN];
    nonce.copy_from_slice(&sealed[MAGIC.len() + 1..HEADER_LEN]);
    let mut body = Zeroizing::new(sealed[HEADER_LEN..].to_vec());
    let len = key
        .aead()
        .open_in_place(
            Nonce::assume_unique_for_key(nonce),
            Aad::from(aad(name)),
            &mut body,
        )
        .map_err(|_| OpenError::Forged)?
        .len();
    body.truncate(len);
    Ok(body)
}

fn aad(name: &str) -> Vec<u8> {
    let mut aad = Vec::with_capacity(MAGIC.len() + 1 + name.len());
    aad.extend_from_slice(&MAGIC);
    aad.push(VERSION);
    aad.extend_from_slice(name.as_bytes());
    aad
}

/// What [`read`] found.
#[derive(Debug)]
pub enum Read {
    /// No such file.
    Missing,
    /// A sealed file, opened.
    Sealed(Zeroizing<Vec<u8>>),
    /// A file an earlier version wrote in the clear: its owner checks it
    /// and rewrites it sealed ([`write()`]).
    Plain(Zeroizing<Vec<u8>>),
}

/// Reads `dir/name`, refusing (not repairing) a file group or others may
/// read, and opens it if sealed. Errors name the file.
pub fn read(dir: &Path, name: &str, key: &StateKey) -> io::Result<Read> {
    let path = dir.join(name);
    let named = |e: io::Error| io::Error::new(e.kind(), format!("{}: {e}", path.display()));
    let file = match fs::File::open(&path) {
        Ok(file) => file,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Read::Missing),
        Err(e) => return Err(named(e)),
    };
    let bytes = read_whole(file, true, named)?;
    if !is_sealed(&bytes) {
        return Ok(Read::Plain(bytes));
    }
    open(key, name, &bytes)
        .map(Read::Sealed)
        .map_err(|e| {
            io::Error::new(
                io::ErrorKind::InvalidData,
                format!(
                    "{}: {e}; give the daemon the state key it was sealed with (docs/operations.md, state key)",
                    path.display()
                ),
            )
        })
}

/// Seals `plaintext` into `dir/name` (mode 0600), replacing the file whole
/// or not at all ([`crate::replace_file`]).
pub fn write(dir: &Path, name: &str, key: &StateKey, plaintext: &[u8]) -> io::Result<()> {
    let sealed = seal(key, name, plaintext)?;
    crate::replace_file::replace(dir, name, &sealed, 0o600)
}

/// Where the state key comes from (`state_key:` in the daemon config):
/// `{file: PATH}` or `{systemd_credential: NAME}`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(try_from = "KeySourceRepr")]
pub enum KeySource {
    /// A key file outside `state_dir`, created (32 random bytes, 0600)
    /// when missing.
    File { path: PathBuf },
    /// `$CREDENTIALS_DIRECTORY/NAME`, as systemd's `LoadCredential=` or
    /// `LoadCredentialEncrypted=` gives it.
    SystemdCredential { name: String },
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct KeySourceRepr {
    file: Option<PathBuf>,
    systemd_credential: Option<String>,
}

impl TryFrom<KeySourceRepr> for KeySource {
    type Error = String;

    fn try_from(r: KeySourceRepr) -> Result<Self, Self::Error> {
        match (r.file, r.systemd_credential) {
            (Some(path), None) if path.is_absolute() => Ok(KeySource::File { path }),
            (Some(path), None) => Err(format!(
                "`state_key.file` must be an absolute path, not {}",
                path.display()
            )),
            (None, Some(name)) if name.is_empty() => {
                Err("`state_key.systemd_credential` is empty".to_owned())
            }
            (None, Some(name)) => {
                super::scheme_config::check_credential_name(&name)?;
                Ok(KeySource::SystemdCredential { name })
            }
            _ => Err(
                "`state_key` takes exactly one of `file: <path>` or `systemd_credential: <NAME>`"
                    .to_owned(),
            ),
        }
    }
}

/// Where the key is read from, once the default is settled.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KeyPlace {
    /// A file the daemon creates when missing.
    File(PathBuf),
    /// A systemd credential's file: read, never created.
    Credential(PathBuf),
}

/// Settles where the state key is: `configured`; unset,
/// `$CREDENTIALS_DIRECTORY/state-key` when that file exists, else
/// `<state_dir>.key`. `credentials_directory` is the variable's value.
pub fn place(
    configured: Option<&KeySource>,
    state_dir: &Path,
    credentials_directory: Option<OsString>,
) -> io::Result<KeyPlace> {
    match configured {
        Some(KeySource::File { path }) => Ok(KeyPlace::File(path.clone())),
        Some(KeySource::SystemdCredential { name }) => {
            super::systemd::credential_path(name, credentials_directory)
                .map(KeyPlace::Credential)
                .map_err(|e| io::Error::new(io::ErrorKind::NotFound, format!("state_key: {e}")))
        }
        None => {
            if let Some(dir) = credentials_directory.filter(|d| !d.is_empty()) {
                let path = Path::new(&dir).join(DEFAULT_CREDENTIAL);
                if path.exists() {
                    return Ok(KeyPlace::Credential(path));
                }
            }
            beside(state_dir).map(KeyPlace::File)
        }
    }
}

/// `<state_dir>.key`: `/var/lib/sluice` → `/var/lib/sluice.key`.
fn beside(state_dir: &Path) -> io::Result<PathBuf> {
    let trimmed: PathBuf = state_dir.components().collect();
    let (Some(parent), Some(name)) = (trimmed.parent(), trimmed.file_name()) else {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!(
                "state_dir {} has no parent for the state key file; set `state_key`",
                state_dir.display()
            ),
        ));
    };
    let mut file = name.to_owned();
    file.push(".key");
    Ok(parent.join(file))
}

/// Reads the state key from `place`, creating a missing key file. Refuses
/// a key file inside `state_dir` (which must exist), a file group or
/// others may read, and material shorter than [`MIN_KEY_MATERIAL`].
pub fn load_key(place: &KeyPlace, state_dir: &Path) -> io::Result<StateKey> {
    let path = match place {
        KeyPlace::File(path) | KeyPlace::Credential(path) => path,
    };
    if let KeyPlace::File(path) = place {
        refuse_inside(path, state_dir)?;
        create_if_missing(path)?;
    }
    let named =
        |e: io::Error| io::Error::new(e.kind(), format!("the state key {}: {e}", path.display()));
    let file = fs::File::open(path).map_err(named)?;
    // A systemd credential's directory is the service's alone; a key file
    // is checked like every other secret file.
    let material = read_whole(file, matches!(place, KeyPlace::File(_)), named)?;
    if material.len() < MIN_KEY_MATERIAL {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!(
                "the state key {} holds {} bytes; it needs at least {MIN_KEY_MATERIAL} (e.g. `head -c 32 /dev/urandom`)",
                path.display(),
                material.len()
            ),
        ));
    }
    Ok(StateKey::derive(&material))
}

/// Whether `path` (which need not exist yet) is inside `state_dir` (which
/// must), as written or by real path.
pub fn is_inside(path: &Path, state_dir: &Path) -> io::Result<bool> {
    let dir = fs::canonicalize(state_dir)
        .map_err(|e| io::Error::new(e.kind(), format!("state_dir {}: {e}", state_dir.display())))?;
    // The file may not exist yet: its directory's real path decides.
    let (parent, name) = (path.parent(), path.file_name());
    let real = match (parent.map(fs::canonicalize), name) {
        (Some(Ok(parent)), Some(name)) => parent.join(name),
        _ => path.to_owned(),
    };
    Ok(real.starts_with(&dir) || path.starts_with(state_dir))
}

/// Reads `file` whole into a buffer wiped when dropped; with `private`,
/// refuses a file group or others may read (checked on the opened file).
/// `named` says which file an error is about.
fn read_whole(
    mut file: fs::File,
    private: bool,
    named: impl Fn(io::Error) -> io::Error,
) -> io::Result<Zeroizing<Vec<u8>>> {
    let meta = file.metadata().map_err(&named)?;
    if private && meta.permissions().mode() & 0o077 != 0 {
        return Err(named(io::Error::new(
            io::ErrorKind::PermissionDenied,
            "readable by group or others; chmod 600 it",
        )));
    }
    let cap = usize::try_from(meta.len()).unwrap_or(0).saturating_add(1);
    let mut bytes = Zeroizing::new(Vec::with_capacity(cap));
    file.read_to_end(&mut bytes).map_err(named)?;
    Ok(bytes)
}

fn refuse_inside(key: &Path, state_dir: &Path) -> io::Result<()> {
    if is_inside(key, state_dir)? {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!(
                "the state key {} is inside state_dir {}: it would travel with the secrets it seals; put it elsewhere (state_key, docs/operations.md)",
                key.display(),
                state_dir.display()
            ),
        ));
    }
    Ok(())
}

fn create_if_missing(path: &Path) -> io::Result<()> {
    match OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)
    {
        Ok(mut file) => {
            let mut key = Zeroizing::new([0u8; 32]);
            let written = SystemRandom::new()
                .fill(&mut key[..])
                .map_err(|_| io::Error::other("the system random generator failed"))
                .and_then(|()| file.write_all(&key[..]))
                .and_then(|()| file.sync_all());
            if let Err(e) = written {
                // Half a key is no key: the next start makes a new one.
                let _ = fs::remove_file(path);
                return Err(e);
            }
            tracing::info!(key = %path.display(), "created the state key; keep it with the host, out of state_dir's backups");
            Ok(())
        }
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => Ok(()),
        Err(e) => Err(io::Error::new(
            e.kind(),
            format!(
                "cannot create the state key {}: {e}; create it (`head -c 32 /dev/urandom`, mode 0600) or set `state_key` (docs/operations.md)",
                path.display()
            ),
        )),
    }
}

#[cfg(test)]
#[path = "sealed_tests.rs"]
mod tests;

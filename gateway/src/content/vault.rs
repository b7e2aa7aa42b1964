//! PII tokens: the placeholder each redacted value becomes, and the
//! per-session vault that maps tokens back to values for rehydration.
//!
//! A token is `[pii_<type>_<10 hex>]`, the hex a keyed hash of the value
//! under a key drawn for that (sandbox, session): the same value gets the
//! same token throughout a session (so a model sees consistent references),
//! and a different one in every other session. Vaults are looked up by
//! (sandbox, session) only, so a token carried into another session or
//! sandbox is never restored there; a vault is dropped when its session or
//! sandbox is unregistered, so one registered again under the same id
//! starts empty. Tokens are ASCII letters, digits, `_`
//! and brackets, which no JSON or SSE encoder escapes.

use std::collections::HashMap;
use std::num::NonZeroUsize;
use std::sync::{Arc, Mutex};

use hmac::{Hmac, Mac};
use lru::LruCache;
use sha2::Sha256;
use zeroize::Zeroizing;

use crate::redact::Needles;

/// Sessions whose vaults are kept; the least recently used goes first.
const SESSIONS: usize = 4096;
/// Tokens kept per session. Past this, values are still redacted but the
/// newest ones are no longer restored (failing toward privacy).
const TOKENS_PER_SESSION: usize = 10_000;

/// The prefix every token starts with.
pub const TOKEN_PREFIX: &str = "[pii_";

/// All sessions' vaults.
pub struct Vaults {
    sessions: Mutex<LruCache<(String, String), Arc<Vault>>>,
}

impl Default for Vaults {
    fn default() -> Self {
        Vaults {
            sessions: Mutex::new(LruCache::new(
                NonZeroUsize::new(SESSIONS).unwrap_or(NonZeroUsize::MIN),
            )),
        }
    }
}

impl Vaults {
    /// The vault of `sandbox`'s `session` (sessionless traffic shares one).
    /// Looked up by the borrowed ids (a request that finds its vault
    /// allocates nothing); owned only when a vault is made.
    pub fn session(&self, sandbox: &str, session: Option<&str>) -> Arc<Vault> {
        let id = (sandbox, session.unwrap_or(""));
        let mut sessions = self.sessions.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(vault) = sessions.get(&id as &dyn SessionId) {
            return vault.clone();
        }
        let vault = Arc::new(Vault::new());
        sessions.put((id.0.to_owned(), id.1.to_owned()), vault.clone());
        vault
    }

    /// Drops the vault of `sandbox`'s `session`, or with `None` every
    /// vault of the sandbox: called when they are unregistered, since ids
    /// are the caller's and a session or sandbox registered again under
    /// the same id must not restore the tokens of the one before.
    pub fn forget(&self, sandbox: &str, session: Option<&str>) {
        let mut sessions = self.sessions.lock().unwrap_or_else(|e| e.into_inner());
        let gone: Vec<(String, String)> = sessions
            .iter()
            .map(|(key, _)| key)
            .filter(|(s, id)| s == sandbox && session.is_none_or(|session| session == id))
            .cloned()
            .collect();
        for key in gone {
            sessions.pop(&key);
        }
    }

    /// The vault if the session ever had anything redacted.
    pub fn existing(&self, sandbox: &str, session: Option<&str>) -> Option<Arc<Vault>> {
        let id = (sandbox, session.unwrap_or(""));
        let mut sessions = self.sessions.lock().unwrap_or_else(|e| e.into_inner());
        sessions
            .get(&id as &dyn SessionId)
            .filter(|v| !v.is_empty())
            .cloned()
    }
}

/// A vault's (sandbox, session) ids, owned as the cache's key or borrowed
/// to look one up: both hash and compare as the pair of strings.
trait SessionId {
    fn ids(&self) -> (&str, &str);
}

impl SessionId for (String, String) {
    fn ids(&self) -> (&str, &str) {
        (&self.0, &self.1)
    }
}

impl SessionId for (&str, &str) {
    fn ids(&self) -> (&str, &str) {
        (self.0, self.1)
    }
}

impl<'a> std::borrow::Borrow<dyn SessionId + 'a> for (String, String) {
    fn borrow(&self) -> &(dyn SessionId + 'a) {
        self
    }
}

// The same hash as the owned key's: a tuple of strings hashes each `str`.
impl std::hash::Hash for dyn SessionId + '_ {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.ids().hash(state);
    }
}

impl PartialEq for dyn SessionId + '_ {
    fn eq(&self, other: &Self) -> bool {
        self.ids() == other.ids()
    }
}

impl Eq for dyn SessionId + '_ {}

/// One session's tokens.
pub struct Vault {
    key: Zeroizing<[u8; 32]>,
    tokens: Mutex<HashMap<String, Entry>>,
}

struct Entry {
    value: Zeroizing<Vec<u8>>,
}

impl Vault {
    fn new() -> Vault {
        Vault {
            key: Zeroizing::new(rand::random()),
            tokens: Mutex::new(HashMap::new()),
        }
    }

    /// The token for `value` of type `kind`, remembered for rehydration.
    pub fn token(&self, kind: &str, value: &[u8]) -> String {
        let mut mac = Hmac::<Sha256>::new_from_slice(self.key.as_slice())
            .expect("HMAC takes keys of any length");
        mac.update(kind.as_bytes());
        mac.update(&[0]);
        mac.update(value);
        let digest = mac.finalize().into_bytes();
        let hex: String = digest[..5].iter().map(|b| format!("{b:02x}")).collect();
        let token = format!("{TOKEN_PREFIX}{kind}_{hex}]");
        let mut tokens = self.tokens.lock().unwrap_or_else(|e| e.into_inner());
        if tokens.len() < TOKENS_PER_SESSION || tokens.contains_key(&token) {
            tokens.entry(token.clone()).or_insert_with(|| Entry {
                value: Zeroizing::new(value.to_vec()),
            });
        }
        token
    }

    pub fn is_empty(&self) -> bool {
        self.tokens
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .is_empty()
    }

    /// Token → value needles for a response body. `json` escapes each value
    /// as it must appear inside a JSON string (the token always sits in one
    /// when the body is JSON).
    pub fn needles(&self, json: bool) -> Arc<Needles> {
        let tokens = self.tokens.lock().unwrap_or_else(|e| e.into_inner());
        let values: Vec<(&str, Zeroizing<Vec<u8>>)> = tokens
            .iter()
            .map(|(token, entry)| {
                let value = if json {
                    Zeroizing::new(json_escape(&entry.value))
                } else {
                    entry.value.clone()
                };
                (token.as_str(), value)
            })
            .collect();
        let pairs: Vec<(&[u8], &[u8])> = values
            .iter()
            .map(|(token, value)| (token.as_bytes(), value.as_slice()))
            .collect();
        Arc::new(Needles::with_replacements(&pairs))
    }
}

/// `value` as the inside of a JSON string literal (no quotes).
pub fn json_escape(value: &[u8]) -> Vec<u8> {
    let text = String::from_utf8_lossy(value);
    let quoted = serde_json::to_string(&*text).unwrap_or_default();
    quoted
        .as_bytes()
        .get(1..quoted.len().saturating_sub(1))
        .unwrap_or_default()
        .to_vec()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_are_stable_in_a_session_and_differ_across_sessions_and_sandboxes() {
        let vaults = Vaults::default();
        let a = vaults.session("sb1", Some("s1"));
        let t1 = a.token("email", b"ana@example.com");
        assert_eq!(t1, a.token("email", b"ana@example.com"));
        assert!(t1.starts_with("[pii_email_") && t1.ends_with(']') && t1.len() == 22);
        assert_ne!(t1, a.token("email", b"bob@example.com"));
        let other_session = vaults.session("sb1", Some("s2"));
        let other_sandbox = vaults.session("sb2", Some("s1"));
        assert_ne!(t1, other_session.token("email", b"ana@example.com"));
        assert_ne!(t1, other_sandbox.token("email", b"ana@example.com"));
        assert!(Arc::ptr_eq(&a, &vaults.session("sb1", Some("s1"))));
        assert!(vaults.existing("sb3", None).is_none());
    }

    /// Looked up by borrowed ids, a vault is the one of exactly that
    /// (sandbox, session): ids that join to the same text stay apart, and
    /// no session is the empty one.
    #[test]
    fn vaults_are_found_by_exactly_their_ids() {
        let vaults = Vaults::default();
        let ids: &[(&str, Option<&str>)] = &[
            ("ab", None),
            ("a", Some("b")),
            ("ab", Some("c")),
            ("a", Some("bc")),
            ("abc", None),
        ];
        let made: Vec<Arc<Vault>> = ids.iter().map(|&(sb, s)| vaults.session(sb, s)).collect();
        for (i, &(sandbox, session)) in ids.iter().enumerate() {
            for (j, vault) in made.iter().enumerate() {
                let same = Arc::ptr_eq(&vaults.session(sandbox, session), vault);
                assert_eq!(same, i == j, "{sandbox} {session:?} against {:?}", ids[j]);
            }
        }
        assert!(Arc::ptr_eq(&made[0], &vaults.session("ab", Some(""))));
        made[1].token("email", b"ana@example.com");
        assert!(vaults.existing("a", Some("b")).is_some());
        assert!(vaults.existing("ab", None).is_none());
    }

    #[test]
    fn needles_restore_values_raw_or_json_escaped() {
        let vault = Vaults::default().session("sb", None);
        let token = vault.token("generic_secret", br#"pa"ss\word"#);
        let body = format!(r#"{{"text":"it is {token}."}}"#);
        let raw = vault.needles(false).replace_all(body.as_bytes());
        assert_eq!(
            raw.as_deref(),
            Some(br#"{"text":"it is pa"ss\word."}"#.as_slice())
        );
        let json = vault.needles(true).replace_all(body.as_bytes());
        assert_eq!(
            json.as_deref(),
            Some(br#"{"text":"it is pa\"ss\\word."}"#.as_slice())
        );
        let foreign = Vaults::default().session("sb", None).needles(true);
        assert_eq!(foreign.replace_all(body.as_bytes()), None);
    }

    /// A session (or sandbox) unregistered and registered again under the
    /// same id starts with an empty vault: the tokens of the one before
    /// are never restored to it.
    #[test]
    fn a_forgotten_session_or_sandbox_restores_nothing() {
        let vaults = Vaults::default();
        let restores = |session: Option<&str>, token: &str| {
            vaults
                .existing("sb", session)
                .and_then(|v| v.needles(false).replace_all(token.as_bytes()))
                .is_some()
        };
        let in_task = vaults
            .session("sb", Some("task"))
            .token("email", b"ana@example.com");
        let in_other = vaults
            .session("sb", Some("other"))
            .token("email", b"bo@example.com");
        let bare = vaults.session("sb", None).token("email", b"cy@example.com");
        let elsewhere = vaults
            .session("sb2", Some("task"))
            .token("email", b"di@example.com");

        vaults.forget("sb", Some("task"));
        assert!(!restores(Some("task"), &in_task));
        assert!(
            restores(Some("other"), &in_other),
            "other sessions keep theirs"
        );

        vaults.forget("sb", None);
        assert!(!restores(Some("other"), &in_other));
        assert!(!restores(None, &bare));
        let kept = vaults.existing("sb2", Some("task")).expect("sb2 kept");
        assert!(
            kept.needles(false)
                .replace_all(elsewhere.as_bytes())
                .is_some()
        );
    }
}

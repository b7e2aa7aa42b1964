//! The compiled response redactor of each credential, built once per set of
//! secrets it covers (at the first request after load, a rotation or a
//! refreshed access token) instead of once per request.
//!
//! A redactor covers the value a request carried (the secret, or for
//! `oauth2` an access token), the credential's own secret and its other
//! secrets (`client_secret`, the SigV4 access key id and session token).
//! Each comes from the store or the token cache as an `Arc<Secret>`, and a
//! rotation or a refresh makes a new `Arc`: so a redactor is still current
//! when every one of its sources is the same allocation. Holding the
//! sources keeps their addresses from being reused while they are compared.
//!
//! A request whose sources changed builds the new redactor and puts it in
//! place at once, so the new secret is redacted from that request on. A
//! request in flight keeps the redactor it was given (its `Arc<Needles>`),
//! so an old secret stays redacted in the answer it was sent with.

use std::{collections::BTreeMap, sync::Arc};

use arc_swap::ArcSwapOption;

use crate::{
    credentials::{Redactions, Secret},
    redact::{Needles, REPLACEMENT},
};

/// The secrets a credential's redactor covers, by role.
#[derive(Clone, Copy)]
pub(super) struct Sources<'a> {
    /// What went upstream: the secret, or an access token.
    pub value: &'a Arc<Secret>,
    /// The credential's secret (for `oauth2`, the client or refresh secret).
    pub secret: &'a Arc<Secret>,
    pub client_secret: Option<&'a Arc<Secret>>,
    pub access_key_id: Option<&'a Arc<Secret>>,
    pub session_token: Option<&'a Arc<Secret>>,
}

impl Sources<'_> {
    fn all(&self) -> [Option<&Arc<Secret>>; 5] {
        [
            Some(self.value),
            Some(self.secret),
            self.client_secret,
            self.access_key_id,
            self.session_token,
        ]
    }
}

/// A compiled redactor and the sources it was compiled from.
struct Compiled {
    sources: [Option<Arc<Secret>>; 5],
    needles: Arc<Needles>,
}

impl Compiled {
    /// Whether `sources` are the very allocations this was built from.
    fn covers(&self, sources: &Sources<'_>) -> bool {
        self.sources
            .iter()
            .zip(sources.all())
            .all(|(kept, now)| match (kept, now) {
                (Some(kept), Some(now)) => Arc::ptr_eq(kept, now),
                (None, None) => true,
                _ => false,
            })
    }
}

/// One slot per configured credential; the set of credentials is fixed
/// for the daemon's life (only their secrets change).
pub(super) struct Redactors {
    slots: BTreeMap<String, ArcSwapOption<Compiled>>,
}

impl Redactors {
    pub fn new<'a>(credentials: impl Iterator<Item = &'a str>) -> Redactors {
        Redactors {
            slots: credentials
                .map(|name| (name.to_owned(), ArcSwapOption::empty()))
                .collect(),
        }
    }

    /// The redactor of `credential` for `sources`: the kept one while its
    /// sources are the same, else `build`'s redactions compiled and kept.
    pub fn get(
        &self,
        credential: &str,
        sources: Sources<'_>,
        build: impl FnOnce() -> Redactions,
    ) -> Arc<Needles> {
        let Some(slot) = self.slots.get(credential) else {
            return compile(&build());
        };
        if let Some(kept) = &*slot.load()
            && kept.covers(&sources)
        {
            return kept.needles.clone();
        }
        let needles = compile(&build());
        slot.store(Some(Arc::new(Compiled {
            sources: sources.all().map(|s| s.cloned()),
            needles: needles.clone(),
        })));
        needles
    }

    /// Drops `credential`'s redactor (its secret rotated): the old secret
    /// is not kept alive here until the next request.
    pub fn forget(&self, credential: &str) {
        if let Some(slot) = self.slots.get(credential) {
            slot.store(None);
        }
    }
}

fn compile(redactions: &Redactions) -> Arc<Needles> {
    let needles: Vec<&[u8]> = redactions.needles().collect();
    Arc::new(Needles::new(&needles, REPLACEMENT))
}

#[cfg(test)]
mod tests {
    use std::cell::Cell;

    use super::*;

    fn secret(s: &str) -> Arc<Secret> {
        Arc::new(Secret::from(s))
    }

    fn redacts(needles: &Needles, s: &str) -> bool {
        needles.replace_all(s.as_bytes()).is_some()
    }

    #[test]
    fn kept_while_the_sources_are_the_same_allocations() {
        let redactors = Redactors::new(["api"].into_iter());
        let (key, client) = (
            secret("sk-live-0123456789abcdef"),
            secret("client-secret-xyz"),
        );
        let builds = Cell::new(0);
        let get = |value: &Arc<Secret>, client: Option<&Arc<Secret>>| {
            let sources = Sources {
                value,
                secret: &key,
                client_secret: client,
                access_key_id: None,
                session_token: None,
            };
            redactors.get("api", sources, || {
                builds.set(builds.get() + 1);
                let mut r = Redactions::for_secret(value, None);
                r.add(&key);
                if let Some(client) = client {
                    r.add(client);
                }
                r
            })
        };
        let first = get(&key, None);
        assert!(Arc::ptr_eq(&first, &get(&key, None)), "kept");
        assert_eq!(builds.get(), 1);
        // Equal bytes in a new allocation (a rotation to the same value)
        // build again: only identity is compared, never secret bytes.
        let same_bytes = secret("sk-live-0123456789abcdef");
        get(&same_bytes, None);
        assert_eq!(builds.get(), 2);
        // A source that appears is a change too.
        let with_client = get(&key, Some(&client));
        assert_eq!(builds.get(), 3);
        assert!(redacts(&with_client, "client-secret-xyz"));
        assert!(!redacts(&first, "client-secret-xyz"));
    }

    #[test]
    fn a_refreshed_token_is_redacted_from_its_first_request() {
        let redactors = Redactors::new(["oauth"].into_iter());
        let refresh = secret("refresh-token-0123456789");
        let get = |token: &Arc<Secret>| {
            let sources = Sources {
                value: token,
                secret: &refresh,
                client_secret: None,
                access_key_id: None,
                session_token: None,
            };
            redactors.get("oauth", sources, || {
                let mut r = Redactions::for_secret(token, None);
                r.add(&refresh);
                r
            })
        };
        let old = secret("access-token-AAAAAAAAAAAA");
        let before = get(&old);
        let new = secret("access-token-BBBBBBBBBBBB");
        let after = get(&new);
        assert!(redacts(&after, "x access-token-BBBBBBBBBBBB y"));
        assert!(redacts(&after, "refresh-token-0123456789"));
        // The answer to a request sent with the old token still redacts it.
        assert!(redacts(&before, "access-token-AAAAAAAAAAAA"));
    }

    #[test]
    fn forgotten_or_unknown_credentials_are_compiled_on_demand() {
        let redactors = Redactors::new(["api"].into_iter());
        let key = secret("sk-live-0123456789abcdef");
        let sources = Sources {
            value: &key,
            secret: &key,
            client_secret: None,
            access_key_id: None,
            session_token: None,
        };
        let build = || Redactions::for_secret(&key, None);
        let kept = redactors.get("api", sources, build);
        redactors.forget("api");
        let rebuilt = redactors.get("api", sources, build);
        assert!(!Arc::ptr_eq(&kept, &rebuilt), "rebuilt after forget");
        let unknown = redactors.get("other", sources, build);
        assert!(redacts(&unknown, "sk-live-0123456789abcdef"));
    }
}

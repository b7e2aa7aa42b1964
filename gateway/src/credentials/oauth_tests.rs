use std::sync::atomic::AtomicUsize;

use super::*;
use crate::credentials::kept;
use crate::credentials::scheme_config::Source;

fn config(grant: OAuthGrant) -> OAuth2Config {
    OAuth2Config {
        grant,
        token_url: "https://auth.test:8443/oauth/token".into(),
        client_id: Some("app".into()),
        client_secret: None,
        client_auth: ClientAuth::Basic,
        scope: None,
        audience: None,
    }
}

#[test]
fn compile_table() {
    type Mutate = fn(&mut OAuth2Config);
    let cases: &[(&str, Mutate, Option<&str>)] = &[
        ("ok", |_| {}, None),
        (
            "plain http",
            |c| c.token_url = "http://auth.test/t".into(),
            Some("must be https"),
        ),
        ("no host", |c| c.token_url = "/t".into(), Some("https")),
        (
            "userinfo",
            |c| c.token_url = "https://u:p@auth.test/t".into(),
            Some("not a URL"),
        ),
        (
            "client credentials without id",
            |c| c.client_id = None,
            Some("needs `client_id`"),
        ),
        (
            "client credentials with client_secret",
            |c| c.client_secret = Some(Source::Env { var: "X".into() }),
            Some("drop `client_secret`"),
        ),
        (
            "id with colon",
            |c| c.client_id = Some("a:b".into()),
            Some("`client_id`"),
        ),
    ];
    for (what, mutate, want) in cases {
        let mut c = config(OAuthGrant::ClientCredentials);
        mutate(&mut c);
        match (OAuth2Scheme::compile(&c), want) {
            (Ok(_), None) => {}
            (Err(e), Some(want)) => assert!(e.to_string().contains(want), "{what}: {e}"),
            (got, want) => panic!("{what}: {got:?}, wanted {want:?}"),
        }
    }
    let mut refresh = config(OAuthGrant::RefreshToken);
    refresh.client_id = None;
    OAuth2Scheme::compile(&refresh).expect("a public client needs no id");
    refresh.client_secret = Some(Source::Env { var: "X".into() });
    assert!(
        OAuth2Scheme::compile(&refresh).is_err(),
        "secret without id"
    );

    let s = OAuth2Scheme::compile(&config(OAuthGrant::ClientCredentials)).expect("compiles");
    assert_eq!(
        s.token_url,
        TokenUrl {
            host: "auth.test".into(),
            port: 8443,
            path: "/oauth/token".into()
        }
    );
}

fn text(b: &[u8]) -> String {
    String::from_utf8(b.to_vec()).expect("utf8")
}

#[test]
fn token_request_table() {
    let secret = Secret::from("s3cr et/+");
    let client_secret = Secret::from("cs");
    let basic = |pair: &str| format!("Basic {}", STANDARD.encode(pair));
    type Case = (
        &'static str,
        OAuthGrant,
        ClientAuth,
        Option<&'static str>,
        bool,
        &'static str,
        Option<String>,
    );
    let cases: Vec<Case> = vec![
        (
            "client credentials, basic (form-encoded pair)",
            OAuthGrant::ClientCredentials,
            ClientAuth::Basic,
            Some("app"),
            false,
            "grant_type=client_credentials&scope=a%20b",
            Some(basic("app:s3cr%20et%2F%2B")),
        ),
        (
            "client credentials, body",
            OAuthGrant::ClientCredentials,
            ClientAuth::Body,
            Some("app"),
            false,
            "grant_type=client_credentials&scope=a%20b&client_id=app&client_secret=s3cr%20et%2F%2B",
            None,
        ),
        (
            "refresh, public client",
            OAuthGrant::RefreshToken,
            ClientAuth::Basic,
            Some("app"),
            false,
            "grant_type=refresh_token&refresh_token=s3cr%20et%2F%2B&scope=a%20b&client_id=app",
            None,
        ),
        (
            "refresh, confidential client, basic",
            OAuthGrant::RefreshToken,
            ClientAuth::Basic,
            Some("app"),
            true,
            "grant_type=refresh_token&refresh_token=s3cr%20et%2F%2B&scope=a%20b",
            Some(basic("app:cs")),
        ),
        (
            "refresh, no client at all",
            OAuthGrant::RefreshToken,
            ClientAuth::Body,
            None,
            false,
            "grant_type=refresh_token&refresh_token=s3cr%20et%2F%2B&scope=a%20b",
            None,
        ),
    ];
    for (what, grant, auth, id, with_secret, body, authorization) in cases {
        let mut c = config(grant);
        c.client_id = id.map(str::to_owned);
        c.client_auth = auth;
        c.scope = Some("a b".into());
        let s = OAuth2Scheme::compile(&c).expect(what);
        let (got, header) = s.token_request(&secret, with_secret.then_some(&client_secret));
        assert_eq!(text(&got), body, "{what}");
        assert_eq!(header.map(|h| text(h.as_bytes())), authorization, "{what}");
    }
}

#[test]
fn parse_response_table() {
    let ok = |body: &str| parse_response(200, body.as_bytes());
    let t = ok(r#"{"access_token":"tok","token_type":"Bearer","expires_in":120}"#).expect("ok");
    assert_eq!(t.access.expose(), b"tok");
    assert_eq!(t.lifetime, Duration::from_secs(120));
    assert!(t.refresh.is_none());
    let t = ok(r#"{"access_token":"tok","expires_in":"60","refresh_token":"r2"}"#).expect("ok");
    assert_eq!(t.lifetime, Duration::from_secs(60));
    assert_eq!(t.refresh.expect("rotated").expose(), b"r2");
    let t = ok(r#"{"access_token":"tok"}"#).expect("ok");
    assert_eq!(t.lifetime, DEFAULT_LIFETIME);

    let errors: &[(u16, &str, TokenError)] = &[
        (
            401,
            r#"{"error":"invalid_client"}"#,
            TokenError::Status(401),
        ),
        (500, "", TokenError::Status(500)),
        (200, "not json", TokenError::BadJson),
        (200, r#"{"token":"x"}"#, TokenError::BadJson),
        (200, r#"{"access_token":""}"#, TokenError::BadToken),
        (200, r#"{"access_token":"a\nb"}"#, TokenError::BadToken),
        (
            200,
            r#"{"access_token":"a","token_type":"mac"}"#,
            TokenError::NotBearer("mac".into()),
        ),
    ];
    for (status, body, want) in errors {
        let got = parse_response(*status, body.as_bytes()).expect_err(body);
        assert_eq!(&got, want, "{body}");
        // Never the endpoint's words: it may have echoed a secret.
        assert!(!got.to_string().contains("invalid_client"));
    }
    assert!(!format!("{:?}", ok(r#"{"access_token":"tok"}"#)).contains("tok"));
}

#[test]
fn skew_table() {
    let cases = [
        (0, 0),
        (2, 2),
        (60, 45),
        (120, 90),
        (3600, 3570),
        (86_400, 86_370),
        (u64::MAX, 86_370),
    ];
    for (lifetime, want) in cases {
        let got = usable_for(Duration::from_secs(lifetime));
        // A quarter of 2 s is 0.5 s: compare in milliseconds.
        let want_ms = if lifetime == 2 { 1500 } else { want * 1000 };
        assert_eq!(got.as_millis(), want_ms, "{lifetime}");
    }
}

fn token(value: &str, seconds: u64) -> Token {
    Token {
        access: Arc::new(Secret::from(value)),
        lifetime: Duration::from_secs(seconds),
        refresh: None,
    }
}

#[tokio::test(start_paused = true)]
async fn concurrent_requests_fetch_once_and_expiry_refetches_once() {
    let cache = Arc::new(TokenCache::new(OAuthGrant::RefreshToken));
    let source = Arc::new(Secret::from("source"));
    let fetches = Arc::new(AtomicUsize::new(0));
    let get = |cache: Arc<TokenCache>, fetches: Arc<AtomicUsize>, source: Arc<Secret>| async move {
        cache
            .get(&source, move |_| async move {
                let n = fetches.fetch_add(1, Ordering::SeqCst) + 1;
                // A slow endpoint, so the others really are waiting.
                tokio::time::sleep(Duration::from_millis(50)).await;
                Ok(token(&format!("t{n}"), 60))
            })
            .await
    };
    let many = |n| {
        let handles: Vec<_> = (0..n)
            .map(|_| tokio::spawn(get(cache.clone(), fetches.clone(), source.clone())))
            .collect();
        async move {
            let mut out = Vec::new();
            for h in handles {
                out.push(h.await.expect("task").expect("token"));
            }
            out
        }
    };
    let got = many(50).await;
    assert_eq!(fetches.load(Ordering::SeqCst), 1);
    assert!(got.iter().all(|t| t.expose() == b"t1"));

    tokio::time::advance(Duration::from_secs(44)).await;
    many(10).await;
    assert_eq!(fetches.load(Ordering::SeqCst), 1, "still fresh");

    tokio::time::advance(Duration::from_secs(2)).await;
    let got = many(50).await;
    assert_eq!(fetches.load(Ordering::SeqCst), 2, "expired: one refresh");
    assert!(got.iter().all(|t| t.expose() == b"t2"));
}

#[tokio::test(start_paused = true)]
async fn a_failure_is_shared_by_the_waiters_then_retried() {
    let cache = Arc::new(TokenCache::new(OAuthGrant::RefreshToken));
    let source = Arc::new(Secret::from("source"));
    let fetches = Arc::new(AtomicUsize::new(0));
    let handles: Vec<_> = (0..20)
        .map(|_| {
            let (cache, fetches, source) = (cache.clone(), fetches.clone(), source.clone());
            tokio::spawn(async move {
                cache
                    .get(&source, move |_| async move {
                        fetches.fetch_add(1, Ordering::SeqCst);
                        tokio::time::sleep(Duration::from_millis(50)).await;
                        Err(TokenError::Status(503))
                    })
                    .await
            })
        })
        .collect();
    for h in handles {
        assert_eq!(h.await.expect("task").err(), Some(TokenError::Status(503)));
    }
    assert_eq!(fetches.load(Ordering::SeqCst), 1);
    // A later request tries again.
    let got = cache
        .get(&source, |_| async { Ok(token("fresh", 60)) })
        .await
        .expect("recovered");
    assert_eq!(got.expose(), b"fresh");
}

#[tokio::test(start_paused = true)]
async fn a_rotated_refresh_token_is_used_until_the_source_changes() {
    let cache = TokenCache::new(OAuthGrant::RefreshToken);
    let source = Arc::new(Secret::from("r1"));
    let rotated = |_: Arc<Secret>| async {
        Ok(Token {
            access: Arc::new(Secret::from("a")),
            lifetime: Duration::from_secs(1),
            refresh: Some(Arc::new(Secret::from("r2"))),
        })
    };
    cache.get(&source, rotated).await.expect("first");
    tokio::time::advance(Duration::from_secs(2)).await;
    let used = Arc::new(Mutex::new(Vec::new()));
    let record = |used: &Arc<Mutex<Vec<String>>>| {
        let used = used.clone();
        move |r: Arc<Secret>| {
            used.lock().expect("lock").push(text(r.expose()));
            async { Ok(token("b", 1)) }
        }
    };
    cache.get(&source, record(&used)).await.expect("second");
    tokio::time::advance(Duration::from_secs(2)).await;
    let new_source = Arc::new(Secret::from("r3"));
    cache.get(&new_source, record(&used)).await.expect("third");
    assert_eq!(*used.lock().expect("lock"), ["r2", "r3"]);
}

#[tokio::test(start_paused = true)]
async fn client_credentials_never_send_a_refresh_token_as_the_client_secret() {
    // An endpoint may hand out a refresh token on any grant; only the
    // refresh grant has a use for it.
    let cache = TokenCache::new(OAuthGrant::ClientCredentials);
    let source = Arc::new(Secret::from("client-secret"));
    let with_refresh = |_: Arc<Secret>| async {
        Ok(Token {
            access: Arc::new(Secret::from("a")),
            lifetime: Duration::from_secs(1),
            refresh: Some(Arc::new(Secret::from("r2"))),
        })
    };
    cache.get(&source, with_refresh).await.expect("first");
    tokio::time::advance(Duration::from_secs(2)).await;
    let used = Arc::new(Mutex::new(Vec::new()));
    let record = |used: &Arc<Mutex<Vec<String>>>| {
        let used = used.clone();
        move |r: Arc<Secret>| {
            used.lock().expect("lock").push(text(r.expose()));
            async { Ok(token("b", 1)) }
        }
    };
    cache.get(&source, record(&used)).await.expect("second");
    assert_eq!(*used.lock().expect("lock"), ["client-secret"]);
}

#[tokio::test(start_paused = true)]
async fn a_huge_lifetime_is_capped_not_a_panic() {
    // 2^63 + 1 seconds: `Instant + Duration` of that overflows and panics.
    let body = br#"{"access_token":"tok","expires_in":9223372036854775809}"#;
    let t = parse_response(200, body).expect("ok");
    assert_eq!(t.lifetime, Duration::from_secs(24 * 3600));

    // The cache caps what it is handed too (a token built elsewhere).
    let cache = TokenCache::new(OAuthGrant::ClientCredentials);
    let source = Arc::new(Secret::from("s"));
    let huge = |_| async {
        Ok(Token {
            access: Arc::new(Secret::from("a")),
            lifetime: Duration::MAX,
            refresh: None,
        })
    };
    cache.get(&source, huge).await.expect("cached");
    tokio::time::advance(Duration::from_secs(24 * 3600)).await;
    let again = cache.get(&source, |_| async { Ok(token("b", 60)) }).await;
    assert_eq!(again.expect("refetched").expose(), b"b", "a day at most");
}

#[test]
fn a_token_url_is_shown_without_its_query_or_userinfo() {
    let mut c = config(OAuthGrant::ClientCredentials);
    c.token_url = "https://auth.test/t?api_key=hunter2".into();
    let url = OAuth2Scheme::compile(&c).expect("compiles").token_url;
    assert_eq!(url.path, "/t?api_key=hunter2", "sent as configured");
    assert_eq!(url.to_string(), "https://auth.test:443/t");

    // Config errors quote the URL too.
    for bad in [
        "https://u:hunter2@auth.test/t",
        "http://auth.test/t?api_key=hunter2",
        "http://u:hunter2@auth.test/t",
    ] {
        c.token_url = bad.into();
        let err = OAuth2Scheme::compile(&c).expect_err(bad).to_string();
        assert!(!err.contains("hunter2"), "{err}");
        assert!(err.contains("auth.test/t"), "{err}");
    }
}

#[tokio::test(start_paused = true)]
async fn a_rejected_token_is_dropped_once_and_not_while_fresh() {
    let cache = TokenCache::new(OAuthGrant::ClientCredentials);
    let source = Arc::new(Secret::from("s"));
    let fetches = Arc::new(AtomicUsize::new(0));
    let get = || {
        let fetches = fetches.clone();
        cache.get(&source, move |_| {
            let n = fetches.fetch_add(1, Ordering::SeqCst) + 1;
            async move { Ok(token(&format!("t{n}"), 3600)) }
        })
    };
    let t1 = get().await.expect("t1");

    // Rejected right after its fetch: kept, or a sandbox asking for a URL
    // that always answers 401 would have Sluice ask the endpoint each time.
    cache.rejected(&t1);
    assert_eq!(get().await.expect("kept").expose(), b"t1");

    tokio::time::advance(REJECTED_GRACE).await;
    cache.rejected(&t1);
    let t2 = get().await.expect("t2");
    assert_eq!(t2.expose(), b"t2", "dropped, fetched anew");

    // A late 401 for the old token leaves the new one alone.
    tokio::time::advance(REJECTED_GRACE).await;
    cache.rejected(&t1);
    assert_eq!(get().await.expect("t2 kept").expose(), b"t2");
    assert_eq!(fetches.load(Ordering::SeqCst), 2);
}

/// The request whose fetch reached the endpoint may go away mid-exchange
/// (its client left). The endpoint has then rotated the refresh token: its
/// answer must still land, or the next fetch sends the token it replaced.
#[tokio::test(start_paused = true)]
async fn a_fetch_whose_request_goes_away_still_keeps_the_rotated_token() {
    let cache = TokenCache::new(OAuthGrant::RefreshToken);
    let source = Arc::new(Secret::from("r1"));
    let (started, at_endpoint) = tokio::sync::oneshot::channel();
    let (answer, answered) = tokio::sync::oneshot::channel::<()>();
    let first = cache.get(&source, move |_| async move {
        let _ = started.send(());
        let _ = answered.await;
        Ok(Token {
            access: Arc::new(Secret::from("a1")),
            lifetime: Duration::ZERO,
            refresh: Some(Arc::new(Secret::from("r2"))),
        })
    });
    tokio::select! {
        _ = first => panic!("answered before the endpoint did"),
        _ = at_endpoint => {}
    }
    // The request is gone; the endpoint answers all the same.
    let _ = answer.send(());

    let used = Arc::new(Mutex::new(Vec::new()));
    let seen = used.clone();
    let second = cache.get(&source, move |r: Arc<Secret>| async move {
        seen.lock().expect("lock").push(text(r.expose()));
        Ok(token("a2", 60))
    });
    assert_eq!(second.await.expect("second").expose(), b"a2");
    assert_eq!(*used.lock().expect("lock"), ["r2"]);
}

/// What was handed on to be kept: the token and its source's digest.
type Saved = Arc<Mutex<Vec<(String, [u8; 32])>>>;

/// Keeps in memory what the daemon keeps in `state_dir`.
struct FakeKeep {
    kept: Option<(Arc<Secret>, [u8; 32])>,
    saved: Saved,
}

impl Keep for FakeKeep {
    fn kept(&self) -> Option<(Arc<Secret>, [u8; 32])> {
        self.kept.clone()
    }

    fn keep(&self, rotated: &Secret, source: [u8; 32]) {
        let entry = (text(rotated.expose()), source);
        self.saved.lock().expect("lock").push(entry);
    }
}

/// A restart starts from the refresh token the last run rotated to, while
/// the source file still holds the one it descends from; every rotation is
/// handed on to be kept. A new source wins.
#[tokio::test(start_paused = true)]
async fn a_kept_rotated_token_is_used_after_a_restart_until_the_source_changes() {
    let source = Arc::new(Secret::from("r1"));
    let saved = Saved::default();
    let keep = FakeKeep {
        kept: Some((Arc::new(Secret::from("r2")), kept::digest(&source))),
        saved: saved.clone(),
    };
    let cache = TokenCache::keeping(OAuthGrant::RefreshToken, Box::new(keep));
    let used = Arc::new(Mutex::new(Vec::new()));
    let rotating = |used: &Arc<Mutex<Vec<String>>>, next: &'static str| {
        let used = used.clone();
        move |r: Arc<Secret>| async move {
            used.lock().expect("lock").push(text(r.expose()));
            Ok(Token {
                access: Arc::new(Secret::from("a")),
                lifetime: Duration::from_secs(1),
                refresh: Some(Arc::new(Secret::from(next))),
            })
        }
    };
    cache
        .get(&source, rotating(&used, "r3"))
        .await
        .expect("first");
    tokio::time::advance(Duration::from_secs(2)).await;
    // The file was rewritten with the same token: still the same lineage.
    let same = Arc::new(Secret::from("r1"));
    cache
        .get(&same, rotating(&used, "r4"))
        .await
        .expect("second");
    tokio::time::advance(Duration::from_secs(2)).await;
    let new_source = Arc::new(Secret::from("n1"));
    cache
        .get(&new_source, rotating(&used, "n2"))
        .await
        .expect("third");

    assert_eq!(*used.lock().expect("lock"), ["r2", "r3", "n1"]);
    let r1 = kept::digest(&source);
    let n1 = kept::digest(&new_source);
    assert_eq!(
        *saved.lock().expect("lock"),
        [
            ("r3".to_owned(), r1),
            ("r4".to_owned(), r1),
            ("n2".to_owned(), n1)
        ]
    );

    // client_credentials never keeps nor uses one.
    let keep = FakeKeep {
        kept: Some((Arc::new(Secret::from("r2")), kept::digest(&source))),
        saved: saved.clone(),
    };
    let cache = TokenCache::keeping(OAuthGrant::ClientCredentials, Box::new(keep));
    let used = Arc::new(Mutex::new(Vec::new()));
    cache.get(&source, rotating(&used, "x")).await.expect("cc");
    assert_eq!(*used.lock().expect("lock"), ["r1"]);
    assert_eq!(saved.lock().expect("lock").len(), 3);
}

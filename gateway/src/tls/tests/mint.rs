//! `mint.rs`: leaves that verify, single-flight, the cache and renewal.

use super::*;

#[tokio::test]
async fn leaves_pass_a_real_handshake() {
    let ca = test_ca();
    let (minter, minted) = minter(&ca, 8);
    let client = client_trusting(&[ca.cert_der()], &[b"h2", b"http/1.1"]);
    // name minted, name the client connects to, whether it must verify.
    let cases = [
        ("example.test", "example.test", true),
        ("Mixed.Case.TEST.", "mixed.case.test", true),
        ("10.1.2.3", "10.1.2.3", true),
        ("2001:db8::1", "2001:db8::1", true),
        ("example.test", "other.test", false),
        ("10.1.2.3", "10.1.2.4", false),
    ];
    for (minted_for, connect_to, ok) in cases {
        let leaf = minter.leaf(minted_for).await.expect("leaf");
        let result = handshake(client.clone(), minter.server_config(leaf), connect_to);
        match result {
            Ok((client, _)) => {
                assert!(ok, "{minted_for} served for {connect_to}");
                assert_eq!(client.alpn_protocol(), Some(&b"h2"[..]));
            }
            Err(err) => {
                assert!(!ok, "{minted_for} for {connect_to}: {err}");
                assert!(
                    matches!(
                        err,
                        rustls::Error::InvalidCertificate(
                            CertificateError::NotValidForName
                                | CertificateError::NotValidForNameContext { .. }
                        )
                    ),
                    "{minted_for} for {connect_to}: {err:?}"
                );
            }
        }
    }
    // Four names; "Mixed.Case.TEST." and the repeats reused their leaves.
    assert_eq!(minted.get(), 4);
}

#[tokio::test]
async fn leaves_verify_with_webpki_within_their_validity_only() {
    let ca = test_ca();
    let (minter, _) = minter(&ca, 8);
    let leaf = minter.leaf("example.test").await.expect("leaf");
    assert_eq!(leaf.cert.len(), 2, "chain is [leaf, CA]");
    assert_eq!(&leaf.cert[1], ca.cert_der());

    let verifier = WebPkiServerVerifier::builder_with_provider(roots(&[ca.cert_der()]), provider())
        .build()
        .expect("verifier");
    let now = SystemTime::now();
    // when, name, expected outcome (None = verifies).
    let cases: [(SystemTime, &str, Option<&str>); 5] = [
        (now, "example.test", None),
        (now - HOUR / 2, "example.test", None),
        (now - 2 * HOUR, "example.test", Some("not valid yet")),
        (now + DAY + HOUR, "example.test", Some("expired")),
        (now, "other.test", Some("name")),
    ];
    for (when, name, want) in cases {
        let at =
            UnixTime::since_unix_epoch(when.duration_since(SystemTime::UNIX_EPOCH).expect("epoch"));
        let got = verifier.verify_server_cert(
            &leaf.cert[0],
            &leaf.cert[1..],
            &server_name(name),
            &[],
            at,
        );
        match (got, want) {
            (Ok(_), None) => {}
            (Err(rustls::Error::InvalidCertificate(err)), Some(want)) => {
                let text = format!("{err:?}").to_lowercase().replace('_', " ");
                let matched = match want {
                    "not valid yet" => matches!(
                        err,
                        CertificateError::NotValidYet | CertificateError::NotValidYetContext { .. }
                    ),
                    "expired" => matches!(
                        err,
                        CertificateError::Expired | CertificateError::ExpiredContext { .. }
                    ),
                    _ => matches!(
                        err,
                        CertificateError::NotValidForName
                            | CertificateError::NotValidForNameContext { .. }
                    ),
                };
                assert!(matched, "{name}: want {want}, got {text}");
            }
            (got, want) => panic!("{name}: want {want:?}, got {got:?}"),
        }
    }
}

#[tokio::test]
async fn invalid_names_are_refused() {
    let ca = test_ca();
    let (minter, minted) = minter(&ca, 8);
    let long_label = format!("{}.test", "a".repeat(64));
    let long_name = format!("{}test", "abcdefghi.".repeat(25));
    let cases = [
        "",
        ".",
        "*.example.test",
        "a..b",
        "exa mple.test",
        "example.test/path",
        "example.test:443",
        "-",
        "1.2.3",
        "[::1]",
        "bücher.test",
        "nul\0.test",
        long_label.as_str(),
        long_name.as_str(),
    ];
    for name in cases {
        let err = minter.leaf(name).await.expect_err(name);
        assert!(matches!(err, MintError::InvalidName(_)), "{name:?}: {err}");
    }
    assert_eq!(minted.get(), 0);
    assert_eq!(minter.cached(), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_requests_for_one_name_mint_once() {
    let ca = test_ca();
    let (minter, minted) = minter(&ca, 8);
    let minter = Arc::new(minter);
    let tasks: Vec<_> = (0..100)
        .map(|_| {
            let minter = minter.clone();
            tokio::spawn(async move { minter.leaf("same.test").await })
        })
        .collect();
    let mut leaves = Vec::new();
    for task in tasks {
        leaves.push(task.await.expect("task").expect("leaf"));
    }
    assert_eq!(minted.get(), 1);
    assert!(leaves.iter().all(|leaf| Arc::ptr_eq(leaf, &leaves[0])));
    assert_eq!(minter.cached(), 1);
}

#[tokio::test]
async fn the_cache_evicts_the_least_recently_used_name() {
    let ca = test_ca();
    let (minter, minted) = minter(&ca, 2);
    // Each step: name asked for, whether it must be freshly minted.
    let steps = [
        ("a.test", true),
        ("b.test", true),
        ("a.test", false),
        ("c.test", true),  // evicts b, the least recently used
        ("a.test", false), // a survived
        ("b.test", true),  // b was evicted; evicts c
        ("c.test", true),
    ];
    for (i, (name, fresh)) in steps.into_iter().enumerate() {
        let before = minted.get();
        minter.leaf(name).await.expect("leaf");
        assert_eq!(minted.get() - before, u64::from(fresh), "step {i}: {name}");
        assert!(minter.cached() <= 2);
    }
}

/// A sandbox mints at most its budget of names new to the cache (twice the
/// rate at once); cached names cost nothing, and other sandboxes keep
/// their own budgets.
#[tokio::test]
async fn each_sandbox_mints_new_names_within_its_budget() {
    let ca = test_ca();
    let (minter, minted) = minter(&ca, 64);
    let minter = minter.with_mint_rate(2);
    let (flooding, other): (Arc<str>, Arc<str>) = (Arc::from("sb1"), Arc::from("sb2"));
    let mut refused = 0;
    for i in 0..10 {
        match minter
            .leaf_for(&flooding, &format!("n{i}.example.test"))
            .await
        {
            Ok(_) => {}
            Err(MintError::RateLimited) => refused += 1,
            Err(err) => panic!("{err}"),
        }
    }
    // Four at once (two seconds' worth); the test takes far less than the
    // half second a fifth would need.
    assert_eq!((minted.get(), refused), (4, 6));
    // A name already minted is served without a mint.
    minter
        .leaf_for(&flooding, "n0.example.test")
        .await
        .expect("cached");
    // Another sandbox, and the daemon's own callers, are not charged.
    minter
        .leaf_for(&other, "o.example.test")
        .await
        .expect("own budget");
    minter.leaf("x.example.test").await.expect("uncharged");
    assert_eq!(minted.get(), 6);
}

#[tokio::test]
async fn zero_capacity_still_works() {
    let ca = test_ca();
    let (minter, _) = minter(&ca, 0);
    minter.leaf("a.test").await.expect("leaf");
    assert_eq!(minter.cached(), 1);
}

#[tokio::test]
async fn leaves_are_reminted_in_their_last_quarter() {
    let ca = test_ca();
    let minted = counter();
    let offset = Arc::new(AtomicU64::new(0));
    let start = SystemTime::now();
    let clock = {
        let offset = offset.clone();
        move || start + Duration::from_secs(offset.load(Ordering::SeqCst))
    };
    let minter = Minter::new(ca, 8, Duration::from_secs(100), minted.clone()).with_clock(clock);

    let first = minter.leaf("age.test").await.expect("leaf");
    // Seconds since the first leaf, and whether a new leaf is due.
    let cases = [(10, false), (74, false), (76, true)];
    for (secs, new) in cases {
        offset.store(secs, Ordering::SeqCst);
        let leaf = minter.leaf("age.test").await.expect("leaf");
        assert_eq!(!Arc::ptr_eq(&leaf, &first), new, "after {secs}s");
    }
    assert_eq!(minted.get(), 2);
}

#[tokio::test]
async fn server_config_offers_both_versions_and_alpn() {
    let ca = test_ca();
    let (minter, _) = minter(&ca, 8);
    let leaf = minter.leaf("v.test").await.expect("leaf");
    let server = minter.server_config(leaf);
    assert_eq!(
        server.alpn_protocols,
        [b"h2".to_vec(), b"http/1.1".to_vec()]
    );

    // Client version, client ALPN, expected version, expected ALPN.
    type Case = (
        &'static rustls::SupportedProtocolVersion,
        &'static [&'static [u8]],
        ProtocolVersion,
        Option<&'static [u8]>,
    );
    let cases: [Case; 4] = [
        (
            &rustls::version::TLS13,
            &[b"h2", b"http/1.1"],
            ProtocolVersion::TLSv1_3,
            Some(b"h2"),
        ),
        (
            &rustls::version::TLS12,
            &[b"http/1.1"],
            ProtocolVersion::TLSv1_2,
            Some(b"http/1.1"),
        ),
        (
            &rustls::version::TLS12,
            &[b"h2"],
            ProtocolVersion::TLSv1_2,
            Some(b"h2"),
        ),
        (&rustls::version::TLS13, &[], ProtocolVersion::TLSv1_3, None),
    ];
    for (version, alpn, want_version, want_alpn) in cases {
        let mut client = ClientConfig::builder_with_provider(provider())
            .with_protocol_versions(&[version])
            .expect("versions")
            .with_root_certificates(roots(&[ca.cert_der()]))
            .with_no_client_auth();
        client.alpn_protocols = alpn.iter().map(|p| p.to_vec()).collect();
        let (client, _) = handshake(Arc::new(client), server.clone(), "v.test").expect("handshake");
        assert_eq!(client.protocol_version(), Some(want_version));
        assert_eq!(client.alpn_protocol(), want_alpn);
    }
}

/// Bounds what inline minting costs the runtime (see mint.rs's module docs).
/// Debug builds of ring are far slower than release, hence the loose bound.
#[tokio::test]
async fn mint_cost_is_small() {
    let ca = test_ca();
    let (minter, _) = minter(&ca, 256);
    const N: u32 = 200;
    let start = Instant::now();
    for i in 0..N {
        minter.leaf(&format!("n{i}.test")).await.expect("leaf");
    }
    let each = start.elapsed() / N;
    eprintln!("minting one leaf took {each:?}");
    assert!(each < Duration::from_millis(20), "{each:?} per leaf");
}

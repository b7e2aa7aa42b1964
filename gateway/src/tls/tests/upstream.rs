//! `upstream.rs`: roots and describing failed handshakes.

use super::*;

/// Runs a tokio-rustls handshake over a pipe and returns the client's and
/// the server's outcome, as a proxy would see them.
async fn tokio_handshake(
    client: Arc<ClientConfig>,
    server: Arc<ServerConfig>,
    name: &str,
) -> (std::io::Result<()>, std::io::Result<()>) {
    let (client_io, server_io) = tokio::io::duplex(64 * 1024);
    let connect = tokio_rustls::TlsConnector::from(client).connect(server_name(name), client_io);
    let accept = tokio_rustls::TlsAcceptor::from(server).accept(server_io);
    // Both streams stay open until both sides finish: a TLS 1.3 server
    // writes its session tickets after the client considers itself done.
    let (client, server) = tokio::time::timeout(Duration::from_secs(10), async {
        tokio::join!(connect, accept)
    })
    .await
    .expect("handshake finished");
    (client.map(drop), server.map(drop))
}

#[tokio::test]
async fn describe_maps_real_handshake_failures() {
    let ca = test_ca();
    // Another Sluice CA would share the subject name, and a same-named
    // anchor fails on its signature instead (bad_certificate).
    let unrelated = CertificateParams::default()
        .self_signed(&KeyPair::generate().expect("key"))
        .expect("unrelated CA")
        .der()
        .clone();
    let (minter, _) = minter(&ca, 8);
    let leaf = minter.leaf("up.test").await.expect("leaf");
    let server = minter.server_config(leaf);

    // An upstream whose leaf expired an hour ago.
    let past = SystemTime::now() - 3 * HOUR;
    let stale = Minter::new(ca.clone(), 8, HOUR, counter()).with_clock(move || past);
    let old = stale.server_config(stale.leaf("up.test").await.expect("old leaf"));

    // server, CA the client trusts, name it asks for, client label, server label.
    let cases = [
        (
            &server,
            &unrelated,
            "up.test",
            "untrusted_certificate",
            "tls_error",
        ),
        (
            &server,
            ca.cert_der(),
            "other.test",
            "certificate_name_mismatch",
            "tls_error",
        ),
        (
            &old,
            ca.cert_der(),
            "up.test",
            "certificate_expired",
            "tls_error",
        ),
    ];
    for (server, trusted, name, client_label, server_label) in cases {
        let client = client_trusting(&[trusted], &[]);
        let (client_result, server_result) = tokio_handshake(client, server.clone(), name).await;
        let client_err = client_result.expect_err("client must fail");
        let (label, text) = crate::tls::describe(&client_err, name);
        assert_eq!(label, client_label, "{name}: {text}");
        if label == "certificate_name_mismatch" {
            assert!(
                text.contains("other.test") && text.contains("up.test"),
                "{text}"
            );
        }
        let server_err = server_result.expect_err("server must fail");
        assert_eq!(
            crate::tls::describe(&server_err, name).0,
            server_label,
            "{server_err}"
        );
    }

    let ok = client_trusting(&[ca.cert_der()], &[]);
    let (client_result, server_result) = tokio_handshake(ok, server, "up.test").await;
    client_result.expect("trusted handshake");
    server_result.expect("trusted handshake");
}

#[test]
fn describe_table() {
    use std::io::{Error, ErrorKind};
    let tls = |err: rustls::Error| Error::new(ErrorKind::InvalidData, err);
    let bad = |err: CertificateError| tls(rustls::Error::InvalidCertificate(err));
    let cases = [
        (
            bad(CertificateError::UnknownIssuer),
            "untrusted_certificate",
            "not signed by a trusted CA",
        ),
        (
            bad(CertificateError::NotValidForName),
            "certificate_name_mismatch",
            "not valid for api.test",
        ),
        (
            bad(CertificateError::Expired),
            "certificate_expired",
            "expired",
        ),
        (
            bad(CertificateError::NotValidYet),
            "certificate_expired",
            "not valid yet",
        ),
        (
            bad(CertificateError::BadSignature),
            "bad_certificate",
            "rejected",
        ),
        (
            bad(CertificateError::Revoked),
            "bad_certificate",
            "rejected",
        ),
        (
            tls(rustls::Error::AlertReceived(
                rustls::AlertDescription::HandshakeFailure,
            )),
            "tls_error",
            "HandshakeFailure",
        ),
        (tls(rustls::Error::DecryptError), "tls_error", "handshake"),
        // Wrapped again, as another layer might.
        (
            Error::other(bad(CertificateError::UnknownIssuer)),
            "untrusted_certificate",
            "trusted CA",
        ),
        (
            Error::from(ErrorKind::ConnectionRefused),
            "connect_failed",
            "refused",
        ),
        (
            Error::new(ErrorKind::TimedOut, "connect timed out"),
            "connect_failed",
            "timed out",
        ),
    ];
    for (err, want_label, want_text) in cases {
        let (label, text) = crate::tls::describe(&err, "api.test");
        assert_eq!(label, want_label, "{err}");
        assert!(text.contains(want_text), "{err}: {text}");
    }
}

#[tokio::test]
async fn client_config_trusts_extra_files() {
    let ca = test_ca();
    let tmp = tempfile::tempdir().expect("tempdir");
    let bundle = tmp.path().join("bundle.pem");
    let other = test_ca();
    fs::write(&bundle, format!("{}{}", other.cert_pem(), ca.cert_pem())).expect("write");

    let alpn = vec![b"http/1.1".to_vec()];
    let client = crate::tls::client_config(false, std::slice::from_ref(&bundle), alpn.clone())
        .expect("client config");
    assert_eq!(client.alpn_protocols, alpn);

    let (minter, _) = minter(&ca, 8);
    let leaf: Arc<CertifiedKey> = minter.leaf("up.test").await.expect("leaf");
    let (client, _) = handshake(client, minter.server_config(leaf), "up.test").expect("handshake");
    assert_eq!(client.alpn_protocol(), Some(&b"http/1.1"[..]));
}

#[test]
fn client_config_reports_bad_inputs() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let write = |name: &str, text: &str| {
        let path = tmp.path().join(name);
        fs::write(&path, text).expect("write");
        path
    };
    let empty = write("empty.pem", "");
    let prose = write("prose.pem", "not a certificate\n");
    let junk = write(
        "junk.pem",
        "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n",
    );
    let broken = write("broken.pem", "-----BEGIN CERTIFICATE-----\nAAAA\n");
    let missing = tmp.path().join("missing.pem");

    type Check = fn(&UpstreamTlsError) -> bool;
    let cases: [(&[std::path::PathBuf], Check); 6] = [
        (&[], |e| matches!(e, UpstreamTlsError::NoRoots)),
        (std::slice::from_ref(&missing), |e| {
            matches!(e, UpstreamTlsError::Io { .. })
        }),
        (std::slice::from_ref(&empty), |e| {
            matches!(e, UpstreamTlsError::NoCertificates(_))
        }),
        (std::slice::from_ref(&prose), |e| {
            matches!(e, UpstreamTlsError::NoCertificates(_))
        }),
        (std::slice::from_ref(&junk), |e| {
            matches!(e, UpstreamTlsError::Invalid { .. })
        }),
        (std::slice::from_ref(&broken), |e| {
            matches!(e, UpstreamTlsError::Invalid { .. })
        }),
    ];
    for (extra, expected) in cases {
        let err = crate::tls::client_config(false, extra, Vec::new()).expect_err("must fail");
        assert!(expected(&err), "{extra:?}: {err:?}");
    }
    assert!(
        UpstreamTlsError::NoRoots
            .to_string()
            .contains("enable system_roots or give upstream_ca_files")
    );
}

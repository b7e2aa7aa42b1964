//! `ca.rs`: creating, loading and refusing CAs.

use super::*;

#[test]
fn init_writes_both_files_with_their_modes() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path().join("ca");
    let ca = Ca::init(&dir).expect("init");

    let cases = [
        (dir.clone(), 0o700),
        (Ca::cert_path(&dir), 0o644),
        (Ca::key_path(&dir), 0o600),
    ];
    for (path, want) in cases {
        assert_eq!(mode(&path), want, "{}", path.display());
    }
    let on_disk = fs::read_to_string(Ca::cert_path(&dir)).expect("read cert");
    assert_eq!(on_disk, ca.cert_pem());
    assert!(ca.cert_pem().starts_with("-----BEGIN CERTIFICATE-----"));
    let key = fs::read_to_string(Ca::key_path(&dir)).expect("read key");
    assert!(key.starts_with("-----BEGIN PRIVATE KEY-----"), "PKCS#8");
}

#[test]
fn init_refuses_to_overwrite() {
    // Which files exist beforehand, and which one the error must name.
    let cases: &[(&[&str], &str)] = &[
        (&["ca.pem"], "ca.pem"),
        (&["ca.key"], "ca.key"),
        (&["ca.pem", "ca.key"], "ca.key"),
    ];
    for (existing, named) in cases {
        let tmp = tempfile::tempdir().expect("tempdir");
        for file in *existing {
            fs::write(tmp.path().join(file), "keep me").expect("write");
        }
        let err = Ca::init(tmp.path()).expect_err("must refuse");
        assert!(
            matches!(&err, CaError::Exists(path) if path.ends_with(named)),
            "{existing:?}: {err}"
        );
        assert!(err.to_string().contains("never overwrites"), "{err}");
        for file in *existing {
            let kept = fs::read_to_string(tmp.path().join(file)).expect("read");
            assert_eq!(kept, "keep me", "{file} was touched");
        }
    }
}

#[test]
fn load_round_trips_and_signs_the_same_chain() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let made = Ca::init(tmp.path()).expect("init");
    let loaded = Arc::new(Ca::load(tmp.path()).expect("load"));
    assert_eq!(loaded.cert_pem(), made.cert_pem());
    assert_eq!(loaded.cert_der(), made.cert_der());

    // A leaf from the reloaded CA chains to the certificate made by init.
    let (minter, _) = minter(&loaded, 8);
    let leaf = futures_block_on(minter.leaf("reload.test")).expect("leaf");
    let client = client_trusting(&[made.cert_der()], &[]);
    handshake(client, minter.server_config(leaf), "reload.test").expect("handshake");
}

#[test]
fn load_refuses_keys_others_can_access() {
    let cases = [
        (0o600, true),
        (0o400, true),
        (0o644, false),
        (0o640, false),
        (0o604, false),
        (0o620, false),
    ];
    for (key_mode, ok) in cases {
        let tmp = tempfile::tempdir().expect("tempdir");
        Ca::init(tmp.path()).expect("init");
        let key = Ca::key_path(tmp.path());
        fs::set_permissions(&key, fs::Permissions::from_mode(key_mode)).expect("chmod");
        match Ca::load(tmp.path()) {
            Ok(_) => assert!(ok, "{key_mode:o} accepted"),
            Err(err) => {
                assert!(!ok, "{key_mode:o}: {err}");
                assert!(matches!(err, CaError::Invalid { .. }), "{err:?}");
                assert!(err.to_string().contains("chmod 600"), "{err}");
            }
        }
    }
}

#[test]
fn load_reports_missing_and_broken_files() {
    let other = test_ca();
    // How to break a freshly made CA, and what the error must say.
    type Break = fn(&Path, &Ca);
    let cases: &[(&str, Break, &str)] = &[
        (
            "no cert",
            |dir, _| fs::remove_file(Ca::cert_path(dir)).expect("rm"),
            "ca init",
        ),
        (
            "no key",
            |dir, _| fs::remove_file(Ca::key_path(dir)).expect("rm"),
            "ca init",
        ),
        (
            "garbage cert",
            |dir, _| fs::write(Ca::cert_path(dir), "junk").expect("w"),
            "no PEM",
        ),
        (
            "garbage key",
            |dir, _| fs::write(Ca::key_path(dir), "junk").expect("w"),
            "PKCS#8",
        ),
        (
            "binary cert",
            |dir, _| fs::write(Ca::cert_path(dir), [0xff, 0xfe, 0x00]).expect("w"),
            "not a PEM file",
        ),
        (
            "someone else's cert",
            |dir, other| fs::write(Ca::cert_path(dir), other.cert_pem()).expect("w"),
            "does not belong",
        ),
    ];
    for (what, break_it, hint) in cases {
        let tmp = tempfile::tempdir().expect("tempdir");
        Ca::init(tmp.path()).expect("init");
        break_it(tmp.path(), &other);
        let err = Ca::load(tmp.path()).expect_err(what);
        assert!(err.to_string().contains(hint), "{what}: {err}");
    }
}

#[test]
fn load_or_init_creates_once_then_loads() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let (first, created) = Ca::load_or_init(tmp.path(), None, false).expect("first start");
    assert!(created);
    let (second, created) = Ca::load_or_init(tmp.path(), None, false).expect("second start");
    assert!(!created);
    assert_eq!(first.cert_der(), second.cert_der());

    // Half a CA is reported, never replaced.
    fs::remove_file(Ca::cert_path(tmp.path())).expect("rm");
    let err = Ca::load_or_init(tmp.path(), None, false).expect_err("incomplete CA");
    assert!(
        matches!(&err, CaError::Invalid { path, .. } if path.ends_with("ca.pem")),
        "{err}"
    );
    assert!(Ca::key_path(tmp.path()).exists(), "the key must survive");
}

/// A CA kept sealed: created with its key sealed under the state key, one
/// an earlier version kept in the clear rewritten sealed (the same CA), and
/// a sealed key refused, saying why, to a caller without the state key.
#[tokio::test]
async fn a_sealed_ca_key_is_never_in_the_clear() {
    use crate::credentials::sealed::{StateKey, is_sealed};
    let state_key = StateKey::derive(&[9; 32]);
    let key_file = |dir: &Path| fs::read(Ca::key_path(dir)).expect("ca.key");

    let made = tempfile::tempdir().expect("tempdir");
    let (ca, created) = Ca::load_or_init(made.path(), Some(&state_key), true).expect("init");
    assert!(created);
    assert!(is_sealed(&key_file(made.path())), "created sealed");
    let (again, _) = Ca::load_or_init(made.path(), Some(&state_key), true).expect("reload");
    assert_eq!(ca.cert_der(), again.cert_der());
    let err = Ca::load(made.path()).expect_err("no state key");
    assert!(err.to_string().contains("sealed"), "{err}");
    let wrong = StateKey::derive(&[8; 32]);
    let err = Ca::load_or_init(made.path(), Some(&wrong), true).expect_err("wrong key");
    assert!(err.to_string().contains("state key"), "{err}");

    // Kept in the clear by an earlier version: sealed at the next start,
    // the same key, so every leaf still chains to the CA sandboxes trust.
    let old = tempfile::tempdir().expect("tempdir");
    let plain = Ca::init(old.path()).expect("plain");
    assert!(!is_sealed(&key_file(old.path())));
    let (resealed, _) = Ca::load_or_init(old.path(), Some(&state_key), true).expect("seal");
    assert!(is_sealed(&key_file(old.path())), "rewritten sealed");
    assert_eq!(plain.cert_der(), resealed.cert_der());
    let (reopened, _) = Ca::load_or_init(old.path(), Some(&state_key), true).expect("reopen");
    let minter = Minter::new(Arc::new(reopened), 4, HOUR, counter());
    let leaf = minter.leaf("example.test").await.expect("leaf");
    assert_eq!(&leaf.cert[1], plain.cert_der());

    // A CA the operator keeps outside state_dir is left as written.
    let theirs = tempfile::tempdir().expect("tempdir");
    Ca::init(theirs.path()).expect("plain");
    Ca::load_or_init(theirs.path(), Some(&state_key), false).expect("load");
    assert!(
        !is_sealed(&key_file(theirs.path())),
        "not the daemon's to seal"
    );
}

/// A CA made elsewhere (other DN string types, a pre-set key identifier, or
/// an empty one, which leaves must not point at) still signs leaves that
/// chain to it.
#[test]
fn load_accepts_a_foreign_ca() {
    let cases = [vec![1, 2, 3, 4], Vec::new()];
    for key_id in cases {
        let key = KeyPair::generate().expect("key");
        let mut params = CertificateParams::default();
        params.distinguished_name = rcgen::DistinguishedName::new();
        let country = PrintableString::try_from("DE").expect("printable");
        params
            .distinguished_name
            .push(DnType::CountryName, DnValue::PrintableString(country));
        params
            .distinguished_name
            .push(DnType::OrganizationName, "Example Corp");
        params
            .distinguished_name
            .push(DnType::CommonName, "Corp Root");
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params.key_usages = vec![KeyUsagePurpose::KeyCertSign];
        params.key_identifier_method = KeyIdMethod::PreSpecified(key_id);
        let cert = params.self_signed(&key).expect("self-signed");
        let tmp = tempfile::tempdir().expect("tempdir");
        fs::write(Ca::cert_path(tmp.path()), cert.pem()).expect("write cert");
        let key_path = Ca::key_path(tmp.path());
        fs::write(&key_path, key.serialize_pem()).expect("write key");
        fs::set_permissions(&key_path, fs::Permissions::from_mode(0o600)).expect("chmod");

        let ca = Arc::new(Ca::load(tmp.path()).expect("load foreign CA"));
        let (minter, _) = minter(&ca, 8);
        let leaf = futures_block_on(minter.leaf("corp.test")).expect("leaf");
        let client = client_trusting(&[cert.der()], &[]);
        handshake(client, minter.server_config(leaf), "corp.test").expect("handshake");
    }
}

#[test]
fn load_refuses_a_certificate_that_is_not_a_ca() {
    let key = KeyPair::generate().expect("key");
    let cert = CertificateParams::new(vec!["leaf.test".to_owned()])
        .expect("params")
        .self_signed(&key)
        .expect("self-signed");
    let tmp = tempfile::tempdir().expect("tempdir");
    fs::write(Ca::cert_path(tmp.path()), cert.pem()).expect("write cert");
    let key_path = Ca::key_path(tmp.path());
    fs::write(&key_path, key.serialize_pem()).expect("write key");
    fs::set_permissions(&key_path, fs::Permissions::from_mode(0o600)).expect("chmod");
    let err = Ca::load(tmp.path()).expect_err("not a CA");
    assert!(err.to_string().contains("not a CA certificate"), "{err}");
}

#[test]
fn env_points_every_client_at_the_ca() {
    let vars = Ca::env(Path::new("/etc/sluice/ca.pem"));
    let want = [
        "SSL_CERT_FILE",
        "REQUESTS_CA_BUNDLE",
        "CURL_CA_BUNDLE",
        "NODE_EXTRA_CA_CERTS",
        "GIT_SSL_CAINFO",
        "PIP_CERT",
        "AWS_CA_BUNDLE",
        "CARGO_HTTP_CAINFO",
        "HTTPLIB2_CA_CERTS",
    ];
    let names: Vec<_> = vars.iter().map(|(name, _)| *name).collect();
    assert_eq!(names, want);
    assert!(vars.iter().all(|(_, value)| value == "/etc/sluice/ca.pem"));
}

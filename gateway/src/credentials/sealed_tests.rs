use std::ffi::OsString;
use std::fs;
use std::os::unix::fs::PermissionsExt as _;

use super::*;

const NAME: &str = "placeholder.key";
const SECRET: &[u8] = b"refresh-token-SEALED-0123456789";

fn key(byte: u8) -> StateKey {
    StateKey::derive(&[byte; 32])
}

#[test]
fn open_table() {
    let k = key(1);
    let good = seal(&k, NAME, SECRET).expect("seals");
    assert_eq!(good.len(), OVERHEAD + SECRET.len());
    assert!(is_sealed(&good));
    assert!(!good.windows(SECRET.len()).any(|w| w == SECRET));

    let mut tampered_body = good.clone();
    tampered_body[HEADER_LEN + 3] ^= 1;
    let mut tampered_tag = good.clone();
    *tampered_tag.last_mut().expect("tag") ^= 0x80;
    let mut tampered_nonce = good.clone();
    tampered_nonce[MAGIC.len() + 1] ^= 1;
    let mut newer = good.clone();
    newer[MAGIC.len()] = VERSION + 1;

    type Case<'a> = (
        &'a str,
        &'a StateKey,
        &'a str,
        &'a [u8],
        Result<&'a [u8], OpenError>,
    );
    let other = key(2);
    let cases: &[Case] = &[
        ("round trip", &k, NAME, &good, Ok(SECRET)),
        ("wrong key", &other, NAME, &good, Err(OpenError::Forged)),
        (
            "tampered body",
            &k,
            NAME,
            &tampered_body,
            Err(OpenError::Forged),
        ),
        (
            "tampered tag",
            &k,
            NAME,
            &tampered_tag,
            Err(OpenError::Forged),
        ),
        (
            "tampered nonce",
            &k,
            NAME,
            &tampered_nonce,
            Err(OpenError::Forged),
        ),
        (
            "swapped file name",
            &k,
            "oauth_refresh.json",
            &good,
            Err(OpenError::Forged),
        ),
        (
            "truncated by one",
            &k,
            NAME,
            &good[..good.len() - 1],
            Err(OpenError::Forged),
        ),
        (
            "truncated to the header",
            &k,
            NAME,
            &good[..HEADER_LEN],
            Err(OpenError::Truncated),
        ),
        (
            "truncated in the magic",
            &k,
            NAME,
            &good[..2],
            Err(OpenError::Truncated),
        ),
        ("empty", &k, NAME, b"", Err(OpenError::Truncated)),
        (
            "newer version",
            &k,
            NAME,
            &newer,
            Err(OpenError::Version(VERSION + 1)),
        ),
        (
            "clear text",
            &k,
            NAME,
            b"{\"rt\": 1}",
            Err(OpenError::NotSealed),
        ),
        (
            "short clear text",
            &k,
            NAME,
            b"{}",
            Err(OpenError::NotSealed),
        ),
    ];
    for (what, key, name, bytes, want) in cases {
        let got = open(key, name, bytes);
        match (got, want) {
            (Ok(plain), Ok(want)) => assert_eq!(&plain[..], *want, "{what}"),
            (Err(e), Err(want)) => assert_eq!(&e, want, "{what}"),
            (got, want) => panic!("{what}: got {got:?}, want {want:?}"),
        }
    }
}

#[test]
fn every_seal_draws_its_own_nonce() {
    let k = key(1);
    let a = seal(&k, NAME, SECRET).expect("seals");
    let b = seal(&k, NAME, SECRET).expect("seals");
    assert_ne!(a[..HEADER_LEN], b[..HEADER_LEN]);
    assert_ne!(a, b);
    assert_eq!(&open(&k, NAME, &b).expect("opens")[..], SECRET);
    assert_eq!(
        &open(&k, NAME, &seal(&k, NAME, b"").expect("seals")).expect("opens")[..],
        b""
    );
}

#[test]
fn the_key_is_derived_from_the_whole_material_and_never_printed() {
    let a = StateKey::derive(&[1; 32]);
    let b = StateKey::derive(&[1; 33]);
    let sealed = seal(&a, NAME, SECRET).expect("seals");
    assert_eq!(open(&b, NAME, &sealed), Err(OpenError::Forged));
    assert_eq!(format!("{a:?}"), "StateKey(** key **)");
}

#[test]
fn read_and_write_files() {
    let dir = tempfile::tempdir().expect("tempdir");
    let k = key(1);
    assert!(matches!(
        read(dir.path(), NAME, &k).expect("missing"),
        Read::Missing
    ));
    write(dir.path(), NAME, &k, SECRET).expect("write");
    let path = dir.path().join(NAME);
    assert_eq!(
        fs::metadata(&path).expect("meta").permissions().mode() & 0o777,
        0o600
    );
    match read(dir.path(), NAME, &k).expect("reads") {
        Read::Sealed(plain) => assert_eq!(&plain[..], SECRET),
        other => panic!("{other:?}"),
    }
    let err = read(dir.path(), NAME, &key(2)).expect_err("wrong key");
    assert!(err.to_string().contains(NAME), "{err}");
    assert!(err.to_string().contains("state key"), "{err}");

    fs::write(&path, b"in the clear").expect("write");
    match read(dir.path(), NAME, &k).expect("reads") {
        Read::Plain(plain) => assert_eq!(&plain[..], b"in the clear"),
        other => panic!("{other:?}"),
    }
    fs::set_permissions(&path, fs::Permissions::from_mode(0o640)).expect("chmod");
    let err = read(dir.path(), NAME, &k).expect_err("too open");
    assert_eq!(err.kind(), io::ErrorKind::PermissionDenied);
}

#[test]
fn key_source_yaml_table() {
    let cases: &[(&str, Result<KeySource, &str>)] = &[
        (
            "{file: /etc/sluice/state.key}",
            Ok(KeySource::File {
                path: "/etc/sluice/state.key".into(),
            }),
        ),
        (
            "{systemd_credential: state-key}",
            Ok(KeySource::SystemdCredential {
                name: "state-key".into(),
            }),
        ),
        ("{file: state.key}", Err("absolute")),
        ("{systemd_credential: a/b}", Err("not a path")),
        ("{systemd_credential: \"\"}", Err("empty")),
        ("{file: /k, systemd_credential: k}", Err("exactly one")),
        ("{}", Err("exactly one")),
        ("{env: K}", Err("unknown field")),
    ];
    for (yaml, want) in cases {
        let got = serde_yaml::from_str::<KeySource>(yaml);
        match (got, want) {
            (Ok(got), Ok(want)) => assert_eq!(&got, want, "{yaml}"),
            (Err(e), Err(want)) => assert!(e.to_string().contains(want), "{yaml}: {e}"),
            (got, want) => panic!("{yaml}: got {got:?}, want {want:?}"),
        }
    }
}

#[test]
fn where_the_key_is_table() {
    let creds = tempfile::tempdir().expect("tempdir");
    let empty = tempfile::tempdir().expect("tempdir");
    fs::write(creds.path().join(DEFAULT_CREDENTIAL), [5; 32]).expect("write");
    fs::write(creds.path().join("mine"), [5; 32]).expect("write");
    let dir = |d: &tempfile::TempDir| Some(OsString::from(d.path()));
    let state = Path::new("/var/lib/sluice/");
    let file = KeySource::File {
        path: "/etc/sluice/state.key".into(),
    };
    let mine = KeySource::SystemdCredential {
        name: "mine".into(),
    };
    let absent = KeySource::SystemdCredential {
        name: "absent".into(),
    };
    type Case<'a> = (
        &'a str,
        Option<&'a KeySource>,
        Option<OsString>,
        Result<KeyPlace, &'a str>,
    );
    let cases: Vec<Case> = vec![
        (
            "default, no systemd",
            None,
            None,
            Ok(KeyPlace::File("/var/lib/sluice.key".into())),
        ),
        (
            "default, systemd gives state-key",
            None,
            dir(&creds),
            Ok(KeyPlace::Credential(creds.path().join(DEFAULT_CREDENTIAL))),
        ),
        (
            "default, systemd gives other credentials",
            None,
            dir(&empty),
            Ok(KeyPlace::File("/var/lib/sluice.key".into())),
        ),
        (
            "file",
            Some(&file),
            dir(&creds),
            Ok(KeyPlace::File("/etc/sluice/state.key".into())),
        ),
        (
            "credential",
            Some(&mine),
            dir(&creds),
            Ok(KeyPlace::Credential(creds.path().join("mine"))),
        ),
        (
            "credential, variable unset",
            Some(&mine),
            None,
            Err("CREDENTIALS_DIRECTORY is not set"),
        ),
        (
            "credential, file missing",
            Some(&absent),
            dir(&creds),
            Err("LoadCredential=absent"),
        ),
    ];
    for (what, configured, env, want) in cases {
        let got = place(configured, state, env);
        match (got, want) {
            (Ok(got), Ok(want)) => assert_eq!(got, want, "{what}"),
            (Err(e), Err(want)) => assert!(e.to_string().contains(want), "{what}: {e}"),
            (got, want) => panic!("{what}: got {got:?}, want {want:?}"),
        }
    }
    let err = place(None, Path::new("/"), None).expect_err("no parent");
    assert!(err.to_string().contains("set `state_key`"), "{err}");
}

#[test]
fn key_files() {
    let root = tempfile::tempdir().expect("tempdir");
    let state = root.path().join("state");
    fs::create_dir(&state).expect("mkdir");

    // Created once, 0600, 32 random bytes; the same key after.
    let place_ = place(None, &state, None).expect("place");
    assert_eq!(place_, KeyPlace::File(root.path().join("state.key")));
    let a = load_key(&place_, &state).expect("created");
    let path = root.path().join("state.key");
    let meta = fs::metadata(&path).expect("exists");
    assert_eq!(meta.permissions().mode() & 0o777, 0o600);
    assert_eq!(meta.len(), 32);
    let b = load_key(&place_, &state).expect("read");
    let sealed = seal(&a, NAME, SECRET).expect("seals");
    assert_eq!(&open(&b, NAME, &sealed).expect("same key")[..], SECRET);

    // Refusals: inside state_dir (even through `..`), too open, too short.
    for inside in [state.join("state.key"), state.join("sub/../k")] {
        let err = load_key(&KeyPlace::File(inside.clone()), &state).expect_err("inside");
        assert!(
            err.to_string().contains("inside state_dir"),
            "{}: {err}",
            inside.display()
        );
        assert!(!inside.exists());
    }
    fs::set_permissions(&path, fs::Permissions::from_mode(0o644)).expect("chmod");
    let err = load_key(&place_, &state).expect_err("too open");
    assert!(err.to_string().contains("chmod 600"), "{err}");
    fs::write(&path, b"short").expect("write");
    fs::set_permissions(&path, fs::Permissions::from_mode(0o600)).expect("chmod");
    let err = load_key(&place_, &state).expect_err("too short");
    assert!(err.to_string().contains("at least 32"), "{err}");
    let err = load_key(&KeyPlace::File(root.path().join("no/such/dir/k")), &state)
        .expect_err("cannot create");
    assert!(
        err.to_string().contains("cannot create the state key"),
        "{err}"
    );

    // A systemd credential is read, never created, whatever its mode.
    let cred = root.path().join("cred");
    let err = load_key(&KeyPlace::Credential(cred.clone()), &state).expect_err("missing");
    assert!(!cred.exists(), "{err}");
    fs::write(&cred, "c29tZSBiYXNlNjQgdGV4dCBvZiAzMiBieXRlcyAgICAgIAo=\n").expect("write");
    fs::set_permissions(&cred, fs::Permissions::from_mode(0o440)).expect("chmod");
    load_key(&KeyPlace::Credential(cred), &state).expect("any material of 32 bytes or more");
}

/// Every forms a secret could be found in on disk: raw, base64 (padded,
/// unpadded, URL-safe) and hex.
fn encodings(secret: &[u8]) -> Vec<Vec<u8>> {
    use base64::Engine as _;
    use base64::engine::general_purpose::{STANDARD, STANDARD_NO_PAD, URL_SAFE_NO_PAD};
    let hex: String = secret.iter().map(|b| format!("{b:02x}")).collect();
    vec![
        secret.to_vec(),
        STANDARD.encode(secret).into_bytes(),
        STANDARD_NO_PAD.encode(secret).into_bytes(),
        URL_SAFE_NO_PAD.encode(secret).into_bytes(),
        hex.clone().into_bytes(),
        hex.to_uppercase().into_bytes(),
    ]
}

/// Runs what writes secrets into `state_dir` (the placeholder key, a
/// refresh token an endpoint rotated to, through the token cache as the
/// daemon does), then reads every file there: no secret, in no encoding.
#[tokio::test]
async fn state_dir_holds_no_secret_in_the_clear() {
    use std::sync::Arc;

    use crate::credentials::config::OAuthGrant;
    use crate::credentials::kept::KeptTokens;
    use crate::credentials::oauth::{Token, TokenCache};
    use crate::credentials::{Secret, load_or_create_key};

    const ROTATED: &str = "rt-ROTATED-never-in-the-clear-7f3a9c";
    let root = tempfile::tempdir().expect("tempdir");
    let state = root.path().join("state");
    fs::create_dir(&state).expect("mkdir");
    let place_ = place(None, &state, None).expect("place");
    let key = Arc::new(load_key(&place_, &state).expect("state key"));

    let placeholder_key = load_or_create_key(&state, &key).expect("placeholder key");
    let kept = Arc::new(KeptTokens::load(&state, key.clone()).expect("kept"));
    let cache = TokenCache::keeping(OAuthGrant::RefreshToken, kept.for_credential("crm"));
    let source = Arc::new(Secret::from("rt-source"));
    cache
        .get(&source, |_| async {
            Ok(Token {
                access: Arc::new(Secret::from("access-token")),
                lifetime: std::time::Duration::from_secs(3600),
                refresh: Some(Arc::new(Secret::from(ROTATED))),
            })
        })
        .await
        .expect("token");
    let reloaded = KeptTokens::load(&state, key.clone()).expect("reload");
    assert_eq!(
        reloaded.kept("crm").expect("kept").0.expose(),
        ROTATED.as_bytes()
    );

    // The interception CA, kept in state_dir as the daemon keeps it by
    // default: its certificate is public, its key sealed.
    let ca_dir = state.join("ca");
    crate::tls::ca::Ca::load_or_init(&ca_dir, Some(&key), true).expect("CA");

    let key_material = fs::read(root.path().join("state.key")).expect("the key, outside");
    let secrets: [&[u8]; 4] = [
        &placeholder_key[..],
        ROTATED.as_bytes(),
        &key_material,
        b"PRIVATE KEY",
    ];
    let mut files = 0;
    let entries = fs::read_dir(&state).expect("state_dir");
    let ca = fs::read_dir(&ca_dir).expect("ca dir");
    for entry in entries.chain(ca) {
        let path = entry.expect("entry").path();
        if path == ca_dir || path == crate::tls::ca::Ca::cert_path(&ca_dir) {
            continue;
        }
        let bytes = fs::read(&path).expect("read");
        files += 1;
        for secret in secrets {
            for needle in encodings(secret) {
                assert!(
                    !bytes.windows(needle.len()).any(|w| w == needle),
                    "{} holds a secret in the clear",
                    path.display()
                );
            }
        }
        assert!(is_sealed(&bytes), "{}", path.display());
    }
    assert_eq!(
        files, 3,
        "the placeholder key, the refresh tokens, the CA key"
    );
}

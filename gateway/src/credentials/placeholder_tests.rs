use std::fs;
use std::os::unix::fs::PermissionsExt as _;

use super::*;
use crate::credentials::config::{SchemeConfig, Source};

fn shape(prefix: Option<&str>, length: Option<usize>) -> PlaceholderShape {
    PlaceholderShape {
        prefix: prefix.map(str::to_owned),
        length,
    }
}

#[test]
fn shape_table() {
    let p = Placeholders::new([7; 32]);
    // (prefix, length, secret_len, want prefix, want total length)
    let cases = [
        (None, None, 10, "", MIN_TAIL),
        (None, None, 64, "", 64),
        (Some("sk-"), None, 51, "sk-", 51),
        (Some("sk-"), None, 5, "sk-", 3 + MIN_TAIL),
        (Some("sk-ant-"), Some(40), 100, "sk-ant-", 40),
        (None, Some(20), 100, "", 20),
        // Invalid shape (rejected by config validation) still yields a safe tail.
        (Some("sk-"), Some(4), 100, "sk-", 3 + MIN_CONFIGURED_TAIL),
        (Some("ghp_"), None, 0, "ghp_", 4 + MIN_TAIL),
    ];
    for (prefix, length, secret_len, want_prefix, want_len) in cases {
        let got = p.placeholder("sb", "cred", &shape(prefix, length), secret_len);
        assert_eq!(
            got.len(),
            want_len,
            "{prefix:?} {length:?} {secret_len}: {got}"
        );
        let tail = got.strip_prefix(want_prefix).expect("prefix");
        assert!(tail.bytes().all(|b| b.is_ascii_alphanumeric()), "{got}");
    }
}

#[test]
fn stable_and_distinct() {
    let s = shape(Some("sk-"), None);
    let a = Placeholders::new([1; 32]);
    let base = a.placeholder("sb1", "openai", &s, 40);
    assert_eq!(
        base,
        Placeholders::new([1; 32]).placeholder("sb1", "openai", &s, 40)
    );
    let others = [
        a.placeholder("sb2", "openai", &s, 40),
        a.placeholder("sb1", "github", &s, 40),
        Placeholders::new([2; 32]).placeholder("sb1", "openai", &s, 40),
        // Field boundaries matter.
        a.placeholder("sb1o", "penai", &s, 40),
    ];
    for o in &others {
        assert_ne!(&base, o);
        assert_eq!(o.len(), 40);
    }
    // A longer placeholder extends the same stream (so shape changes are
    // predictable), and long tails span several HMAC blocks.
    let long = a.placeholder("sb1", "openai", &s, 300);
    assert_eq!(long.len(), 300);
    assert!(long.starts_with(&base));
}

#[test]
fn env_names_table() {
    let cases = [
        ("openai", "OPENAI"),
        ("github-token", "GITHUB_TOKEN"),
        ("a.b_c", "A_B_C"),
        ("9lives", "_9LIVES"),
        ("", "_"),
        ("ünï", "_N_"),
    ];
    for (name, want) in cases {
        assert_eq!(env_name(name), want, "{name}");
    }
}

#[test]
fn env_lists_each_credential() {
    let c = CredentialConfig {
        name: "my-api".into(),
        source: Source::Env { var: "X".into() },
        hosts: vec!["a.com".into()],
        scheme: SchemeConfig::Bearer,
        placeholder: shape(Some("key-"), None),
    };
    let p = Placeholders::new([3; 32]);
    let env = p.env("sb", [(&c, 30)]);
    assert_eq!(env.len(), 1);
    assert_eq!(env[0].0, "MY_API");
    assert_eq!(env[0].1, p.placeholder("sb", "my-api", &c.placeholder, 30));
    assert!(env[0].1.starts_with("key-"));
}

#[test]
fn debug_hides_key() {
    let p = Placeholders::new([0xAB; 32]);
    let dbg = format!("{p:?}");
    assert!(
        !dbg.contains("171") && !dbg.to_lowercase().contains("ab, "),
        "{dbg}"
    );
}

fn state_key() -> StateKey {
    StateKey::derive(&[4; 32])
}

#[test]
fn key_file_created_once_sealed_with_0600() {
    let dir = tempfile::tempdir().expect("tempdir");
    let k1 = load_or_create_key(dir.path(), &state_key()).expect("create");
    let path = dir.path().join(KEY_FILE);
    let meta = fs::metadata(&path).expect("exists");
    assert_eq!(meta.permissions().mode() & 0o777, 0o600);
    assert_eq!(meta.len(), (32 + sealed::OVERHEAD) as u64);
    let bytes = fs::read(&path).expect("read");
    assert!(sealed::is_sealed(&bytes));
    assert!(
        !bytes.windows(32).any(|w| w == &k1[..]),
        "the key is not in the clear"
    );
    let k2 = load_or_create_key(dir.path(), &state_key()).expect("reload");
    assert_eq!(k1, k2);
    assert_ne!(*k1, [0; 32]);
}

#[test]
fn a_key_kept_in_the_clear_by_an_earlier_version_is_sealed_and_kept() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join(KEY_FILE);
    fs::write(&path, [0x5A; 32]).expect("write");
    fs::set_permissions(&path, fs::Permissions::from_mode(0o600)).expect("chmod");
    let before =
        Placeholders::new([0x5A; 32]).placeholder("sb", "c", &PlaceholderShape::default(), 40);

    let key = load_or_create_key(dir.path(), &state_key()).expect("migrates");
    assert_eq!(*key, [0x5A; 32], "the same key: placeholders do not change");
    let bytes = fs::read(&path).expect("read");
    assert!(sealed::is_sealed(&bytes), "rewritten sealed");
    assert!(!bytes.windows(32).any(|w| w == [0x5A; 32]));
    assert_eq!(
        fs::metadata(&path).expect("meta").permissions().mode() & 0o777,
        0o600
    );
    let again = load_or_create_key(dir.path(), &state_key()).expect("reload");
    let after = Placeholders::new(*again).placeholder("sb", "c", &PlaceholderShape::default(), 40);
    assert_eq!(before, after);
}

#[test]
fn key_file_refusals() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join(KEY_FILE);
    fs::write(&path, b"short").expect("write");
    fs::set_permissions(&path, fs::Permissions::from_mode(0o600)).expect("chmod");
    let e = load_or_create_key(dir.path(), &state_key()).expect_err("wrong size");
    assert_eq!(e.kind(), io::ErrorKind::InvalidData);

    sealed::write(dir.path(), KEY_FILE, &state_key(), &[9u8; 31]).expect("write");
    let e = load_or_create_key(dir.path(), &state_key()).expect_err("wrong size, sealed");
    assert_eq!(e.kind(), io::ErrorKind::InvalidData);

    sealed::write(dir.path(), KEY_FILE, &state_key(), &[9u8; 32]).expect("write");
    let e =
        load_or_create_key(dir.path(), &StateKey::derive(&[5; 32])).expect_err("another state key");
    assert_eq!(e.kind(), io::ErrorKind::InvalidData);
    assert!(e.to_string().contains("state key"), "{e}");

    fs::write(&path, [9u8; 32]).expect("write");
    fs::set_permissions(&path, fs::Permissions::from_mode(0o644)).expect("chmod");
    let e = load_or_create_key(dir.path(), &state_key()).expect_err("too open");
    assert_eq!(e.kind(), io::ErrorKind::PermissionDenied);

    let e = load_or_create_key(&dir.path().join("nope"), &state_key()).expect_err("no dir");
    assert_eq!(e.kind(), io::ErrorKind::NotFound);
}

use std::collections::BTreeMap;
use std::fs;

use super::*;
use crate::credentials::config::{PlaceholderShape, SchemeConfig};
use crate::credentials::systemd::CREDENTIALS_DIRECTORY;

const FILE_SECRET: &str = "file-secret-NEVER-PRINTED";
const ENV_SECRET: &str = "env-secret-NEVER-PRINTED";

fn cred(name: &str, source: Source) -> CredentialConfig {
    CredentialConfig {
        name: name.into(),
        source,
        hosts: vec!["api.example.com".into()],
        scheme: SchemeConfig::Bearer,
        placeholder: PlaceholderShape::default(),
    }
}

fn env(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect()
}

fn secret_str(store: &CredentialStore, name: &str) -> String {
    let s = store.secret(name).expect("credential exists");
    String::from_utf8(s.expose().to_vec()).expect("utf8")
}

#[test]
fn file_trailing_newline_table() {
    let dir = tempfile::tempdir().expect("tempdir");
    let cases = [
        ("abc", "abc"),
        ("abc\n", "abc"),
        ("abc\r\n", "abc"),
        ("abc\n\n", "abc\n"),
        (" abc \n", " abc "),
    ];
    for (i, (content, want)) in cases.into_iter().enumerate() {
        let path = dir.path().join(format!("s{i}"));
        fs::write(&path, content).expect("write");
        let store =
            CredentialStore::load(&[cred("c", Source::File { path })], &env(&[])).expect("loads");
        assert_eq!(secret_str(&store, "c"), want, "{content:?}");
    }
}

#[test]
fn loads_file_and_env_sources() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("key");
    fs::write(&path, format!("{FILE_SECRET}\n")).expect("write");
    let store = CredentialStore::load(
        &[
            cred("f", Source::File { path }),
            cred(
                "e",
                Source::Env {
                    var: "E_KEY".into(),
                },
            ),
        ],
        &env(&[("E_KEY", ENV_SECRET)]),
    )
    .expect("loads");
    assert_eq!(secret_str(&store, "f"), FILE_SECRET);
    assert_eq!(secret_str(&store, "e"), ENV_SECRET);
    assert!(store.secret("missing").is_none());
    assert_eq!(store.configs().count(), 2);
    assert!(
        store
            .hosts("f")
            .is_some_and(|h| h.matches("api.example.com"))
    );
    assert_eq!(store.scheme("e"), Some(&Scheme::Bearer));
    let dbg = format!("{store:?}");
    assert!(
        !dbg.contains(FILE_SECRET) && !dbg.contains(ENV_SECRET),
        "{dbg}"
    );
    assert!(dbg.contains("\"f\""), "{dbg}");
}

/// `{systemd_credential: NAME}` reads `$CREDENTIALS_DIRECTORY/NAME` like a
/// file; the variable unset or the file missing is an error that says
/// which, and how to give it.
#[test]
fn systemd_credential_sources() {
    let dir = tempfile::tempdir().expect("tempdir");
    fs::write(dir.path().join("openai"), format!("{FILE_SECRET}\n")).expect("write");
    let credential = |name: &str| cred("c", Source::SystemdCredential { name: name.into() });
    let creds = dir.path().to_str().expect("utf-8 path");
    let store = CredentialStore::load(
        &[credential("openai")],
        &env(&[(CREDENTIALS_DIRECTORY, creds)]),
    )
    .expect("loads");
    assert_eq!(secret_str(&store, "c"), FILE_SECRET);

    type Case<'a> = (&'a str, &'a [(&'a str, &'a str)], &'a [&'a str]);
    let cases: &[Case] = &[
        (
            "openai",
            &[],
            &[
                "\"c\"",
                "$CREDENTIALS_DIRECTORY is not set",
                "LoadCredential=openai:",
            ],
        ),
        (
            "openai",
            &[(CREDENTIALS_DIRECTORY, "")],
            &["$CREDENTIALS_DIRECTORY is not set"],
        ),
        (
            "absent",
            &[(CREDENTIALS_DIRECTORY, creds)],
            &["\"c\"", "absent", "LoadCredential=absent:PATH"],
        ),
    ];
    for (name, vars, want) in cases {
        let errs = CredentialStore::load(&[credential(name)], &env(vars)).expect_err("fails");
        let msg = errs[0].to_string();
        for w in *want {
            assert!(msg.contains(w), "{name} {vars:?}: {msg}");
        }
        assert!(!msg.contains(FILE_SECRET));
    }
}

#[test]
fn load_errors_name_credential_and_path_never_content() {
    let dir = tempfile::tempdir().expect("tempdir");
    let empty = dir.path().join("empty");
    fs::write(&empty, "\n").expect("write");
    let missing = dir.path().join("missing");
    let errs = CredentialStore::load(
        &[
            cred(
                "nofile",
                Source::File {
                    path: missing.clone(),
                },
            ),
            cred("blank", Source::File { path: empty }),
            cred(
                "noenv",
                Source::Env {
                    var: "UNSET_VAR".into(),
                },
            ),
            cred(
                "blankenv",
                Source::Env {
                    var: "BLANK".into(),
                },
            ),
        ],
        &env(&[("BLANK", ""), ("OTHER", ENV_SECRET)]),
    )
    .expect_err("all four fail");
    let msgs: Vec<String> = errs.iter().map(ToString::to_string).collect();
    assert_eq!(msgs.len(), 4, "{msgs:?}");
    assert!(msgs[0].contains("\"nofile\"") && msgs[0].contains(&missing.display().to_string()));
    assert!(msgs[1].contains("\"blank\"") && msgs[1].contains("empty"));
    assert!(msgs[2].contains("\"noenv\"") && msgs[2].contains("UNSET_VAR"));
    assert!(msgs[3].contains("\"blankenv\"") && msgs[3].contains("$BLANK"));
    for e in &errs {
        assert_eq!(e.class(), "internal");
        assert!(!format!("{e} {e:?}").contains(ENV_SECRET));
    }
}

#[test]
fn invalid_config_is_reported_before_reading() {
    let mut c = cred("c", Source::Env { var: "X".into() });
    c.hosts.clear();
    let errs = CredentialStore::load(&[c], &env(&[])).expect_err("invalid");
    assert_eq!(errs.len(), 1, "no EnvMissing: config errors stop the load");
    assert_eq!(errs[0].class(), "policy");
}

#[test]
fn reload_picks_up_rotation_and_keeps_old_on_failure() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("key");
    fs::write(&path, "first-secret\n").expect("write");
    let store = CredentialStore::load(
        &[
            cred("f", Source::File { path: path.clone() }),
            cred("e", Source::Env { var: "E".into() }),
        ],
        &env(&[("E", ENV_SECRET)]),
    )
    .expect("loads");

    let r = store.reload_changed();
    assert!(r.reloaded.is_empty() && r.errors.is_empty(), "{r:?}");

    // In-place rewrite with a different length.
    fs::write(&path, "second-secret-longer\n").expect("write");
    let held = store.secret("f").expect("exists");
    let r = store.reload_changed();
    assert_eq!(r.reloaded, vec!["f".to_owned()]);
    assert_eq!(secret_str(&store, "f"), "second-secret-longer");
    // In-flight holders keep the version they started with.
    assert_eq!(held.expose(), b"first-secret");

    // Rename over with the same length: a new inode is still a change.
    let tmp = dir.path().join("key.tmp");
    fs::write(&tmp, "third--secret-longer\n").expect("write");
    fs::rename(&tmp, &path).expect("rename");
    let r = store.reload_changed();
    assert_eq!(r.reloaded, vec!["f".to_owned()]);
    assert_eq!(secret_str(&store, "f"), "third--secret-longer");

    // Deleted: error names the file, the old secret stays.
    fs::remove_file(&path).expect("rm");
    let r = store.reload_changed();
    assert!(r.reloaded.is_empty());
    assert_eq!(r.errors.len(), 1);
    let msg = r.errors[0].to_string();
    assert!(
        msg.contains("\"f\"") && msg.contains(&path.display().to_string()),
        "{msg}"
    );
    assert!(!msg.contains("third"), "{msg}");
    assert_eq!(secret_str(&store, "f"), "third--secret-longer");

    // Emptied: also kept.
    fs::write(&path, "").expect("write");
    let r = store.reload_changed();
    assert_eq!(r.errors.len(), 1, "{r:?}");
    assert_eq!(secret_str(&store, "f"), "third--secret-longer");
    assert_eq!(secret_str(&store, "e"), ENV_SECRET);
}

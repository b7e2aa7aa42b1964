use super::*;
use crate::policy::network::{ConnRequest, NetVerdict};

fn policy(yaml: &str) -> Arc<CompiledPolicy> {
    let raw: raw::Policy = serde_yaml::from_str(yaml).expect("policy yaml");
    Arc::new(CompiledPolicy::compile("p", &raw).expect("compiles"))
}

fn entry(target: &str) -> Entry {
    Entry {
        target: target.to_owned(),
        by: "alice".to_owned(),
        added_at_ms: 1,
    }
}

fn decide(network: &NetworkPolicy, sni: &str) -> NetVerdict {
    let dst = "93.184.216.34:443".parse().expect("address");
    network.decide(&ConnRequest {
        dst,
        sni: Some(sni),
        host: None,
        name_addrs: Some(&[dst.ip()]),
        host_address: false,
        ech: false,
        exe: None,
    })
}

/// Added, an entry allows its name for that sandbox only; saved, it is
/// there after a restart; removed, it is gone, saved, and the sandbox's
/// connections admitted with it no longer hold.
#[test]
fn entries_are_added_kept_and_removed() {
    let dir = tempfile::tempdir().expect("tempdir");
    let base = policy("network:\n  unmatched: ask\n");
    let overlays = Overlays::load(dir.path()).expect("load");
    assert!(overlays.network("sb", &base).is_none(), "no overlay yet");

    assert_eq!(overlays.add("sb", entry("a.test:443"), &base), Ok(true));
    assert_eq!(
        overlays.add("sb", entry("a.test:443"), &base),
        Ok(false),
        "already there"
    );
    let overlaid = overlays.network("sb", &base).expect("overlay");
    assert_eq!(
        decide(&overlaid.network, "a.test"),
        NetVerdict::Allow {
            rule: "overlay.allow_out[0]".into()
        }
    );
    assert_eq!(
        decide(&overlaid.network, "b.test"),
        NetVerdict::Ask {
            rule: "network.unmatched".into()
        }
    );
    assert!(overlays.network("other", &base).is_none(), "per sandbox");
    assert!(
        Arc::ptr_eq(&overlaid, &overlays.network("sb", &base).expect("same")),
        "built once"
    );

    // A restart reads it back.
    let restarted = Overlays::load(dir.path()).expect("load");
    assert_eq!(restarted.list()["sb"], vec![entry("a.test:443")]);

    assert!(overlays.holds("sb", Some(&overlaid)));
    assert_eq!(overlays.remove("sb", "a.test:443"), Ok(entry("a.test:443")));
    assert!(
        !overlays.holds("sb", Some(&overlaid)),
        "a removal ends what it admitted"
    );
    assert!(
        overlays.holds("sb", None),
        "connections admitted without it stand"
    );
    assert!(overlays.network("sb", &base).is_none());
    assert!(Overlays::load(dir.path()).expect("load").list().is_empty());
    assert_eq!(
        overlays.remove("sb", "a.test:443"),
        Err(OverlayError::NotFound {
            sandbox: "sb".into(),
            target: "a.test:443".into()
        })
    );
}

#[test]
fn bad_entries_are_refused_and_nothing_is_saved() {
    let dir = tempfile::tempdir().expect("tempdir");
    let base = policy("network:\n  allow_out: [a.test]\n");
    let overlays = Overlays::load(dir.path()).expect("load");
    for target in ["a.test", "not a name", "a.test:99999", ""] {
        let err = overlays.add("sb", entry(target), &base).expect_err(target);
        assert!(matches!(err, OverlayError::Invalid(_)), "{target}: {err:?}");
    }
    assert!(overlays.list().is_empty());
    assert!(!dir.path().join(FILE).exists());
}

/// A reload that makes an entry clash with the policy leaves the overlay
/// out (the sandbox is refused more, never less); the entry stays listed.
#[test]
fn an_overlay_the_policy_now_clashes_with_is_left_out() {
    let overlays = Overlays::in_memory();
    let before = policy("network:\n  unmatched: deny\n");
    overlays.add("sb", entry("a.test"), &before).expect("added");
    let after = policy("network:\n  unmatched: deny\n  deny_out: [a.test]\n");
    assert!(overlays.network("sb", &after).is_none());
    assert_eq!(overlays.list()["sb"].len(), 1);
}

#[test]
fn an_unwritable_state_dir_refuses_the_change() {
    let dir = tempfile::tempdir().expect("tempdir");
    let state = dir.path().join("state");
    let overlays = Overlays::load(&state).expect("nothing to read");
    // The state directory is a file by the time the change is saved.
    std::fs::write(&state, "").expect("write");
    let base = policy("{}\n");
    let err = overlays
        .add("sb", entry("a.test"), &base)
        .expect_err("cannot save");
    assert!(matches!(err, OverlayError::Save { .. }), "{err:?}");
    assert!(overlays.list().is_empty(), "not added when not saved");
}

//! `ask_out`, `network.unmatched` and overlays: which connections a person
//! is asked about, and what the DNS gate answers for them.

use super::tests::tls;
use super::*;
use crate::policy::ssrf::IpClass;

fn short(text: &str) -> raw::Target {
    raw::Target::Short(text.into())
}

fn list(targets: &str) -> Vec<raw::Target> {
    targets.split_whitespace().map(short).collect()
}

fn network(allow: &str, ask: &str, deny: &str, unmatched: raw::Unmatched) -> raw::Network {
    raw::Network {
        allow_out: list(allow),
        ask_out: list(ask),
        deny_out: list(deny),
        unmatched,
        ..raw::Network::default()
    }
}

fn ask(rule: &str) -> NetVerdict {
    NetVerdict::Ask { rule: rule.into() }
}

fn ok(rule: &str) -> NetVerdict {
    NetVerdict::Allow { rule: rule.into() }
}

fn by_rule(rule: &str) -> NetVerdict {
    NetVerdict::Deny {
        reason: NetDenyReason::DeniedByRule,
        rule: rule.into(),
    }
}

#[test]
fn asked_destinations_are_those_ask_out_or_unmatched_name() {
    use raw::Unmatched::{Allow, Ask, Deny};
    let public = "93.184.216.34:443";
    #[rustfmt::skip]
    let cases = [
        // (allow_out, ask_out, deny_out, unmatched, destination, sni, verdict)
        ("a.test", "b.test", "", Allow, public, "b.test", ask("network.ask_out[0]")),
        ("a.test", "b.test", "", Allow, public, "a.test", ok("network.allow_out[0]")),
        ("a.test", "b.test", "", Allow, public, "z.test", ok("network.default_allow")),
        ("a.test", "", "", Ask, public, "z.test", ask("network.unmatched")),
        ("a.test", "", "", Ask, public, "a.test", ok("network.allow_out[0]")),
        ("a.test", "", "", Ask, public, "", ask("network.unmatched")),
        ("a.test", "", "", Deny, public, "z.test", by_rule("network.unmatched")),
        // A written catch-all outranks `unmatched`.
        ("", "", "ALL_TRAFFIC", Ask, public, "z.test", by_rule("network.deny_out[0]")),
        // Most specific first: an asked wildcard, an allowed name below it,
        // a denied name below it.
        ("x.c.test", "*.c.test:443", "y.c.test", Deny, public, "x.c.test", ok("network.allow_out[0]")),
        ("x.c.test", "*.c.test:443", "y.c.test", Deny, public, "w.c.test", ask("network.ask_out[0]")),
        ("x.c.test", "*.c.test:443", "y.c.test", Deny, public, "y.c.test", by_rule("network.deny_out[0]")),
        ("x.c.test", "*.c.test:443", "y.c.test", Deny, "93.184.216.34:80", "w.c.test", by_rule("network.unmatched")),
        // Asking never reaches past the SSRF guard.
        ("", "b.test", "", Ask, "10.0.0.1:443", "b.test", NetVerdict::Deny { reason: NetDenyReason::Ssrf(IpClass::Private), rule: SSRF_GUARD.into() }),
    ];
    for (allow, asked, deny, unmatched, to, sni, want) in cases {
        let raw = network(allow, asked, deny, unmatched);
        let policy = NetworkPolicy::compile(&raw).expect("compiles");
        assert_eq!(
            tls(&policy, to, sni),
            want,
            "{allow} | {asked} | {deny} | {unmatched:?}: {sni} at {to}"
        );
        // Learn mode lets an asked connection through, noted.
        if let NetVerdict::Ask { rule } = want {
            let learning = NetworkPolicy::compile(&raw)
                .expect("compiles")
                .learning(true);
            assert_eq!(tls(&learning, to, sni), NetVerdict::WouldAsk { rule });
        }
    }
}

/// The DNS gate answers an asked name, so the connection it is asked for
/// can be made and parked; `unmatched: deny` refuses like `ALL_TRAFFIC`.
#[test]
fn asked_names_resolve() {
    use raw::Unmatched::{Ask, Deny};
    let asking = NetworkPolicy::compile(&network("", "b.test", "", Deny)).expect("compiles");
    assert_eq!(
        asking.name_decision("b.test"),
        NameDecision::Allow {
            rule: "network.ask_out[0]".into()
        }
    );
    assert_eq!(
        asking.name_decision("z.test"),
        NameDecision::Deny {
            rule: "network.unmatched".into()
        }
    );
    let unmatched = NetworkPolicy::compile(&network("", "", "", Ask)).expect("compiles");
    assert_eq!(
        unmatched.name_decision("z.test"),
        NameDecision::Allow {
            rule: "network.unmatched".into()
        }
    );
}

#[test]
fn ask_out_takes_targets_and_ports_only() {
    let raw = raw::Network {
        ask_out: vec![raw::Target::Full(raw::TargetSpec {
            to: "b.test".into(),
            ports: vec![443],
            methods: Some(vec!["GET".into()]),
            paths: None,
            access: None,
            binaries: None,
        })],
        ..raw::Network::default()
    };
    let errors = NetworkPolicy::compile(&raw).expect_err("refused");
    assert_eq!(errors[0].path, "network.ask_out[0].methods", "{errors:?}");
    assert!(errors[0].message.contains("ask_out"), "{errors:?}");

    let raw = network("", "b.test:443", "b.test:443", raw::Unmatched::Allow);
    let errors = NetworkPolicy::compile(&raw).expect_err("refused");
    assert_eq!(errors[0].path, "network.deny_out[0]", "{errors:?}");
    assert!(
        errors[0].message.contains("network.ask_out[0]"),
        "{errors:?}"
    );
}

/// Overlay entries rank as allow rules written after the policy's own:
/// they answer what the policy asks about or leaves to its catch-all, a
/// written rule of the same specificity still wins, and each carries its
/// own label.
#[test]
fn overlay_entries_allow_what_they_name_and_no_more() {
    let raw = network(
        "a.test",
        "*.b.test",
        "x.b.test ALL_TRAFFIC",
        raw::Unmatched::Allow,
    );
    let overlay = list("y.b.test:443 z.test x.b.test:443 203.0.113.0/24");
    let policy = NetworkPolicy::compile_with(&raw, &overlay).expect("compiles");
    #[rustfmt::skip]
    let cases = [
        ("93.184.216.34:443", "y.b.test", ok("overlay.allow_out[0]")),
        ("93.184.216.34:80", "y.b.test", ask("network.ask_out[0]")),
        ("93.184.216.34:443", "z.test", ok("overlay.allow_out[1]")),
        ("93.184.216.34:443", "x.b.test", by_rule("network.deny_out[0]")),
        ("203.0.113.5:443", "q.test", ok("overlay.allow_out[3]")),
        ("93.184.216.34:443", "a.test", ok("network.allow_out[0]")),
        ("93.184.216.34:443", "q.test", by_rule("network.deny_out[1]")),
    ];
    for (to, sni, want) in cases {
        assert_eq!(tls(&policy, to, sni), want, "{sni} at {to}");
    }
    assert_eq!(
        policy.name_decision("z.test"),
        NameDecision::Allow {
            rule: "overlay.allow_out[1]".into()
        }
    );
    // An entry the policy already lists is refused, naming both.
    let errors = NetworkPolicy::compile_with(&raw, &list("a.test")).expect_err("duplicate");
    assert_eq!(errors[0].path, "overlay.allow_out[0]");
    assert!(
        errors[0].message.contains("network.allow_out[0]"),
        "{errors:?}"
    );
}

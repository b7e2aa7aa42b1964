//! The explicit proxy listener's pure parts: pending places by source,
//! and what an undecrypted tunnel may carry.

use super::*;

#[test]
fn pending_places_are_shared_by_ipv4_address_and_ipv6_slash_64() {
    let key = |s: &str| source_key(s.parse().expect("address")).to_string();
    let cases = [
        ("192.0.2.7", "192.0.2.7"),
        ("::ffff:192.0.2.7", "192.0.2.7"),
        ("2001:db8:1:2:aaaa:bbbb:cccc:dddd", "2001:db8:1:2::"),
        ("2001:db8:1:2::1", "2001:db8:1:2::"),
        ("2001:db8:1:3::1", "2001:db8:1:3::"),
        ("::1", "::"),
        ("fe80::1", "fe80::"),
    ];
    for (source, want) in cases {
        assert_eq!(key(source), want, "{source}");
    }
}

/// A tunnel the policy does not decrypt is decided on what it carries;
/// a hello offering ECH is refused under `encrypted_client_hello:
/// refuse` with or without an SNI (without one, the tunnel's granted
/// name still decides it is not decrypted).
#[test]
fn an_undecrypted_tunnel_refuses_ech_with_or_without_an_sni() {
    let raw: crate::policy::raw::Policy = serde_yaml::from_str(
        "network:\n  deny_out: [evil.test]\n  ssrf_guard: false\n  decide_without_decryption: false\n  passthrough: [pinned.test]\n  encrypted_client_hello: refuse\n",
    )
    .expect("policy yaml");
    let policy =
        Arc::new(crate::policy::compiled::CompiledPolicy::compile("p", &raw).expect("compiles"));
    assert!(!policy.network.intercepts(Some("pinned.test")));
    let who = Who {
        identity: None,
        sandbox: Arc::from("vm-1"),
        session: None,
        policy,
        dns: Arc::new(NoDns),
        dry_run: false,
        tools: None,
        process: None,
        overlay: None,
    };
    let dst: SocketAddr = "127.0.0.1:443".parse().expect("addr");
    for sni in [Some("pinned.test".to_owned()), None] {
        let plain = Sniffed::Tls {
            sni: sni.clone(),
            ech: false,
        };
        assert!(carried(&who, dst, "pinned.test", &plain).is_ok(), "{sni:?}");
        let ech = Sniffed::Tls {
            sni: sni.clone(),
            ech: true,
        };
        let refusal = carried(&who, dst, "pinned.test", &ech).expect_err("refused");
        assert_eq!(refusal.reason, "encrypted_client_hello", "{sni:?}");
    }
}

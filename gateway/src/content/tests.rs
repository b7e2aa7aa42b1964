use super::*;
use crate::policy::raw;
use vault::Vaults;

fn stages(yaml: &str) -> Stages {
    let raw: raw::Policy = serde_yaml::from_str(yaml).expect("policy yaml");
    Stages::build(&raw.pii, &raw.injection_defense, &raw.transformations).expect("stages build")
}

const JSON: Option<&str> = Some("application/json");

#[test]
fn pii_actions_redact_block_or_log() {
    let vault = Vaults::default().session("sb", Some("s"));
    let email = "ana@example.com";
    let body =
        format!(r#"{{"messages":[{{"role":"user","content":"mail {email} ssn 123-45-6789"}}]}}"#);
    // (policy, refused kinds, body keeps the email)
    let cases: [(&str, Option<Vec<&str>>, bool); 4] = [
        ("pii: {enabled: true}", None, false),
        (
            "pii: {enabled: true, actions: {ssn: block}}",
            Some(vec!["ssn"]),
            true,
        ),
        ("pii: {enabled: true, action: log_only}", None, true),
        ("pii: {enabled: false}", None, true),
    ];
    for (yaml, refused, keeps) in cases {
        let stages = stages(yaml);
        let out = inspect(
            &stages,
            true,
            &Rules::default(),
            &vault,
            "p",
            JSON,
            body.as_bytes(),
        );
        match (&out.refusal, &refused) {
            (Some(Refusal::Pii { kinds, rule }), Some(expected)) => {
                assert_eq!(kinds, expected, "{yaml}");
                assert_eq!(rule, "p:pii.actions.ssn");
            }
            (None, None) => {}
            (got, _) => panic!("{yaml}: refusal {got:?}"),
        }
        if refused.is_none() {
            let forwarded = out.rewritten.as_deref().unwrap_or(body.as_bytes());
            let text = String::from_utf8_lossy(forwarded);
            assert_eq!(text.contains(email), keeps, "{yaml}: {text}");
            // Still valid JSON after redaction.
            serde_json::from_slice::<serde_json::Value>(forwarded).expect("valid JSON");
        }
    }
}

#[test]
fn json_escaped_values_are_stored_unescaped_for_rehydration() {
    let vault = Vaults::default().session("sb", None);
    let stages = stages("pii: {enabled: true, types: [email]}");
    let body = br#"{"content":"write to ana\u0040example.com"}"#;
    // Declared JSON, or sniffed as JSON without a Content-Type.
    for content_type in [JSON, None] {
        let out = inspect(
            &stages,
            true,
            &Rules::default(),
            &vault,
            "p",
            content_type,
            body,
        );
        let forwarded = out.rewritten.expect("redacted");
        let tokens: Vec<&str> = std::str::from_utf8(&forwarded)
            .expect("utf-8")
            .split('"')
            .filter(|s| s.contains("[pii_email_"))
            .collect();
        assert_eq!(tokens.len(), 1, "{}", String::from_utf8_lossy(&forwarded));
        let token = &tokens[0]["write to ".len()..];
        let restored = vault
            .needles(false)
            .replace_all(token.as_bytes())
            .expect("known token");
        assert_eq!(restored, b"ana@example.com", "{content_type:?}");
    }
}

#[test]
fn form_values_are_stored_percent_decoded() {
    assert_eq!(
        original_value(&Format::Form, b"ana%40example.com"),
        b"ana@example.com"
    );
    assert_eq!(original_value(&Format::Text, b"a%40b"), b"a%40b");
    assert_eq!(percent_decode(b"a+b%2"), b"a b%2");
}

#[test]
fn request_transformations_apply_after_redaction() {
    let vault = Vaults::default().session("sb", None);
    let yaml = "pii: {enabled: true, types: [email]}\n\
                transformations: [{pattern: 'codename \\w+', replacement: 'codename X'}]";
    let stages = stages(yaml);
    let rules = stages.transforms.rules("any", raw::Direction::Request);
    let out = inspect(
        &stages,
        true,
        &rules,
        &vault,
        "p",
        Some("text/plain"),
        b"codename apollo for bo@example.com",
    );
    let text = String::from_utf8(out.rewritten.expect("rewritten")).expect("utf-8");
    assert!(text.starts_with("codename X for [pii_email_"), "{text}");
}

/// Which requests injection scoring reads: under the default
/// `requests: llm_apis`, the common model APIs' generation endpoints and
/// the operator's listed hosts and path prefixes; under `all`, every one.
#[test]
fn injection_scores_model_api_requests_unless_told_all() {
    #[rustfmt::skip]
    let cases = [
        ("injection_defense: true", "api.openai.com", "/v1/chat/completions", true),
        ("injection_defense: true", "api.anthropic.com", "/v1/messages?beta=1", true),
        ("injection_defense: true", "registry.npmjs.org", "/left-pad", false),
        ("injection_defense: true", "upload.pypi.org", "/legacy/", false),
        ("injection_defense: {enabled: true, requests: all}", "upload.pypi.org", "/legacy/", true),
        ("injection_defense: {enabled: true, hosts: ['*.corp.test']}", "llm.corp.test", "/run", true),
        ("injection_defense: {enabled: true, hosts: ['*.corp.test']}", "corp.test", "/run", false),
        ("injection_defense: {enabled: true, paths: [/agents/]}", "x.test", "/agents/run?q=1", true),
        ("injection_defense: {enabled: true, paths: [/agents/]}", "x.test", "/agent", false),
        ("injection_defense: false", "api.openai.com", "/v1/chat/completions", false),
    ];
    for (yaml, host, path, scored) in cases {
        let stages = stages(yaml);
        assert_eq!(
            stages.scores_injection(host, path),
            scored,
            "{yaml} {host}{path}"
        );
        assert_eq!(
            stages.inspects_request(host, path),
            scored,
            "{yaml} {host}{path}"
        );
    }
}

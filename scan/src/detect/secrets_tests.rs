use super::*;

/// Runs every shape whose anchor occurs in `text` and returns the first hit.
fn find(text: &str) -> Option<(Kind, &str)> {
    let bytes = text.as_bytes();
    for shape in Shape::ALL {
        for anchor in shape.anchors() {
            let mut from = 0;
            while let Some(i) = text[from..].find(anchor).map(|k| from + k) {
                if let Some((kind, s, e)) = detect(shape, bytes, i) {
                    return Some((kind, &text[s..e]));
                }
                from = i + 1;
            }
        }
    }
    None
}

#[test]
fn positives() {
    let pem = "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA0Z3VS5JJcds3xfn\n-----END RSA PRIVATE KEY-----";
    let cases: &[(&str, Kind, &str)] = &[
        (
            "export AWS_ACCESS_KEY_ID=AKIAIOSFODNN7EXAMPLE",
            Kind::AwsAccessKey,
            "AKIAIOSFODNN7EXAMPLE",
        ),
        (
            "ASIAY34FZKBOKMUTVV7A.",
            Kind::AwsAccessKey,
            "ASIAY34FZKBOKMUTVV7A",
        ),
        (
            "use token ghp_sruUav0V4T6eVEpm8mLYs58eyzGuOXPYUa2h",
            Kind::GithubToken,
            "ghp_sruUav0V4T6eVEpm8mLYs58eyzGuOXPYUa2h",
        ),
        (
            "github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123",
            Kind::GithubToken,
            "github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123",
        ),
        (
            "my key is sk-proj-HmJn2MGMPFiAJbxB8giFT3BlbkFJBuhPDIBqaDxas5uUjzvI",
            Kind::OpenaiKey,
            "sk-proj-HmJn2MGMPFiAJbxB8giFT3BlbkFJBuhPDIBqaDxas5uUjzvI",
        ),
        (
            "sk-proj-Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4zAb7cDe0fGh3iJk6lMn9oPq2rSt5uVw8xYz1",
            Kind::OpenaiKey,
            "sk-proj-Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4zAb7cDe0fGh3iJk6lMn9oPq2rSt5uVw8xYz1",
        ),
        (
            "x-api-key: sk-ant-api03-jjcbLT_8tmPjwwtsONnLqAseOAwM3ugFGi53G46bYRvH-d1chTrqrHJYZwlD-awO4CEO_9C0RJCgjVuANMMVv7kpWwtG2AA",
            Kind::AnthropicKey,
            "sk-ant-api03-jjcbLT_8tmPjwwtsONnLqAseOAwM3ugFGi53G46bYRvH-d1chTrqrHJYZwlD-awO4CEO_9C0RJCgjVuANMMVv7kpWwtG2AA",
        ),
        (
            "SLACK_TOKEN=xoxb-771692410408-1271246666635-A7oxI1LTSS77OsvFAhMvOAjJ.",
            Kind::SlackToken,
            "xoxb-771692410408-1271246666635-A7oxI1LTSS77OsvFAhMvOAjJ",
        ),
        (
            "post to https://hooks.slack.com/services/T0123ABCD/B0456EFGH/abcdEFGHijklMNOPqrstUVWX now",
            Kind::SlackToken,
            "https://hooks.slack.com/services/T0123ABCD/B0456EFGH/abcdEFGHijklMNOPqrstUVWX",
        ),
        (
            "stripe secret sk_live_a9mHCLbbOMp1qnlsjImrtLWq",
            Kind::StripeKey,
            "sk_live_a9mHCLbbOMp1qnlsjImrtLWq",
        ),
        (
            "rk_test_51HqLyjWDarjtT1zdp7dc",
            Kind::StripeKey,
            "rk_test_51HqLyjWDarjtT1zdp7dc",
        ),
        (
            "Bearer eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiAiMTkxNzkwNjEifQ.xoxAhSg_xX2mFFBWNdJf1ao5_OPitJ1B1yK10iY9npL",
            Kind::Jwt,
            "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiAiMTkxNzkwNjEifQ.xoxAhSg_xX2mFFBWNdJf1ao5_OPitJ1B1yK10iY9npL",
        ),
        (
            // alg none: an empty signature
            "eyJhbGciOiJub25lIn0.eyJzdWIiOiJ4In0.",
            Kind::Jwt,
            "eyJhbGciOiJub25lIn0.eyJzdWIiOiJ4In0.",
        ),
        (pem, Kind::PrivateKey, pem),
        (
            "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmU=\n\n",
            Kind::PrivateKey,
            "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmU=",
        ),
    ];
    for (text, kind, want) in cases {
        assert_eq!(find(text), Some((*kind, *want)), "{text}");
    }
}

#[test]
fn near_misses() {
    for text in [
        "AKIAIOSFODNN7EXAMPL",   // 19 characters
        "AKIAIOSFODNN7EXAMPLEX", // 21
        "XAKIAIOSFODNN7EXAMPLE", // inside a word
        "ghp_short",
        "a task-list item and a risk-free sk-1234",
        "sk-ant-short",
        "sk-proj-tooShort",
        "xoxb-nodigitsatallhere",
        "xoxb-123",
        "xoxb-", // the prefix alone, at the end
        "xoxb-- and xoxp-.",
        "sk_live_short",
        "pk_live_a9mHCLbbOMp1qnlsjImrtLWq", // publishable, not secret
        "eyJhbGciOiJIUzI1NiJ9",             // a header alone
        "eyJzdWIiOiJ4In0.eyJzdWIiOiJ4In0.sig", // header without "alg"
        "eyJhbGciOiJIUzI1NiJ9.eyJ4IjoxfQ.c2ln.ZXh0cmE", // five segments
        "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----",
        "-----BEGIN PUBLIC KEY-----\nMIIB\n-----END PUBLIC KEY-----",
        "https://hooks.slack.com/apps",
    ] {
        assert_eq!(find(text), None, "{text}");
    }
}

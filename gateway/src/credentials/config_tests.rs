use super::*;

fn parse(yaml: &str) -> Result<Vec<CredentialConfig>, serde_yaml::Error> {
    serde_yaml::from_str(yaml)
}

#[test]
fn yaml_shapes() {
    let yaml = r#"
- name: a
  source: {file: /run/a}
  hosts: [api.a.com]
  scheme: {type: bearer}
- name: b
  source: {env: B_KEY}
  hosts: ["*.b.com"]
  scheme: {type: header, name: x-api-key, template: "Token {secret}"}
  placeholder: {prefix: "sk-", length: 40}
- name: c
  source: {file: /run/c}
  hosts: [c.com]
  scheme: {type: query, param: key}
- name: d
  source: {env: D}
  hosts: [d.com]
  scheme: {type: basic, username: bot}
"#;
    let got = parse(yaml).expect("valid yaml");
    assert_eq!(
        got[0].source,
        Source::File {
            path: "/run/a".into()
        }
    );
    assert_eq!(got[0].scheme, SchemeConfig::Bearer);
    assert_eq!(got[0].placeholder, PlaceholderShape::default());
    assert_eq!(
        got[1].source,
        Source::Env {
            var: "B_KEY".into()
        }
    );
    assert_eq!(
        got[1].scheme,
        SchemeConfig::Header {
            name: "x-api-key".into(),
            template: "Token {secret}".into()
        }
    );
    assert_eq!(got[1].placeholder.prefix.as_deref(), Some("sk-"));
    assert_eq!(got[1].placeholder.length, Some(40));
    assert_eq!(
        got[2].scheme,
        SchemeConfig::Query {
            param: "key".into()
        }
    );
    assert_eq!(
        got[3].scheme,
        SchemeConfig::Basic {
            username: "bot".into()
        }
    );
    validate(&got).expect("valid config");
}

#[test]
fn systemd_credential_source() {
    let got = parse(
        "- name: a\n  source: {systemd_credential: openai}\n  hosts: [a.com]\n  scheme: {type: bearer}\n",
    )
    .expect("valid yaml");
    assert_eq!(
        got[0].source,
        Source::SystemdCredential {
            name: "openai".into()
        }
    );
    validate(&got).expect("valid config");
    let err = parse(
        "- name: a\n  source: {systemd_credential: a/b}\n  hosts: [a.com]\n  scheme: {type: bearer}\n",
    )
    .expect_err("a path");
    assert!(err.to_string().contains("not a path"), "{err}");
}

#[test]
fn unknown_fields_are_rejected() {
    let base = "name: a\nhosts: [a.com]\n";
    let cases = [
        "source: {file: /x}\nscheme: {type: bearer}\nextra: 1\n",
        "source: {file: /x, env: Y}\nscheme: {type: bearer}\n",
        "source: {url: /x}\nscheme: {type: bearer}\n",
        "source: {}\nscheme: {type: bearer}\n",
        "source: {file: /x, systemd_credential: y}\nscheme: {type: bearer}\n",
        "source: {systemd_credential: ../etc/shadow}\nscheme: {type: bearer}\n",
        "source: {systemd_credential: ..}\nscheme: {type: bearer}\n",
        "source: /x\nscheme: {type: bearer}\n",
        "source: {file: /x}\nscheme: {type: bearer, extra: 1}\n",
        "source: {file: /x}\nscheme: {type: bearer, param: k}\n",
        "source: {file: /x}\nscheme: {type: header, name: x-k}\n",
        "source: {file: /x}\nscheme: {type: basic}\n",
        "source: {file: /x}\nscheme: {type: query, param: k, username: u}\n",
        "source: {file: /x}\nscheme: {type: query, param: k, extra: 1}\n",
        "source: {file: /x}\nscheme: {type: digest}\n",
        "source: {file: /x}\nscheme: {type: bearer}\nplaceholder: {prefix: a, size: 3}\n",
    ];
    for tail in cases {
        let yaml = format!("{base}{tail}");
        assert!(
            serde_yaml::from_str::<CredentialConfig>(&yaml).is_err(),
            "{yaml}"
        );
    }
}

#[test]
fn hmac_yaml() {
    let yaml = r#"
- name: s
  source: {file: /run/s}
  hosts: [api.s.com]
  scheme:
    type: hmac
    algorithm: sha512
    header: X-Signature
    encoding: base64
    canonical: "{method}\n{path}\n{query}\n{timestamp}"
    timestamp_header: X-Timestamp
    prefix: "v1="
- name: t
  source: {file: /run/t}
  hosts: [api.t.com]
  scheme: {type: hmac, algorithm: sha256, header: x-sig, encoding: hex, canonical: "{host}{path}"}
"#;
    let got = parse(yaml).expect("valid yaml");
    assert_eq!(
        got[0].scheme,
        SchemeConfig::Hmac {
            algorithm: HmacAlgorithm::Sha512,
            header: "X-Signature".into(),
            encoding: HmacEncoding::Base64,
            canonical: "{method}\n{path}\n{query}\n{timestamp}".into(),
            timestamp_header: Some("X-Timestamp".into()),
            prefix: Some("v1=".into()),
        }
    );
    assert_eq!(
        got[1].scheme,
        SchemeConfig::Hmac {
            algorithm: HmacAlgorithm::Sha256,
            header: "x-sig".into(),
            encoding: HmacEncoding::Hex,
            canonical: "{host}{path}".into(),
            timestamp_header: None,
            prefix: None,
        }
    );
    validate(&got).expect("valid config");

    let base = "name: a\nhosts: [a.com]\nsource: {file: /x}\n";
    let ok = "algorithm: sha256, header: x-s, encoding: hex, canonical: \"{path}\"";
    let rejected = [
        format!("scheme: {{type: hmac, {ok}, extra: 1}}\n"),
        format!("scheme: {{type: hmac, {ok}, param: k}}\n"),
        format!("scheme: {{type: hmac, {ok}, name: k}}\n"),
        "scheme: {type: hmac, algorithm: sha256, header: x-s, encoding: hex}\n".into(),
        "scheme: {type: hmac, header: x-s, encoding: hex, canonical: x}\n".into(),
        "scheme: {type: hmac, algorithm: sha256, encoding: hex, canonical: x}\n".into(),
        "scheme: {type: hmac, algorithm: sha256, header: x-s, canonical: x}\n".into(),
        "scheme: {type: hmac, algorithm: md5, header: x, encoding: hex, canonical: x}\n".into(),
        "scheme: {type: hmac, algorithm: sha256, header: x, encoding: b32, canonical: x}\n".into(),
        "scheme: {type: bearer, algorithm: sha256}\n".into(),
        "scheme: {type: header, name: x, template: \"{secret}\", prefix: p}\n".into(),
        "scheme: {type: query, param: k, canonical: x}\n".into(),
        "scheme: {type: basic, username: u, header: x}\n".into(),
    ];
    for tail in rejected {
        let yaml = format!("{base}{tail}");
        assert!(
            serde_yaml::from_str::<CredentialConfig>(&yaml).is_err(),
            "{yaml}"
        );
    }
    let mut c = got[1].clone();
    c.scheme = SchemeConfig::Hmac {
        algorithm: HmacAlgorithm::Sha256,
        header: "x-sig".into(),
        encoding: HmacEncoding::Hex,
        canonical: "{method} {body}".into(),
        timestamp_header: None,
        prefix: None,
    };
    let errs = validate(&[c]).expect_err("unknown placeholder");
    assert!(errs[0].to_string().contains("{body}"), "{}", errs[0]);
}

fn cred(name: &str) -> CredentialConfig {
    CredentialConfig {
        name: name.into(),
        source: Source::Env { var: "X".into() },
        hosts: vec!["a.com".into()],
        scheme: SchemeConfig::Bearer,
        placeholder: PlaceholderShape::default(),
    }
}

#[test]
fn validation_table() {
    type Mutate = fn(&mut CredentialConfig);
    let cases: &[(&str, Mutate, &str)] = &[
        ("empty name", |c| c.name.clear(), "empty name"),
        ("bad name", |c| c.name = "a b".into(), "names may only"),
        ("no hosts", |c| c.hosts.clear(), "`hosts` is empty"),
        ("bad host", |c| c.hosts = vec!["a.*.com".into()], "`*`"),
        (
            "empty env",
            |c| c.source = Source::Env { var: String::new() },
            "empty path",
        ),
        (
            "empty systemd credential",
            |c| {
                c.source = Source::SystemdCredential {
                    name: String::new(),
                }
            },
            "empty path, variable or systemd credential",
        ),
        (
            "header template without secret",
            |c| {
                c.scheme = SchemeConfig::Header {
                    name: "x-key".into(),
                    template: "static".into(),
                }
            },
            "{secret}",
        ),
        (
            "bad prefix",
            |c| c.placeholder.prefix = Some("sk/".into()),
            "prefix",
        ),
        (
            "short length",
            |c| {
                c.placeholder = PlaceholderShape {
                    prefix: Some("sk-".into()),
                    length: Some(10),
                }
            },
            "raise `length`",
        ),
    ];
    for (what, mutate, want) in cases {
        let mut c = cred("ok");
        mutate(&mut c);
        let errs = validate(&[c]).expect_err(what);
        let msg = errs
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join("; ");
        assert!(msg.contains(want), "{what}: {msg}");
    }
}

#[test]
fn duplicates_and_many_errors_reported_together() {
    let mut bad = cred("b");
    bad.hosts.clear();
    let errs = validate(&[cred("a"), cred("a"), bad]).expect_err("invalid");
    assert_eq!(errs.len(), 2, "{errs:?}");
    assert!(matches!(errs[0], ConfigError::Duplicate(ref n) if n == "a"));
}

#[test]
fn oauth2_and_sigv4_yaml() {
    let yaml = r#"
- name: cc
  source: {file: /run/cc}
  hosts: [api.cc.com]
  scheme: {type: oauth2, grant: client_credentials, token_url: "https://auth.cc.com/token", client_id: app, client_auth: body, scope: "a b", audience: api}
- name: rt
  source: {env: RT}
  hosts: [api.rt.com]
  scheme: {type: oauth2, grant: refresh_token, token_url: "https://auth.rt.com/token", client_id: app, client_secret: {file: /run/rt-client}}
- name: s3
  source: {file: /run/aws}
  hosts: ["*.s3.amazonaws.com"]
  scheme: {type: aws_sigv4, access_key_id: {env: AKID}, region: us-east-1, service: s3}
- name: sts
  source: {file: /run/aws}
  hosts: [sts.amazonaws.com]
  scheme: {type: aws_sigv4, access_key_id: {env: AKID}, region: us-east-1, service: sts, session_token: {file: /run/tok}}
"#;
    let got = parse(yaml).expect("valid yaml");
    let SchemeConfig::OAuth2(cc) = &got[0].scheme else {
        panic!("{:?}", got[0].scheme)
    };
    assert_eq!(cc.grant, OAuthGrant::ClientCredentials);
    assert_eq!(cc.client_auth, ClientAuth::Body);
    assert_eq!(cc.scope.as_deref(), Some("a b"));
    let SchemeConfig::OAuth2(rt) = &got[1].scheme else {
        panic!("{:?}", got[1].scheme)
    };
    assert_eq!(rt.client_auth, ClientAuth::Basic, "the default");
    assert_eq!(
        got[1].scheme.extra_sources(),
        vec![(
            CLIENT_SECRET,
            &Source::File {
                path: "/run/rt-client".into()
            }
        )]
    );
    let SchemeConfig::AwsSigV4(s3) = &got[2].scheme else {
        panic!("{:?}", got[2].scheme)
    };
    assert_eq!(s3.payload, SigV4Payload::Unsigned, "s3 streams by default");
    let SchemeConfig::AwsSigV4(sts) = &got[3].scheme else {
        panic!("{:?}", got[3].scheme)
    };
    assert_eq!(
        sts.payload,
        SigV4Payload::Signed,
        "other services sign bodies"
    );
    assert_eq!(got[3].scheme.extra_sources().len(), 2);
    validate(&got).expect("valid config");

    let base = "name: a\nhosts: [a.com]\nsource: {file: /x}\n";
    let rejected = [
        "scheme: {type: oauth2, token_url: \"https://a/t\"}\n",
        "scheme: {type: oauth2, grant: client_credentials}\n",
        "scheme: {type: oauth2, grant: password, token_url: \"https://a/t\"}\n",
        "scheme: {type: oauth2, grant: refresh_token, token_url: \"https://a/t\", region: x}\n",
        "scheme: {type: oauth2, grant: refresh_token, token_url: \"https://a/t\", client_auth: jwt}\n",
        "scheme: {type: aws_sigv4, region: us-east-1, service: s3}\n",
        "scheme: {type: aws_sigv4, access_key_id: {env: A}, service: s3}\n",
        "scheme: {type: aws_sigv4, access_key_id: {env: A}, region: r, service: s, payload: maybe}\n",
        "scheme: {type: aws_sigv4, access_key_id: {env: A}, region: r, service: s, scope: x}\n",
        "scheme: {type: bearer, token_url: \"https://a/t\"}\n",
    ];
    for tail in rejected {
        let yaml = format!("{base}{tail}");
        assert!(
            serde_yaml::from_str::<CredentialConfig>(&yaml).is_err(),
            "{yaml}"
        );
    }
    let err = serde_yaml::from_str::<CredentialConfig>(&format!("{base}{}", rejected[3]))
        .expect_err("region");
    assert!(
        err.to_string().contains("`region` does not belong"),
        "{err}"
    );

    let mut bad = got[0].clone();
    if let SchemeConfig::OAuth2(o) = &mut bad.scheme {
        o.token_url = "http://auth.cc.com/token".into();
    }
    let mut empty = got[3].clone();
    if let SchemeConfig::AwsSigV4(a) = &mut empty.scheme {
        a.access_key_id = Source::Env { var: String::new() };
    }
    let errs = validate(&[bad, empty]).expect_err("invalid");
    let text = errs
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join("; ");
    assert!(text.contains("must be https"), "{text}");
    assert!(
        text.contains("empty path, variable or systemd credential"),
        "{text}"
    );
}

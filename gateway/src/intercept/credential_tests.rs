//! `Credentials::apply` end to end, without the network: what goes
//! upstream, and what a sandbox is told when it cannot.

use std::collections::BTreeMap;

use super::*;
use crate::{
    credentials::config::{
        ClientAuth, OAuth2Config, OAuthGrant, PlaceholderShape, SchemeConfig, SigV4Config,
        SigV4Payload, Source,
    },
    credentials::{CredentialConfig, Transport},
    resolve::Resolver,
};

const SANDBOX: &str = "sb";

struct Harness {
    credentials: Credentials,
    policy: Arc<CompiledPolicy>,
}

impl Harness {
    /// `configs` read their secrets from `vars`; `bindings` is the policy's
    /// `credentials:` section in YAML.
    fn new(configs: Vec<CredentialConfig>, vars: &[(&str, &str)], bindings: &str) -> Harness {
        let vars: BTreeMap<String, String> = vars
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        let store = Arc::new(CredentialStore::load(&configs, &vars).expect("credentials load"));
        let raw: crate::policy::raw::Policy =
            serde_yaml::from_str(&format!("credentials: {bindings}")).expect("policy parses");
        let mut policy = CompiledPolicy::compile("t", &raw).expect("policy compiles");
        policy.bind(&configs).expect("bindings compile");
        let policy = Arc::new(policy);
        // No static hosts and no system resolver: every token endpoint is
        // unreachable, without touching the network.
        let resolver = Resolver::static_only(&BTreeMap::new());
        let client =
            crate::outbound::Client::new(Arc::new(resolver), crate::tls::trusting_nothing());
        let endpoint = TokenEndpoint::new(client);
        let credentials =
            Credentials::new(store, Placeholders::new([7; 32])).with_token_endpoint(endpoint);
        Harness {
            credentials,
            policy,
        }
    }

    fn placeholder(&self, credential: &str) -> String {
        let store = &self.credentials.store;
        let config = store.config(credential).expect("config");
        let len = store.secret(credential).expect("secret").len();
        self.credentials
            .placeholders
            .placeholder(SANDBOX, credential, &config.placeholder, len)
    }

    /// Applies to a `method` request toward `host` with `headers` and
    /// `body`; the outcome and the body as forwarded.
    async fn apply(
        &self,
        host: &str,
        method: Method,
        headers: &[(&str, String)],
        body: &str,
    ) -> (Outcome, HeaderMap, String) {
        let mut map = HeaderMap::new();
        for (name, value) in headers {
            map.append(
                hyper::header::HeaderName::from_bytes(name.as_bytes()).expect("name"),
                HeaderValue::from_str(value).expect("value"),
            );
        }
        let mut uri: Uri = "/upload".parse().expect("uri");
        let request = Request {
            sandbox: SANDBOX,
            policy: &self.policy,
            host,
            transport: Transport::Tls,
            method: &method,
            authority: host,
        };
        let (outcome, body) = self
            .credentials
            .apply(
                request,
                &mut map,
                &mut uri,
                full(Bytes::from(body.to_owned())),
            )
            .await;
        let bytes = body.collect().await.expect("body").to_bytes();
        let text = String::from_utf8(bytes.to_vec()).expect("utf-8");
        (outcome, map, text)
    }
}

fn credential(name: &str, host: &str, var: &str, scheme: SchemeConfig) -> CredentialConfig {
    CredentialConfig {
        name: name.to_owned(),
        source: Source::Env {
            var: var.to_owned(),
        },
        hosts: vec![host.to_owned()],
        scheme,
        placeholder: PlaceholderShape::default(),
    }
}

#[tokio::test]
async fn an_unreachable_token_endpoint_is_named_by_its_credential_not_its_url() {
    let oauth = SchemeConfig::OAuth2(OAuth2Config {
        grant: OAuthGrant::ClientCredentials,
        token_url: "https://auth.test/oauth/token?tenant=acme&api_key=hunter2".into(),
        client_id: Some("app".into()),
        client_secret: None,
        client_auth: ClientAuth::Basic,
        scope: None,
        audience: None,
    });
    let h = Harness::new(
        vec![credential("billing", "api.billing.test", "CS", oauth)],
        &[("CS", "client-secret")],
        "[{credential: billing}]",
    );
    let auth = format!("Bearer {}", h.placeholder("billing"));
    let (outcome, _, _) = h
        .apply(
            "api.billing.test",
            Method::GET,
            &[("authorization", auth)],
            "",
        )
        .await;
    let Outcome::Failed {
        status,
        reason,
        credential,
        detail,
        log,
    } = outcome
    else {
        panic!("not a failure");
    };
    assert_eq!(
        (status, reason, credential.as_str()),
        (StatusCode::BAD_GATEWAY, TOKEN_ENDPOINT_FAILED, "billing")
    );
    assert!(detail.contains("credential billing"), "{detail}");
    for hidden in ["hunter2", "tenant", "auth.test", "/oauth/token"] {
        assert!(
            !detail.contains(hidden),
            "the sandbox sees {hidden:?}: {detail}"
        );
    }
    // The operator's record names the endpoint, not its query.
    assert!(log.contains("https://auth.test:443/oauth/token "), "{log}");
    assert!(log.contains("no such name"), "{log}");
    assert!(!log.contains("hunter2"), "{log}");
}

#[tokio::test]
async fn a_sigv4_placeholder_in_a_body_becomes_the_access_key_id_not_the_secret_key() {
    // An S3 browser-form POST names the key in `X-Amz-Credential`; the
    // bucket stores the form, so whatever replaces the placeholder can be
    // read back.
    let s3 = SchemeConfig::AwsSigV4(SigV4Config {
        access_key_id: Source::Env { var: "AKID".into() },
        region: "us-east-1".into(),
        service: "s3".into(),
        session_token: None,
        payload: SigV4Payload::Unsigned,
    });
    let mut config = credential("s3", "bucket.s3.test", "SECRET_KEY", s3);
    config.placeholder = PlaceholderShape {
        prefix: Some("AKIA".into()),
        length: Some(20),
    };
    let h = Harness::new(
        vec![config],
        &[
            ("SECRET_KEY", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYSECRETKEY"),
            ("AKID", "AKIAREALACCESSKEYID0"),
        ],
        "[{credential: s3, allow_in_body: true}]",
    );
    let body = format!(
        "X-Amz-Credential={}/20240101/us-east-1/s3/aws4_request",
        h.placeholder("s3")
    );
    let (outcome, headers, sent) = h.apply("bucket.s3.test", Method::POST, &[], &body).await;
    assert!(matches!(outcome, Outcome::Injected { .. }), "injected");
    assert_eq!(
        sent,
        "X-Amz-Credential=AKIAREALACCESSKEYID0/20240101/us-east-1/s3/aws4_request"
    );
    assert!(headers.contains_key("authorization"), "signed");
}

/// The redactor an injection hands out, for a bearer placeholder.
async fn bearer_needles(h: &Harness) -> Arc<Needles> {
    let auth = format!("Bearer {}", h.placeholder("api"));
    let (outcome, headers, _) = h
        .apply("api.test", Method::GET, &[("authorization", auth)], "")
        .await;
    let Outcome::Injected { needles, .. } = outcome else {
        panic!("not injected");
    };
    assert!(headers.contains_key("authorization"));
    needles
}

#[tokio::test]
async fn a_rotated_secret_is_redacted_from_the_next_request_on() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("api.key");
    std::fs::write(&path, "sk-old-0123456789abcdef\n").expect("write");
    let mut config = credential("api", "api.test", "unused", SchemeConfig::Bearer);
    config.source = Source::File { path: path.clone() };
    let h = Harness::new(vec![config], &[], "[{credential: api}]");
    let redacts = |n: &Needles, s: &str| n.replace_all(s.as_bytes()).is_some();

    let before = bearer_needles(&h).await;
    assert!(Arc::ptr_eq(&before, &bearer_needles(&h).await), "kept");
    assert!(redacts(&before, "sk-old-0123456789abcdef"));

    // Rotated by renaming a new file over the old one.
    let next = dir.path().join("api.key.new");
    std::fs::write(&next, "sk-new-fedcba9876543210\n").expect("write");
    std::fs::rename(&next, &path).expect("rename");
    h.credentials.reload();
    let after = bearer_needles(&h).await;
    assert!(redacts(&after, "x sk-new-fedcba9876543210 y"));
    assert!(!redacts(&after, "sk-old-0123456789abcdef"));
    // What was handed out before the rotation still redacts the old one.
    assert!(redacts(&before, "sk-old-0123456789abcdef"));
}

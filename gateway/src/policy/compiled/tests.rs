use super::*;

fn policy(yaml: &str) -> raw::Policy {
    match serde_yaml::from_str(yaml) {
        Ok(p) => p,
        Err(e) => panic!("test policy does not parse: {e}\n{yaml}"),
    }
}

/// (path, message fragment, hint fragment) of every error.
fn errors(yaml: &str) -> Vec<(String, String, String)> {
    match CompiledPolicy::compile("t", &policy(yaml)) {
        Ok(_) => Vec::new(),
        Err(errors) => errors
            .into_iter()
            .map(|e| (e.path, e.message, e.hint.unwrap_or_default()))
            .collect(),
    }
}

#[test]
fn valid_policies_compile() {
    let cases = [
        "{}",
        "pii: {enabled: true, types: [email, ssn], actions: {ssn: block}}",
        "pii: {actions: {jwt: log_only, credit_card: block}}",
        "injection_defense: {threshold: 0}",
        "injection_defense: {threshold: 1}",
        "transformations: [{pattern: 'a(b)(?P<x>c)', replacement: '$1 ${x} $0 $$5 ${1}z $ end'}]",
        "transformations: [{pattern: 'gpt-4', replacement: 'gpt-4o', direction: both, hosts: [api.openai.com]}]",
        "credentials: [{credential: gh}, {credential: openai, hosts: [api.openai.com]}]",
        "apps: [{app: tracker, actions: {'*': ask, issues.create: auto}}, {app: mail}]",
    ];
    for yaml in cases {
        assert_eq!(errors(yaml), Vec::new(), "{yaml}");
    }
    let compiled = match CompiledPolicy::compile(
        "t",
        &policy("transformations: [{pattern: 'a+', replacement: b}]"),
    ) {
        Ok(c) => c,
        Err(e) => panic!("{e:?}"),
    };
    assert_eq!(compiled.name, "t");
    assert_eq!(
        compiled.transformations[0].pattern.replace_all("caab", "b"),
        "cbb"
    );
}

#[test]
fn invalid_sections_are_reported_with_paths() {
    /// (path, message fragment, hint fragment)
    type Expected = (&'static str, &'static str, &'static str);
    let cases: &[(&str, &[Expected])] = &[
        (
            "pii: {types: [email, creditcard, nope]}",
            &[
                (
                    "pii.types[1]",
                    "unknown PII type `creditcard`",
                    "did you mean `credit_card`?",
                ),
                (
                    "pii.types[2]",
                    "unknown PII type `nope`",
                    "supported types: email, phone",
                ),
            ],
        ),
        (
            "pii: {actions: {emial: block}}",
            &[(
                "pii.actions.emial",
                "unknown PII type",
                "did you mean `email`?",
            )],
        ),
        (
            "pii: {types: [email], actions: {ssn: block}}",
            &[("pii.actions.ssn", "not in `pii.types`", "add `ssn`")],
        ),
        (
            "pii: {oversize: {inspect_bytes: 0}}",
            &[("pii.oversize.inspect_bytes", "greater than 0", "4 MiB")],
        ),
        (
            "injection_defense: {threshold: 1.5}",
            &[("injection_defense.threshold", "1.5 is outside 0..=1", "0.8")],
        ),
        (
            "injection_defense: {threshold: -0.1}",
            &[("injection_defense.threshold", "outside", "")],
        ),
        (
            "injection_defense: {threshold: .nan}",
            &[("injection_defense.threshold", "NaN is outside", "")],
        ),
        (
            "transformations: [{pattern: ok, replacement: x}, {pattern: '(foo', replacement: x}]",
            &[(
                "transformations[1].pattern",
                "invalid regex: unclosed group",
                "at character 1 of the pattern",
            )],
        ),
        (
            "transformations: [{pattern: '(?=x)', replacement: x}]",
            &[(
                "transformations[0].pattern",
                "look-around",
                "Rust regex syntax",
            )],
        ),
        (
            "transformations: [{pattern: 'a{9999999}', replacement: x}]",
            &[(
                "transformations[0].pattern",
                "regex compiles to more than",
                "repetition",
            )],
        ),
        (
            "transformations: [{pattern: '(a)', replacement: '$2'}]",
            &[(
                "transformations[0].replacement",
                "`$2` refers to group 2",
                "groups 0 to 1",
            )],
        ),
        (
            "transformations: [{pattern: '(a)', replacement: '$1a'}]",
            &[(
                "transformations[0].replacement",
                "`$1a`",
                "write `${1}a` for group 1",
            )],
        ),
        (
            "transformations: [{pattern: '(?P<model>a)', replacement: '${modle}'}]",
            &[(
                "transformations[0].replacement",
                "`${modle}`",
                "did you mean `model`?",
            )],
        ),
        (
            "transformations: [{pattern: 'a', replacement: '$name ${x'}]",
            &[
                (
                    "transformations[0].replacement",
                    "`$name`",
                    "no named groups",
                ),
                ("transformations[0].replacement", "never closed", "`$$`"),
            ],
        ),
        (
            "transformations: [{pattern: a, replacement: b, hosts: ['']}]",
            &[("transformations[0].hosts[0]", "empty destination", "")],
        ),
        (
            // Checked as the rule's host set is built: such a rule used to
            // be left out silently when its stage was built.
            "transformations: [{pattern: a, replacement: b, hosts: [ok.test, 'api.*.com', 'a b', '10.0.0.0/8', 'x.test:443']}]",
            &[
                (
                    "transformations[0].hosts[1]",
                    "only allowed as a whole leading label",
                    "`*.example.com`",
                ),
                (
                    "transformations[0].hosts[2]",
                    "not allowed in a host name",
                    "`api.example.com`",
                ),
            ],
        ),
        (
            "credentials: [{credential: gh}, {credential: ''}, {credential: gh}]",
            &[
                ("credentials[1].credential", "empty credential name", ""),
                ("credentials[2].credential", "bound twice", "credentials[0]"),
            ],
        ),
        (
            "credentials: [{credential: gh, hosts: [' ']}]",
            &[("credentials[0].hosts[0]", "empty destination", "")],
        ),
        (
            "apps: [{app: ''}, {app: a}, {app: a, actions: {'': ask}}]",
            &[
                ("apps[0].app", "empty app name", ""),
                ("apps[2].app", "listed twice", "apps[1]"),
                ("apps[2].actions.", "empty action name", "`*`"),
            ],
        ),
    ];
    for (yaml, want) in cases {
        let got = errors(yaml);
        assert_eq!(got.len(), want.len(), "{yaml}: {got:?}");
        for ((path, message, hint), (want_path, want_message, want_hint)) in got.iter().zip(*want) {
            assert_eq!(path, want_path, "{yaml}");
            assert!(message.contains(want_message), "{yaml}: {message}");
            assert!(hint.contains(want_hint), "{yaml}: {hint}");
        }
    }
}

#[test]
fn errors_of_all_sections_come_together() {
    let got = errors(
        "pii: {types: [x]}\ninjection_defense: {threshold: 2}\ntransformations: [{pattern: '(', replacement: ''}]\napps: [{app: ''}]",
    );
    let paths: Vec<&str> = got.iter().map(|(p, ..)| p.as_str()).collect();
    assert_eq!(
        paths,
        [
            "pii.types[0]",
            "injection_defense.threshold",
            "transformations[0].pattern",
            "apps[0].app"
        ]
    );
}

#[test]
fn stages_that_never_see_https_under_a_relay_policy() {
    let relay = "network: {decide_without_decryption: true}\n";
    let decrypt = "network: {decide_without_decryption: false}\n";
    let cases: &[(&str, &str, &[&str])] = &[
        (relay, "", &[]),
        (
            relay,
            "pii: {enabled: false}\ninjection_defense: {enabled: false}",
            &[],
        ),
        (relay, "pii: {enabled: true}", &["pii"]),
        (
            relay,
            "injection_defense: {enabled: true}\ndry_run: true",
            &["dry_run", "injection_defense"],
        ),
        (
            relay,
            "transformations: [{pattern: a, replacement: b}]\ncredentials: [{credential: gh}]\napps: [{app: mail}]",
            &["apps", "credentials", "transformations"],
        ),
        // Decrypted, every stage sees HTTPS too (but for `passthrough`
        // names, which the operator named so).
        (decrypt, "pii: {enabled: true}\ndry_run: true", &[]),
    ];
    for &(network, stages, want) in cases {
        let yaml = format!("{network}{stages}");
        let compiled = match CompiledPolicy::compile("t", &policy(&yaml)) {
            Ok(c) => c,
            Err(e) => panic!("{yaml}: {e:?}"),
        };
        assert_eq!(compiled.stages_on_plain_http_only(), want, "{yaml}");
    }
}

/// Compiling builds every content stage the policy configures, so a
/// request under it builds nothing; what it does not configure is absent.
#[test]
fn a_compiled_policy_holds_its_built_stages() {
    let compile = |yaml: &str| match CompiledPolicy::compile("t", &policy(yaml)) {
        Ok(c) => c,
        Err(e) => panic!("{yaml}: {e:?}"),
    };
    let none = compile("{}");
    assert!(none.content.pii.is_none() && none.content.injection.is_none());
    assert!(!none.content.inspects());
    let all = compile(
        "pii: {enabled: true, types: [email], oversize: {inspect_bytes: 10}}\n\
         injection_defense: {enabled: true}\n\
         transformations: [{pattern: 'a+', replacement: b, hosts: ['*.example.com']}]",
    );
    assert!(all.content.pii.is_some() && all.content.injection.is_some());
    assert_eq!(
        all.content.inspect_bytes().map(|o| o.inspect_bytes),
        Some(10)
    );
    let rules = |host| all.content.transforms.rules(host, raw::Direction::Request);
    assert_eq!(rules("api.example.com").apply(b"caab").as_ref(), b"cbb");
    assert!(rules("example.org").is_empty());
}

#[test]
fn the_pii_types_are_the_scanners_kinds() {
    // Moved from the scanner's `kind` tests when the scanners became their
    // own crate: the policy's list and the scanner's kinds are one list.
    let names: Vec<&str> = sluice_scan::Kind::ALL.iter().map(|k| k.as_str()).collect();
    assert_eq!(names, PII_TYPES);
}

/// An `allow_out` rule with methods or paths reads requests: unset,
/// `decide_without_decryption` then decrypts (naming the rule's list as
/// the reason), and the ports it covers have their first bytes read even
/// where nothing else would read them.
#[test]
fn a_rule_with_methods_or_paths_reads_its_requests() {
    let compiled = |yaml: &str| match CompiledPolicy::compile("t", &policy(yaml)) {
        Ok(c) => c,
        Err(e) => panic!("{yaml}: {e:?}"),
    };
    let unset = compiled("network: {allow_out: [{to: 10.0.0.0/8, access: read_only}]}\n");
    assert!(!unset.network.decide_without_decryption());
    assert_eq!(unset.decrypted_for, Some("network.allow_out"));
    assert_eq!(unset.first_bytes_reader(22), Some("network.allow_out"));
    let plain = compiled(
        "network: {allow_out: [{to: 10.0.0.0/8, ports: [80], methods: [GET]}, 10.1.0.0/16], decide_without_decryption: true}\n",
    );
    assert_eq!(plain.first_bytes_reader(80), Some(REQUEST_RULES));
    assert_eq!(plain.first_bytes_reader(22), None);
    let none = compiled("network: {allow_out: [{to: 10.0.0.0/8, ports: [80]}]}\n");
    assert!(none.network.decide_without_decryption());
    assert_eq!(none.first_bytes_reader(80), None);
}

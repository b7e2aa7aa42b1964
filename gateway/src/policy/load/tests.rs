use super::diagnostic::explain;
use super::*;
use crate::apps::Catalogue;
use crate::credentials::CredentialConfig;

fn parse(text: &str) -> Result<CompiledPolicy, Vec<Diagnostic>> {
    parse_policy(Path::new("p.yaml"), "p", text, Against::default())
}

#[test]
fn valid_documents_load() {
    let cases = [
        "{}",
        "description: empty\n",
        "network:\n  allow_out: [example.com:443]\n  deny_out: [ALL_TRAFFIC]\n",
        "dry_run: true\naudit: {log_allowed: false}\n",
        "# only a comment\n{}\n",
        "network:\n  allow_out: [10.0.0.0/8]\n  deny_out: [ALL_TRAFFIC]\n  dns:\n    resolve_unlisted: true\n    max_unique_unlisted_per_minute: 5\n",
    ];
    for text in cases {
        if let Err(e) = parse(text) {
            panic!("{text:?}: {e:?}");
        }
    }
}

#[test]
fn errors_are_located_and_explained() {
    /// (line, column, message fragment, hint fragment)
    type Expected = (usize, usize, &'static str, &'static str);
    let cases: &[(&str, &[Expected])] = &[
        ("", &[(1, 1, "empty", "`{}`")]),
        ("- a\n", &[(1, 1, "not a list", "")]),
        ("network: [\n", &[(2, 1, "invalid YAML", "")]),
        (
            "a: 1\n---\nb: 2\n",
            &[(1, 1, "more than one document", "remove the `---`")],
        ),
        (
            "audit: {}\nnetwork:\n  ssrf_guard: true\n  ssrf_guard: false\n",
            &[(4, 3, "duplicate key `network.ssrf_guard`", "line 3")],
        ),
        (
            "netwrok: {}\nzzz: 1\n",
            &[
                (
                    1,
                    1,
                    "unknown section `netwrok`",
                    "did you mean `network`? expected one of `description`",
                ),
                (2, 1, "unknown section `zzz`", "expected one of"),
            ],
        ),
        (
            "network:\n  dns:\n    max_qps: 3\n",
            &[(
                3,
                5,
                "network.dns: unknown field `max_qps`",
                "expected one of `denied_answer`",
            )],
        ),
        (
            "network:\n  dns:\n    max_label_lenght: 3\n",
            &[(
                3,
                5,
                "unknown field `max_label_lenght`",
                "did you mean `max_label_length`?",
            )],
        ),
        (
            "network:\n  dns:\n    denied_answer: nxdomian\n",
            &[(
                3,
                20,
                "unknown variant `nxdomian`",
                "did you mean `nxdomain`?",
            )],
        ),
        (
            "network:\n  dns:\n    resolve_unlisted: true\n    max_unique_unlisted_per_minute: 0\n",
            &[(
                4,
                5,
                "network.dns.max_unique_unlisted_per_minute: 0 is outside",
                "leave resolve_unlisted false",
            )],
        ),
        (
            "network:\n  dns:\n    resolve_unlisted: yes\n",
            &[(3, 23, "resolve_unlisted", "`true` or `false`")],
        ),
        ("dry_run: yes\n", &[(1, 10, "dry_run", "`true` or `false`")]),
        (
            "network:\n  allow_out:\n    - {to: a.com, port: 443}\n",
            &[(
                3,
                8,
                "network.allow_out[0]: unknown field `port`",
                "did you mean `ports`? expected one of `to`, `ports`, `methods`",
            )],
        ),
        (
            "network:\n  deny_out:\n    - a.com\n    - 443\n",
            &[(
                4,
                7,
                "network.deny_out[1]: a number is not a destination",
                "`ALL_TRAFFIC`",
            )],
        ),
        (
            "transformations:\n  - replacement: x\n",
            &[(2, 5, "missing field `pattern`", "add `pattern:`")],
        ),
        (
            "credentials:\n  - credential: api\n    follow_redirects: 4\n",
            &[(3, 5, "credentials[0].follow_redirects", "from 0")],
        ),
        (
            "transformations: {a: b}\n",
            &[(1, 18, "transformations", "write a list")],
        ),
        // A rule whose stage could not be built is located like the rest.
        (
            "transformations:\n  - pattern: a\n    replacement: b\n    hosts: [ok.test, 'api.*.com']\n",
            &[(
                4,
                22,
                "transformations[0].hosts[1]: host pattern \"api.*.com\"",
                "`*.example.com`",
            )],
        ),
        // Errors in different sections all come at once, compile errors
        // of sections that deserialized included.
        (
            "pii:\n  typos: [email]\ninjection_defense:\n  threshold: 3\naudit:\n  enabld: true\ntransformations:\n  - pattern: '('\n    replacement: x\n",
            &[
                (2, 3, "pii: unknown field `typos`", "did you mean `types`?"),
                (
                    4,
                    3,
                    "injection_defense.threshold: 3 is outside 0..=1",
                    "0.8",
                ),
                (
                    6,
                    3,
                    "audit: unknown field `enabld`",
                    "did you mean `enabled`?",
                ),
                (
                    8,
                    5,
                    "transformations[0].pattern: invalid regex",
                    "character 1",
                ),
            ],
        ),
        (
            "pii:\n  types: [email, phon]\n  actions:\n    ssn: block\n",
            &[
                (
                    2,
                    18,
                    "pii.types[1]: unknown PII type `phon`",
                    "did you mean `phone`?",
                ),
                (4, 5, "pii.actions.ssn", "add `ssn` to `pii.types`"),
            ],
        ),
    ];
    for (text, want) in cases {
        let got = match parse(text) {
            Ok(_) => panic!("{text:?} loaded"),
            Err(got) => got,
        };
        let summary: Vec<String> = got.iter().map(ToString::to_string).collect();
        assert_eq!(got.len(), want.len(), "{text:?}: {summary:#?}");
        for (d, (line, column, message, hint)) in got.iter().zip(*want) {
            assert_eq!((d.line, d.column), (*line, *column), "{text:?}: {d}");
            assert!(d.message.contains(message), "{text:?}: {d}");
            assert!(
                d.hint.as_deref().unwrap_or("").contains(hint),
                "{text:?}: {d}"
            );
            assert_eq!(d.file, Path::new("p.yaml"));
        }
    }
}

#[test]
fn hostile_text_never_panics() {
    let cases = [
        "\u{0}".to_string(),
        "{".repeat(10_000),
        "- ".repeat(10_000),
        "a: &a [*a]\n".to_string(),
        "a: &a [x, x, x, x, x, x, x, x, x]\nb: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a]\nc: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b]\nd: &d [*c, *c, *c, *c, *c, *c, *c, *c, *c]\ne: &e [*d, *d, *d, *d, *d, *d, *d, *d, *d]\nf: &f [*e, *e, *e, *e, *e, *e, *e, *e, *e]\ng: &g [*f, *f, *f, *f, *f, *f, *f, *f, *f]\nnetwork: {allow_out: *g}\n".to_string(),
        "? [a]\n: b\n".to_string(),
        "1: x\n".to_string(),
        "!!map {}".to_string(),
        format!("{}: 1\n", "n".repeat(100_000)),
    ];
    for text in &cases {
        // Only that it returns; some of these are valid policies.
        let _ = parse(text);
    }
}

#[test]
fn diagnostics_display() {
    let cases = [
        (None, "a/b.yaml:3:7: bad"),
        (Some("fix it"), "a/b.yaml:3:7: bad\n  hint: fix it"),
    ];
    for (hint, want) in cases {
        let d = Diagnostic {
            file: PathBuf::from("a/b.yaml"),
            line: 3,
            column: 7,
            message: "bad".to_string(),
            hint: hint.map(String::from),
        };
        assert_eq!(d.to_string(), want);
    }
}

#[test]
fn sections_match_the_raw_policy() {
    // serde lists a struct's fields when it meets an unknown one.
    let e = match serde_yaml::from_str::<raw::Policy>("zzz: 1") {
        Ok(_) => panic!("unknown field accepted"),
        Err(e) => e.to_string(),
    };
    let (_, hint) = explain(&e);
    assert_eq!(
        hint.as_deref(),
        Some(format!("expected one of {}", quoted(SECTIONS)).as_str())
    );
}

fn write(dir: &Path, name: &str, text: &str) {
    if let Err(e) = std::fs::write(dir.join(name), text) {
        panic!("writing {name}: {e}");
    }
}

fn temp_dir() -> tempfile::TempDir {
    match tempfile::tempdir() {
        Ok(dir) => dir,
        Err(e) => panic!("tempdir: {e}"),
    }
}

/// Policy names, or every diagnostic as displayed.
fn outcome(result: Result<PolicySet, Vec<Diagnostic>>) -> Result<Vec<String>, Vec<String>> {
    match result {
        Ok(set) => Ok(set.names().map(String::from).collect()),
        Err(diagnostics) => Err(diagnostics.iter().map(ToString::to_string).collect()),
    }
}

#[test]
fn directories() {
    let dir = temp_dir();
    let root = dir.path();
    write(root, "b.yaml", "dry_run: true\n");
    write(root, "a.yml", "{}\n");
    write(root, "README.md", "not a policy");
    write(root, ".a.yaml.swp", "junk");
    write(root, ".hidden.yaml", "junk: [");
    if let Err(e) = std::fs::create_dir(root.join("sub.yaml")) {
        panic!("{e}");
    }
    let set = match load_dir(root, Against::default()) {
        Ok(set) => set,
        Err(e) => panic!("{e:?}"),
    };
    assert_eq!(set.names().collect::<Vec<_>>(), ["a", "b"]);
    assert_eq!(set.len(), 2);
    assert!(!set.is_empty());
    assert!(set.get("b").is_some_and(|p| p.dry_run));
    assert!(set.get("c").is_none());

    let empty = temp_dir();
    write(empty.path(), "notes.txt", "");
    let cases: Vec<(PathBuf, &str)> = vec![
        (empty.path().to_path_buf(), "no policy files in"),
        (root.join("missing"), "cannot read the policy directory"),
    ];
    for (path, want) in cases {
        match outcome(load_dir(&path, Against::default())) {
            Ok(names) => panic!("{}: loaded {names:?}", path.display()),
            Err(e) => assert!(e.len() == 1 && e[0].contains(want), "{e:?}"),
        }
    }
}

#[test]
fn every_file_reports_its_errors() {
    let dir = temp_dir();
    let root = dir.path();
    write(root, "ok.yaml", "{}\n");
    write(root, "bad name!.yaml", "{}\n");
    write(root, "one.yaml", "netwrk: {}\n");
    write(root, "two.yaml", "dry_run: [\n");
    let got = match outcome(load_dir(root, Against::default())) {
        Ok(names) => panic!("loaded {names:?}"),
        Err(e) => e,
    };
    let want = [
        "bad name!.yaml:1:1: `bad name!` is not a valid policy name",
        "one.yaml:1:1: unknown section `netwrk`",
        "two.yaml:2:1: invalid YAML",
    ];
    assert_eq!(got.len(), want.len(), "{got:#?}");
    for (got, want) in got.iter().zip(want) {
        assert!(got.contains(want), "{got} !~ {want}");
    }
}

#[test]
fn paths() {
    let one = temp_dir();
    let two = temp_dir();
    write(one.path(), "a.yaml", "{}\n");
    write(one.path(), "b.yaml", "{}\n");
    write(two.path(), "a.yml", "{}\n");
    write(two.path(), "c.policy", "{}\n");
    /// Policy names, or a fragment of the only diagnostic.
    type Expected = Result<&'static [&'static str], &'static str>;
    let cases: Vec<(Vec<PathBuf>, Expected)> = vec![
        (vec![one.path().to_path_buf()], Ok(&["a", "b"])),
        (
            vec![one.path().to_path_buf(), one.path().join("a.yaml")],
            Ok(&["a", "b"]),
        ),
        (
            vec![one.path().join("b.yaml"), two.path().join("c.policy")],
            Ok(&["b", "c"]),
        ),
        (
            vec![one.path().to_path_buf(), two.path().to_path_buf()],
            Err("policy `a` is also defined by"),
        ),
        (
            vec![two.path().join("nope.yaml")],
            Err("cannot read the policy file"),
        ),
        (vec![], Err("no policy files or directories given")),
    ];
    for (paths, want) in cases {
        match (outcome(load_paths(&paths, Against::default())), want) {
            (Ok(got), Ok(want)) => assert_eq!(got, want, "{paths:?}"),
            (Err(got), Err(want)) => {
                assert!(
                    got.len() == 1 && got[0].contains(want),
                    "{paths:?}: {got:#?}"
                )
            }
            (got, want) => panic!("{paths:?}: got {got:?}, want {want:?}"),
        }
    }
}

const SHIPPED: &[&str] = &[
    "agent-default.yaml",
    "permissive-audit.yaml",
    "locked-down.yaml",
];

fn shipped_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../policies")
}

#[test]
fn shipped_policies_are_valid() {
    let files: Vec<PathBuf> = SHIPPED.iter().map(|f| shipped_dir().join(f)).collect();
    let set = match load_paths(&files, Against::default()) {
        Ok(set) => set,
        Err(e) => panic!(
            "{}",
            e.iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join("\n")
        ),
    };
    assert_eq!(
        set.names().collect::<Vec<_>>(),
        ["agent-default", "locked-down", "permissive-audit"]
    );
    // The properties each file promises, read from the raw form.
    let all = raw::Target::Short("ALL_TRAFFIC".to_string());
    let cases = [
        (
            "agent-default.yaml",
            true,
            true,
            raw::DeniedAnswer::Nxdomain,
        ),
        (
            "permissive-audit.yaml",
            false,
            false,
            raw::DeniedAnswer::Nxdomain,
        ),
        ("locked-down.yaml", true, false, raw::DeniedAnswer::Refused),
    ];
    for (file, default_deny, has_allow_rules, denied_answer) in cases {
        let text = std::fs::read_to_string(shipped_dir().join(file)).unwrap_or_default();
        let policy: raw::Policy = match serde_yaml::from_str(&text) {
            Ok(p) => p,
            Err(e) => panic!("{file}: {e}"),
        };
        assert_eq!(
            policy.network.deny_out.contains(&all),
            default_deny,
            "{file}"
        );
        assert_eq!(
            !policy.network.allow_out.is_empty(),
            has_allow_rules,
            "{file}"
        );
        assert_eq!(policy.network.dns.denied_answer, denied_answer, "{file}");
        // Names no rule names are never asked upstream by a shipped policy.
        assert!(!policy.network.dns.resolve_unlisted, "{file}");
        assert!(policy.network.ssrf_guard, "{file}");
        assert!(policy.audit.enabled, "{file}");
    }
}

#[test]
fn shipped_policies_load_as_a_directory() {
    let dir = temp_dir();
    for file in SHIPPED {
        if let Err(e) = std::fs::copy(shipped_dir().join(file), dir.path().join(file)) {
            panic!("copying {file}: {e}");
        }
    }
    match load_dir(dir.path(), Against::default()) {
        Ok(set) => assert_eq!(set.len(), SHIPPED.len()),
        Err(e) => panic!("{e:?}"),
    }
}

#[test]
fn apps_are_checked_against_the_catalogue() {
    let apps: Vec<crate::apps::AppConfig> = serde_yaml::from_str(
        r#"
- name: tracker
  hosts: [api.tracker.test]
  actions:
    - {name: issues.read, method: GET, path: "/repos/*/*/issues/**"}
    - {name: repo.delete, method: DELETE, path: "/repos/**"}
- name: wiki
  urls: ["wiki.test/api/**"]
"#,
    )
    .expect("apps");
    let catalogue = Catalogue::compile(&apps).expect("catalogue");
    let against = Against {
        apps: Some(&catalogue),
        credentials: None,
    };
    let check = |text: &str| parse_policy(Path::new("p.yaml"), "p", text, against);

    let good = "apps:\n  - app: tracker\n    actions: {issues.read: auto, repo.delete: deny, \"*\": ask}\n  - app: wiki\n    actions: {\"*\": deny}\n";
    let loaded = match check(good) {
        Ok(loaded) => loaded,
        Err(e) => panic!("{e:?}"),
    };
    // Resolved once, as it loaded: the decision needs no catalogue.
    let decide = |method: hyper::Method, host: &str, path: &str| {
        let decision = loaded.app_lookup.decide(host, &method, path);
        decision.map(|d| (d.app, d.action, d.mode))
    };
    use crate::policy::raw::Approval;
    assert_eq!(
        decide(hyper::Method::DELETE, "api.tracker.test", "/repos/a/b"),
        Some(("tracker".into(), Some("repo.delete".into()), Approval::Deny))
    );
    assert_eq!(
        decide(hyper::Method::GET, "wiki.test", "/api/page"),
        Some(("wiki".into(), None, Approval::Deny))
    );
    assert_eq!(decide(hyper::Method::GET, "other.test", "/"), None);
    // A typo next to `"*": auto` would leave repo.delete auto.
    let bad = "apps:\n  - app: tracker\n    actions:\n      issues.read: auto\n      repo.delte: deny\n      \"*\": auto\n  - app: wiki\n    actions:\n      edit: deny\n  - app: trackr\n";
    assert!(
        parse(bad).is_ok(),
        "without a catalogue only the form is checked"
    );
    let got = match check(bad) {
        Ok(_) => panic!("loaded"),
        Err(got) => got,
    };
    // (line, column, message fragment, hint fragment)
    let want = [
        (
            5,
            7,
            "apps[0].actions.repo.delte: app `tracker` has no action `repo.delte`",
            "did you mean `repo.delete`?",
        ),
        (
            9,
            7,
            "apps[1].actions.edit: app `wiki` has no action `edit`",
            "a custom app has no actions",
        ),
        (
            10,
            5,
            "apps[2].app: app `trackr` is not in the daemon's app catalogue",
            "did you mean `tracker`?",
        ),
    ];
    let summary: Vec<String> = got.iter().map(ToString::to_string).collect();
    assert_eq!(got.len(), want.len(), "{summary:#?}");
    for (d, (line, column, message, hint)) in got.iter().zip(want) {
        assert_eq!((d.line, d.column), (line, column), "{d}");
        assert!(d.message.contains(message), "{d}");
        assert!(d.hint.as_deref().unwrap_or("").contains(hint), "{d}");
    }
}

/// `apps` as a mapping: `default` decides the catalogue's apps the list
/// does not name, and errors in the list are located under `apps.list`.
#[test]
fn apps_long_form_sets_the_default_and_locates_its_list() {
    let apps: Vec<crate::apps::AppConfig> = serde_yaml::from_str(
        "[{name: tracker, hosts: [api.tracker.test], actions: [{name: issues.read, path: /issues}]},\n \
         {name: wiki, urls: [wiki.test/api/**]}]",
    )
    .expect("apps");
    let catalogue = Catalogue::compile(&apps).expect("catalogue");
    let against = Against {
        apps: Some(&catalogue),
        credentials: None,
    };
    let check = |text: &str| parse_policy(Path::new("p.yaml"), "p", text, against);
    use crate::policy::raw::Approval::*;
    let mode = |text: &str, host: &str| {
        let loaded = check(text).unwrap_or_else(|e| panic!("{e:?}"));
        let decision = loaded
            .app_lookup
            .decide(host, &hyper::Method::GET, "/issues");
        decision.map(|d| (d.mode, d.by_default))
    };
    // (policy, host, (mode, decided by the default))
    let cases = [
        (
            "description: no apps\n",
            "api.tracker.test",
            Some((Ask, true)),
        ),
        ("apps: []\n", "wiki.test", None),
        (
            "apps: {default: deny}\n",
            "api.tracker.test",
            Some((Deny, true)),
        ),
        (
            "apps: {default: auto}\n",
            "api.tracker.test",
            Some((Auto, true)),
        ),
        (
            "apps:\n  default: deny\n  list:\n    - {app: tracker, actions: {issues.read: auto}}\n",
            "api.tracker.test",
            Some((Auto, false)),
        ),
        (
            "apps: {default: deny, list: [{app: tracker}]}\n",
            "other.test",
            None,
        ),
    ];
    for (text, host, want) in cases {
        assert_eq!(mode(text, host), want, "{text} {host}");
    }
    let bad = "apps:\n  default: deny\n  list:\n    - app: trackr\n";
    let got = check(bad).expect_err("refused");
    assert_eq!(got.len(), 1, "{got:?}");
    assert_eq!((got[0].line, got[0].column), (4, 7), "{}", got[0]);
    assert!(got[0].message.contains("apps.list[0].app"), "{}", got[0]);
    // A mode that is none of the three, and an unknown key, are located.
    for (text, at) in [
        ("apps: {default: maybe}\n", (1, 17)),
        ("apps: {defualt: deny}\n", (1, 8)),
    ] {
        let got = check(text).expect_err("refused");
        assert_eq!((got[0].line, got[0].column), at, "{}", got[0]);
    }
}

/// Given the daemon's credentials, each policy's bindings are compiled
/// as it loads: an error is located like any other, and comes with the
/// policy's other errors.
#[test]
fn bindings_are_compiled_against_the_credentials_and_located() {
    let known =
        "[{name: known, source: {env: K}, hosts: [api.example.com], scheme: {type: bearer}}]";
    let credentials: Vec<CredentialConfig> = serde_yaml::from_str(known).expect("credentials");
    let against = Against {
        apps: None,
        credentials: Some(&credentials),
    };
    let parse = |text: &str| parse_policy(Path::new("p.yaml"), "p", text, against);

    let policy = parse("credentials:\n  - credential: known\n").expect("binds");
    let bound: Vec<&str> = policy.bindings.bound_credentials().collect();
    assert_eq!(bound, ["known"]);

    /// (line, column, message fragment)
    type Expected = (usize, usize, &'static str);
    // (text, every error)
    let cases: &[(&str, &[Expected])] = &[
        (
            "credentials:\n  - credential: known\n  - credential: nope\n",
            &[(
                3,
                5,
                "credentials[1].credential: policy binds credential \"nope\"",
            )],
        ),
        (
            "credentials:\n  - credential: nope\ninjection_defense:\n  threshold: 3\n",
            &[
                (
                    2,
                    5,
                    "credentials[0].credential: policy binds credential \"nope\"",
                ),
                (4, 3, "injection_defense.threshold"),
            ],
        ),
        // Named twice: one error, the policy's own.
        (
            "credentials:\n  - credential: known\n  - credential: known\n",
            &[(3, 5, "bound twice")],
        ),
    ];
    for (text, want) in cases {
        let got = parse(text).expect_err("refused");
        let got: Vec<(usize, usize, &str)> = got
            .iter()
            .map(|d| (d.line, d.column, d.message.as_str()))
            .collect();
        assert_eq!(got.len(), want.len(), "{text}: {got:?}");
        for ((line, column, message), (want_line, want_column, fragment)) in got.iter().zip(*want) {
            assert_eq!(
                (line, column),
                (want_line, want_column),
                "{text}: {message}"
            );
            assert!(message.contains(fragment), "{text}: {message}");
        }
    }
    // Without the credentials (`sluice check FILES`) bindings are left
    // empty and not checked.
    let unchecked = parse_policy(Path::new("p.yaml"), "p", cases[0].0, Against::default());
    let unchecked = unchecked.expect("not checked");
    assert_eq!(unchecked.bindings.bound_credentials().count(), 0);
}

/// `injection_defense` and `audit` may be written `true` or `false` (the
/// section's `enabled`, the rest at its defaults), as the seeds write
/// them; in full, their keys are checked and located as before.
#[test]
fn sections_written_as_a_switch() {
    let policy = |text: &str| parse(text).unwrap_or_else(|e| panic!("{text}: {e:?}"));
    let on = policy("injection_defense: true\naudit: false\n");
    assert!(on.injection_defense.enabled);
    assert_eq!(on.injection_defense.threshold, 0.8);
    assert!(!on.audit.enabled);
    assert!(on.audit.log_allowed, "the rest keeps its default");
    let off = policy("injection_defense: false\naudit: true\n");
    assert!(!off.injection_defense.enabled && off.audit.enabled);
    let full =
        policy("injection_defense: {enabled: true, threshold: 0.5}\naudit: {log_allowed: false}\n");
    assert_eq!(full.injection_defense.threshold, 0.5);
    assert!(full.audit.enabled && !full.audit.log_allowed);
    // (text, line, column, message fragment)
    let cases = [
        (
            "injection_defense:\n  thresold: 0.5\n",
            2,
            3,
            "unknown field `thresold`",
        ),
        (
            "audit: yes\n",
            1,
            8,
            "expected `true`, `false` or a mapping",
        ),
        (
            "audit: [true]\n",
            1,
            8,
            "expected `true`, `false` or a mapping",
        ),
    ];
    for (text, line, column, message) in cases {
        let errors = parse(text).err().unwrap_or_else(|| panic!("{text} loaded"));
        let summary: Vec<String> = errors.iter().map(ToString::to_string).collect();
        assert_eq!(errors.len(), 1, "{text}: {summary:?}");
        assert!(errors[0].message.contains(message), "{text}: {summary:?}");
        assert_eq!(
            (errors[0].line, errors[0].column),
            (line, column),
            "{text}: {summary:?}"
        );
    }
}

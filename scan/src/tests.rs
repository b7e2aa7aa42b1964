//! Whole-scanner tests: content types, offset mapping, policies, and a
//! property test over arbitrary bytes.

use proptest::prelude::*;

use super::*;

fn scanner() -> Scanner {
    Scanner::new(&ScanConfig::all()).expect("scanner")
}

/// The findings of `body` as (kind, the body bytes they cover).
fn found(content_type: Option<&str>, body: &str) -> Vec<(&'static str, String)> {
    scanner()
        .scan(content_type, body.as_bytes())
        .into_iter()
        .map(|f| (f.kind.as_str(), body[f.start..f.end].to_string()))
        .collect()
}

fn pairs(list: &[(&'static str, &str)]) -> Vec<(&'static str, String)> {
    list.iter().map(|(k, v)| (*k, v.to_string())).collect()
}

#[test]
fn json_strings_with_escapes_map_back_to_the_escaped_bytes() {
    let body = r#"{"messages": [{"role": "user", "content": "mail jane\u0040example.com\nSSN 376-85-2672\n4111111111111111"}]}"#;
    assert_eq!(
        found(Some("application/json"), body),
        pairs(&[
            ("email", r"jane\u0040example.com"),
            ("ssn", "376-85-2672"),
            ("credit_card", "4111111111111111"),
        ])
    );
}

#[test]
fn json_escapes_do_not_glue_onto_values() {
    // Scanned raw, `\n4111…` would read as a word and hide the card.
    let body = r#"{"a": "line\n4111111111111111\tnext"}"#;
    assert_eq!(
        found(Some("application/json"), body),
        pairs(&[("credit_card", "4111111111111111")])
    );
}

#[test]
fn json_numbers_and_keys_are_scanned_too() {
    let body = r#"{"card":4111111111111111,"api_key":"q8Zr2LmP0xVb7TnKw4Yd"}"#;
    assert_eq!(
        found(Some("application/json; charset=utf-8"), body),
        pairs(&[
            ("credit_card", "4111111111111111"),
            ("generic_secret", "q8Zr2LmP0xVb7TnKw4Yd")
        ])
    );
}

#[test]
fn a_private_key_in_a_json_string_spans_its_escaped_newlines() {
    let body = r#"{"k": "-----BEGIN EC PRIVATE KEY-----\nMHcCAQEEIBkg4LVWM9nuwNSk3yByxZpYRTBnVJk5\n-----END EC PRIVATE KEY-----\n"}"#;
    let findings = scanner().scan(Some("application/json"), body.as_bytes());
    assert_eq!(findings.len(), 1);
    assert_eq!(findings[0].kind, Kind::PrivateKey);
    assert!(body[findings[0].start..findings[0].end].starts_with("-----BEGIN EC"));
    assert!(body[findings[0].start..findings[0].end].ends_with("PRIVATE KEY-----"));
}

#[test]
fn form_bodies_report_the_encoded_span() {
    let body = "comment=phone%3A+%2B12817920919+cc+abaird%40example.com+Call+me+on+%28841%29+279-2508&submit=1";
    assert_eq!(
        found(Some("application/x-www-form-urlencoded"), body),
        pairs(&[
            ("phone", "%2B12817920919"),
            ("email", "abaird%40example.com"),
            ("phone", "%28841%29+279-2508"),
        ])
    );
}

/// Each part is read by its own type; a part labelled binary is read as
/// bytes, as a whole body labelled so is, even when it is not UTF-8.
#[test]
fn multipart_parts_are_scanned_by_their_own_type() {
    let body = "--b1\r\nContent-Disposition: form-data; name=\"note\"\r\n\r\nmail a@example.com\r\n\
                --b1\r\nContent-Type: application/octet-stream\r\n\r\nb@example.com\r\n\
                --b1\r\nContent-Type: application/json\r\n\r\n{\"x\": \"c\\u0040example.com\"}\r\n\
                --b1\r\nContent-Type: text/plain\r\n\r\n{\"y\": \"d\\u0040example.com\"}\r\n--b1--\r\n";
    assert_eq!(
        found(Some("multipart/form-data; boundary=b1"), body),
        pairs(&[
            ("email", "a@example.com"),
            ("email", "b@example.com"),
            ("email", r"c\u0040example.com"),
            ("email", r"d\u0040example.com"),
        ])
    );
    // Not UTF-8 and labelled an image: still read, as bytes.
    let body = b"--b1\r\nContent-Type: image/png\r\n\r\n\x89\xff ssn 376-85-2672\r\n--b1--\r\n";
    let findings = scanner().scan(Some("multipart/form-data; boundary=b1"), body);
    let values: Vec<_> = findings
        .iter()
        .map(|f| (f.kind, &body[f.start..f.end]))
        .collect();
    assert_eq!(values, [(Kind::Ssn, &b"376-85-2672"[..])]);
}

/// What a multipart split leaves is read by its first byte: a server that
/// ignores the label may parse it as JSON (Go's `json.Decoder` reads the
/// first document of a body and stops).
#[test]
fn what_a_multipart_split_leaves_is_read_too() {
    let multipart = Some("multipart/form-data; boundary=b1");
    // The boundary never occurs: the whole body.
    let whole = r#"{"x": "a\u0040example.com"}"#;
    assert_eq!(
        found(multipart, whole),
        pairs(&[("email", r"a\u0040example.com")])
    );
    // A preamble before the first delimiter, an epilogue after the last.
    let body = "{\"x\": \"b\\u0040example.com\"}\r\n--b1\r\n\r\nhi\r\n--b1--\r\nc@example.com";
    assert_eq!(
        found(multipart, body),
        pairs(&[("email", r"b\u0040example.com"), ("email", "c@example.com")])
    );
}

#[test]
fn a_form_label_cannot_hide_a_json_body() {
    let form = Some("application/x-www-form-urlencoded");
    let body = r#"{"x": "a\u0040example.com"}"#;
    assert_eq!(
        found(form, body),
        pairs(&[("email", r"a\u0040example.com")])
    );
    // Not a whole JSON document: percent-decoded as a form.
    assert_eq!(
        found(form, "{x=b%40example.com"),
        pairs(&[("email", "b%40example.com")])
    );
}

#[test]
fn a_missing_content_type_is_sniffed() {
    let body = r#"{"a": "x\u0040example.com"}"#;
    assert_eq!(
        found(None, body),
        pairs(&[("email", r"x\u0040example.com")])
    );
    assert_eq!(
        found(None, "a@example.com"),
        pairs(&[("email", "a@example.com")])
    );
}

#[test]
fn the_content_type_picks_a_format_only_when_it_names_one() {
    let json = br#" {"a": 1}"#.as_slice();
    let cases: &[(Option<&str>, &[u8], Format<'_>)] = &[
        (None, json, Format::Json),
        (None, b"[1]", Format::Json),
        (None, b"plain words", Format::Text),
        (Some("application/json"), b"not json", Format::Json),
        (Some("application/vnd.api+json"), b"x", Format::Json),
        (Some("application/x-ndjson"), b"x", Format::Json),
        (
            Some("application/x-www-form-urlencoded"),
            b"a=1",
            Format::Form,
        ),
        // A form label cannot hide a whole JSON document; a form whose
        // first key only opens with a brace is a form.
        (
            Some("application/x-www-form-urlencoded"),
            json,
            Format::Json,
        ),
        (
            Some("application/x-www-form-urlencoded"),
            b"{a}=1&b=2",
            Format::Form,
        ),
        (
            Some("multipart/form-data; boundary=b"),
            json,
            Format::Multipart("b"),
        ),
        // Labels that name no format cannot hide a JSON body.
        (Some("text/plain"), json, Format::Json),
        (Some("text/plain"), b"a=1", Format::Text),
        (Some("application/octet-stream"), json, Format::Json),
        (Some(""), json, Format::Json),
        (Some("; charset=utf-8"), json, Format::Json),
        (Some("multipart/form-data"), json, Format::Json),
        (Some("multipart/form-data"), b"--b", Format::Text),
        (Some("text/plain"), b"\xEF\xBB\xBF[1]", Format::Json),
        // A whole JSON string is JSON too; prose in quotes fails the JSON
        // reading later and is read as text.
        (Some("text/plain"), b" \"a\\u0040b\"", Format::Json),
        (None, b"\"Quoted,\" she said", Format::Json),
    ];
    for &(content_type, body, want) in cases {
        assert_eq!(Format::of(content_type, body), want, "{content_type:?}");
    }
}

#[test]
fn a_json_body_labelled_otherwise_is_read_as_json() {
    let body = r#"{"messages": [{"content": "mail x\u0040example.com"}]}"#;
    for ct in [
        None,
        Some(""),
        Some("text/plain"),
        Some("application/octet-stream"),
    ] {
        assert_eq!(
            found(ct, body),
            pairs(&[("email", r"x\u0040example.com")]),
            "{ct:?}"
        );
        // Behind a UTF-8 byte-order mark too.
        let marked = format!("\u{feff}{body}");
        assert_eq!(
            found(ct, &marked),
            pairs(&[("email", r"x\u0040example.com")]),
            "{ct:?}"
        );
    }
}

#[test]
fn a_body_that_is_one_json_string_has_its_escapes_decoded() {
    let string = r#""mail x\u0040example.com""#;
    for ct in [None, Some("text/plain")] {
        assert_eq!(
            found(ct, string),
            pairs(&[("email", r"x\u0040example.com")]),
            "{ct:?}"
        );
    }
    // Text that only opens with a quote is read as text, whole.
    let prose = r#""Quoted," she said: write to x@example.com"#;
    assert_eq!(
        found(Some("text/plain"), prose),
        pairs(&[("email", "x@example.com")])
    );
}

/// Numbers written with a slash after the area code are stops of the
/// class scan (the slash is one of its number separators); dates and paths
/// with slashes stay unreported.
#[test]
fn slashed_phone_numbers_are_found_and_slashed_dates_are_not() {
    let body = "Büro: 030/12345678, Zentrale 089 / 1234567, Durchwahl 0211/12345-67. \
                Am 05/12/2024 um 10:30, Datei /var/log/2024/05/12/0001.log, Seite 12/345.";
    let want = [
        ("phone", "030/12345678"),
        ("phone", "089 / 1234567"),
        ("phone", "0211/12345-67"),
    ];
    assert_eq!(found(Some("text/plain"), body), pairs(&want));
}

/// Lower-case IBANs whose national part holds letters are stops of the
/// class scan at their check digits, solid or in groups whose digits are
/// few; words of the same shape that fail the country's length or the
/// mod-97 check are not reported.
#[test]
fn lower_case_ibans_with_letters_are_found() {
    let body = "iban gb82west12345698765432, nl91abna0417164300 and \
                it60x0542811101000000123456, mt84 malt 0110 0001 2345 mtlc ast0 01s; \
                not gb82west12345698765433, ab12cd34ef56gh78ij, de12abcd1234567890, \
                sha256 utf8 gpt4o x86_64 nl91abna041716430 chatcmpl-ab12cd345678 id42 \
                mt84malt011000012345mtlcast001t";
    let want = [
        ("iban", "gb82west12345698765432"),
        ("iban", "nl91abna0417164300"),
        ("iban", "it60x0542811101000000123456"),
        ("iban", "mt84 malt 0110 0001 2345 mtlc ast0 01s"),
    ];
    assert_eq!(found(Some("text/plain"), body), pairs(&want));
    // In a JSON string and after a block edge, too.
    for pad in [0, 50, 60, 61, 62, 63, 64, 70] {
        let body = format!(
            "{{\"note\":\"{}ie29aibk93115212345678\"}}",
            "x ".repeat(pad / 2)
        );
        let found = found(Some("application/json"), &body);
        assert_eq!(found, pairs(&[("iban", "ie29aibk93115212345678")]), "{pad}");
    }
}

#[test]
fn near_misses_in_prose_are_not_reported() {
    let body = "Build 2026.03.14 finished in 12.5s, version 3.2.1. The meeting is at 10:30 on \
                2026-05-04 in room 201. Request id 550e8400-e29b-41d4-a716-446655440000. \
                commit 9fceb02d0ae598e95dc970b74dd5b5c6c4b5a2f3 sha256: \
                e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855 Order 4111 1111 1111 1112 \
                was cancelled. Tracking number 1Z999AA10123456784. Call extension 4421 for IT. \
                Coordinates 37.7749, -122.4194. git_user@v2 exp 09/29 at 1701231698123";
    assert_eq!(found(Some("text/plain"), body), []);
}

#[test]
fn the_policy_chooses_the_kinds() {
    let types = ["email".into(), "ssn".into()];
    let config = ScanConfig::from_types(&types).expect("config");
    let scanner = Scanner::new(&config).expect("scanner");
    let body = b"a@example.com 376-85-2672 4111111111111111 AKIAIOSFODNN7EXAMPLE";
    let kinds: Vec<Kind> = scanner.scan(None, body).iter().map(|f| f.kind).collect();
    assert_eq!(kinds, [Kind::Email, Kind::Ssn]);

    let all = ScanConfig::from_types(&[]).expect("config");
    assert_eq!(all.kinds, KindSet::all());

    let err = ScanConfig::from_types(&["passport".into()]).expect_err("unknown type");
    assert_eq!(err.class(), "policy");
    assert!(err.to_string().contains("passport"));
}

#[test]
fn a_compressed_body_is_scanned_after_decoding() {
    let text = br#"{"m": "key AKIAIOSFODNN7EXAMPLE"}"#;
    let gz = super::decode::encode::gzip(text);
    let decoded = decode(Some("gzip"), &gz, 1 << 20).expect("decodes");
    let findings = scanner().scan(Some("application/json"), &decoded.bytes);
    assert_eq!(findings.len(), 1);
    assert_eq!(findings[0].kind, Kind::AwsAccessKey);
    assert_eq!(
        &decoded.bytes[findings[0].start..findings[0].end],
        b"AKIAIOSFODNN7EXAMPLE"
    );
}

fn check_invariants(body: &[u8], findings: &[Finding]) {
    for f in findings {
        assert!(
            f.start < f.end && f.end <= body.len(),
            "{f:?} out of bounds"
        );
    }
    for pair in findings.windows(2) {
        assert!(pair[0].end <= pair[1].start, "{pair:?} overlap or unsorted");
    }
}

/// Bytes that look a little like bodies: structure, escapes, digits,
/// anchors, as well as anything at all.
fn bodyish() -> impl Strategy<Value = Vec<u8>> {
    let pieces = prop_oneof![
        any::<u8>().prop_map(|b| vec![b]),
        Just(b"\"".to_vec()),
        Just(b"\\".to_vec()),
        Just(b"\\u00".to_vec()),
        Just(b"\\ud83d".to_vec()),
        Just(b"%".to_vec()),
        Just(b"%4".to_vec()),
        Just(b"+".to_vec()),
        Just(b"@".to_vec()),
        Just(b"4111 1111 1111 1111".to_vec()),
        Just(b"GB82".to_vec()),
        Just(b"::".to_vec()),
        Just(b"eyJhbGciOiJIUzI1NiJ9.".to_vec()),
        Just(b"-----BEGIN PRIVATE KEY-----".to_vec()),
        Just(b"password=".to_vec()),
        Just(b"sk-ant-".to_vec()),
        Just(b"xoxb-".to_vec()),
        Just(b"\r\n--b\r\n".to_vec()),
        "[0-9 .:()+-]{1,12}".prop_map(String::into_bytes),
    ];
    proptest::collection::vec(pieces, 0..40).prop_map(|v| v.concat())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn never_panics_and_findings_are_in_bounds_and_sorted(body in bodyish()) {
        let scanner = scanner();
        for ct in [
            None,
            Some("application/json"),
            Some("application/x-www-form-urlencoded"),
            Some("multipart/form-data; boundary=b"),
            Some("text/plain"),
        ] {
            let findings = scanner.scan(ct, &body);
            check_invariants(&body, &findings);
            // The charset check splits multipart bodies too.
            charset::unreadable(ct, &body);
        }
    }

    #[test]
    fn arbitrary_bytes_never_panic(body in proptest::collection::vec(any::<u8>(), 0..512)) {
        let findings = scanner().scan(Some("application/json"), &body);
        check_invariants(&body, &findings);
        let findings = scanner().scan(Some("application/x-www-form-urlencoded"), &body);
        check_invariants(&body, &findings);
        charset::unreadable(Some("multipart/form-data; boundary=b"), &body);
    }
}

#[test]
fn the_scratch_is_reused_but_not_kept_huge() {
    let scanner = scanner();
    let body = format!(r#"{{"a": "{}\n1.2.3.4"}}"#, "x".repeat(SCRATCH_KEEP));
    let first = scanner.scan(Some("application/json"), body.as_bytes());
    assert_eq!(first.len(), 1);
    // The huge string was given back; a small body scans the same again.
    SCRATCH.with_borrow(|s| assert!(s.text.decoded.capacity() < SCRATCH_KEEP));
    let small = br#"{"a": "mail a@example.com\n"}"#;
    let twice = [(); 2].map(|_| scanner.scan(Some("application/json"), small));
    assert_eq!(twice[0], twice[1]);
    assert_eq!(twice[0].len(), 1);
}

/// The findings of a JSON body scanned stretch by stretch, each stretch
/// alone: how bodies were scanned before their stretches were laid out
/// end to end for one engine call.
fn json_stretch_by_stretch(scanner: &Scanner, body: &[u8]) -> Vec<Finding> {
    let mut decoded = Decoded::default();
    let mut found = Vec::new();
    json::walk(body, &mut decoded, |stretch, decoded| {
        let mut out = Vec::new();
        match stretch {
            json::Stretch::Raw { start, end } => {
                scanner.engine.scan(&body[start..end], &mut out);
                for c in &mut out {
                    (c.start, c.end) = (c.start + start, c.end + start);
                }
            }
            json::Stretch::Decoded(range) => {
                scanner
                    .engine
                    .scan(&decoded.text()[range.clone()], &mut out);
                for c in &mut out {
                    (c.start, c.end) = decoded.span(range.start + c.start, range.start + c.end);
                }
            }
        }
        found.extend(out);
    });
    engine::resolve(&mut found)
        .into_iter()
        .map(|c| Finding {
            kind: c.kind,
            start: c.start,
            end: c.end,
        })
        .collect()
}

/// JSON strings of values, their context words and escapes, in pieces that
/// put values right at the edges of stretches.
fn json_bodyish() -> impl Strategy<Value = Vec<u8>> {
    let pieces = proptest::sample::select(vec![
        r#"{"a": ""#,
        r#"", "ssn": ""#,
        r#"",""#,
        r#""}"#,
        r#"":"#,
        r#"\n"#,
        r#"\""#,
        r#"\u0040"#,
        r#"\\"#,
        "\"",
        " ",
        "ssn ",
        "call ",
        "phone: ",
        "376-85-2672",
        "415 555-0132",
        "(415) 555-0132",
        "+44 20 8919 6125",
        "4111 1111 1111 1111",
        "GB82 WEST 1234 5698 7654 32",
        "10.1.2.3",
        "fe80::1",
        "12:30",
        "a.b@example.com",
        "jane",
        "@example.com",
        "AKIAIOSFODNN7EXAMPLE",
        "password=Tr0ub4dor&3",
        "api_key",
        "=q8Zr2LmP0xVb7TnKw4Yd",
        "ghp_sruUav0V4T6eVEpm8mLYs58eyzGuOXPYUa2h",
        "12345678",
        "x",
        "AB",
        ".",
        "-",
        "1",
    ]);
    (proptest::collection::vec(pieces, 0..40), 0..70usize).prop_map(|(v, pad)| {
        // Padding moves the pieces across the 64-byte blocks.
        format!("{}{}", " ".repeat(pad), v.concat()).into_bytes()
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2048))]

    #[test]
    fn json_stretches_laid_end_to_end_find_what_each_alone_finds(body in json_bodyish()) {
        let scanner = scanner();
        prop_assert_eq!(
            scanner.scan(Some("application/json"), &body),
            json_stretch_by_stretch(&scanner, &body)
        );
    }
}

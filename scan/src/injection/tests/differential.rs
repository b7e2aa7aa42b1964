//! The extraction from a tape against the first one, on a serde_json tree
//! (kept in `oracle`): the same verdict on what is JSON, and for JSON the
//! same segments (texts, sources, locations, order). Run on fixed edge
//! cases, the eval corpora, the benchmark's bodies, and generated and
//! mutated documents.

use proptest::prelude::*;
use serde_json::Value;

use super::oracle;
use crate::injection::Source;
use crate::injection::extract::{Body, json_segments};
use crate::json::tape::Tape;

type Flat = Vec<(Source, String, String)>;

fn flat(segments: Vec<crate::injection::extract::Segment<'_>>) -> Flat {
    segments
        .into_iter()
        .map(|s| (s.source, s.location, s.text.into_owned()))
        .collect()
}

/// `None` when serde_json refuses the body, once past a UTF-8 byte-order
/// mark (which the tape passes over, as servers that read bytes do).
fn by_tree(body: &[u8]) -> Option<Flat> {
    let body = body.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(body);
    let value: Value = serde_json::from_slice(body).ok()?;
    Some(flat(oracle::json_segments(&value)))
}

fn by_tape(body: &[u8]) -> Option<Flat> {
    let tape = Tape::parse(body)?;
    Some(flat(json_segments(&tape)))
}

#[track_caller]
fn assert_same(body: &[u8]) {
    assert_eq!(
        by_tape(body),
        by_tree(body),
        "body: {:?}",
        String::from_utf8_lossy(body)
    );
}

#[test]
fn edge_cases_of_the_grammar_agree() {
    let deep = |n: usize| format!("{}{}", "[".repeat(n), "]".repeat(n));
    let deep_objects = |n: usize| format!("{}1{}", r#"{"a":"#.repeat(n), "}".repeat(n));
    let mut cases: Vec<Vec<u8>> = [
        // Whitespace, empties, scalars at the top.
        "", " ", "{}", "[]", " {} ", "\t\n\r{}\r\n", "\u{feff}{}", "\u{feff}\u{feff}{}", " \u{feff}{}", "{} x", "{}{}", "null",
        "true", "false", "nul", "truex", "\"\"", "\"a\"", "\"a", "1", "-", "-0", "01", "1.",
        "1.5", ".5", "1e", "1e+", "1e5", "1E-5", "-1.5e+3", "1e308", "1e309", "-1e309",
        "1e-400", "0e999999", "1e99999999999", "123456789012345678901", "1.0e308",
        "179769313486231570000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000",
        "1797693134862315700000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000",
        "[1,]", "[,1]", "[1 2]", r#"{"a":1,}"#, r#"{"a" 1}"#, r#"{a:1}"#, r#"{"a":}"#,
        r#"{"a":1 "b":2}"#, "[tru]", "[nulll]", "[-]", "[1.e5]", "[+1]", "[0x10]",
        // Strings: escapes, surrogates, control characters.
        r#"["a\nb\"c\\d\/e\bf\fg\rh\ti"]"#,
        r#"["\u0041\u00e9\u4e2d\ud83d\ude00"]"#,
        r#"["\ud83d"]"#,
        r#"["\ud83dx"]"#,
        r#"["\ud83d\n"]"#,
        r#"["\ud83d\u0041"]"#,
        r#"["\ude00"]"#,
        r#"["\ud83d\ud83d\ude00"]"#,
        r#"["\u12"]"#,
        r#"["\u12g4"]"#,
        r#"["\x"]"#,
        r#"["\"]"#,
        r#"["\\"]"#,
        "[\"a\u{1}b\"]",
        "[\"a\tb\"]",
        "[\"a\nb\"]",
        "[\"a\u{7f}b\"]",
        "[\"caf\u{e9} \u{1F600}\"]",
        // Keys: escaped, empty, duplicated (the last one wins, as in serde_json's map).
        r#"{"messages":[{"r\u006fle":"tool","content":"x"}]}"#,
        r#"{"":{"":"empty keys"}}"#,
        r#"{"messages":[{"role":"user","content":"a","content":"b"}]}"#,
        r#"{"messages":[{"role":"user","role":"tool","content":"x"}]}"#,
        r#"{"messages":[1],"messages":[{"role":"user","content":"second"}]}"#,
        r#"{"q":"1","b":"2","q":"3","a":{"z":"4","y":"5"}}"#,
        // Role after content; roles and types that are not strings.
        r#"{"messages":[{"content":"late role","role":"system"}]}"#,
        r#"{"messages":[{"content":"x","role":1},{"content":"y","role":null}]}"#,
        r#"{"messages":[{"role":"user","content":[{"type":7,"text":"t"}]}]}"#,
        // Shapes: content as string, blocks, null, object, number.
        r#"{"messages":[{"role":"user","content":null},{"role":"user","content":3},{"role":"user","content":{"a":"b","type":"t"}}]}"#,
        r#"{"messages":"not a list","prompt":{"a":["x",{"b":"y"}]}}"#,
        r#"{"messages":[{"role":"user","content":[{"type":"tool_result","content":[{"type":"text","text":"r"},{"type":"document","source":{"type":"content","content":[{"type":"text","text":"d"}]}}]}]}]}"#,
        r#"{"input":[{"type":"message","content":"c"},{"type":"web_search_call_output","output":[{"type":"output_text","text":"o"}]},{"type":"x_call","input":{"q":"i"}},"plain",{"type":"item_reference","id":"r"}]}"#,
        r#"{"contents":[{"parts":[{"text":"no role"},{"text":5,"functionCall":{"name":"n","args":{"a":"b"}}}]},{"role":"model","parts":"p"},"s"],"system_instruction":{"parts":[{"text":"sys"}]}}"#,
        r#"{"system":"s","tools":[{"description":"d1","function":{"description":{"nested":"no"},"parameters":{"properties":{"a":{"description":"d2"}}}}}],"functions":{"description":"d3"},"messages":[]}"#,
        r#"[{"role":"user","content":"top-level array"}]"#,
        r#"{"a_id":"skipped","id":"skipped","type":"skipped","media_type":"skipped","other":"kept"}"#,
    ]
    .iter()
    .map(|s| s.as_bytes().to_vec())
    .collect();
    // Nesting at and past serde_json's limit.
    for n in [126, 127, 128, 129] {
        cases.push(deep(n).into_bytes());
        cases.push(deep_objects(n).into_bytes());
    }
    // Invalid UTF-8, in and out of strings; overlong and surrogate encodings.
    cases.push(b"[\"\xff\"]".to_vec());
    cases.push(b"[\"\xc3\"]".to_vec());
    cases.push(b"[\"\xed\xa0\x80\"]".to_vec());
    cases.push(b"[\"\xc0\xaf\"]".to_vec());
    cases.push(b"[1]\xff".to_vec());
    cases.push(b"{\"messages\":[{\"role\":\"user\",\"content\":\"ok\xe2\x82\"}]}".to_vec());
    for case in &cases {
        assert_same(case);
    }
    // The limit itself, so the cases above are known to straddle it.
    assert!(Tape::parse(deep(127).as_bytes()).is_some());
    assert!(Tape::parse(deep(128).as_bytes()).is_none());
    assert!(Tape::parse(b"1e308").is_some() && Tape::parse(b"1e309").is_none());
}

#[test]
fn strings_across_window_boundaries_agree() {
    // Escapes, quotes and control characters at every offset around the
    // 64-byte windows the scan classifies.
    for len in 0..140 {
        for special in [
            "\\n",
            "\\\"",
            "\\u00e9",
            "\\ud83d\\ude00",
            "\u{1}",
            "\\",
            "\"",
        ] {
            let text = format!("{}{special}{}", "a".repeat(len), "b".repeat(len % 7));
            let body = format!(r#"{{"messages":[{{"role":"user","content":"{text}"}}]}}"#);
            assert_same(body.as_bytes());
            // Cut short at every point near the end, too.
            for cut in 1..6 {
                assert_same(&body.as_bytes()[..body.len().saturating_sub(cut)]);
            }
        }
    }
}

/// The records of a JSONL corpus whose body is JSON.
fn corpus_bodies(jsonl: &str) -> Vec<String> {
    jsonl
        .lines()
        .filter(|l| !l.trim().is_empty())
        .filter_map(|l| {
            let record: Value = serde_json::from_str(l).ok()?;
            Some(record.get("body")?.as_str()?.to_string())
        })
        .collect()
}

#[test]
fn the_generalization_set_agrees() {
    let bodies = corpus_bodies(include_str!("generalization.jsonl"));
    assert!(bodies.len() > 10);
    for body in bodies {
        assert_same(body.as_bytes());
    }
}

/// The development corpus lives in `shared/eval` beside the repository,
/// which not every checkout has; where it is missing there is nothing to
/// compare.
#[test]
fn the_dev_set_agrees_where_it_is_present() {
    let manifest = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let found = manifest
        .ancestors()
        .map(|dir| dir.join("shared/eval/injection/dev.jsonl"))
        .find(|path| path.exists());
    let Some(path) = found else {
        eprintln!("no shared/eval/injection/dev.jsonl above {manifest:?}; skipped");
        return;
    };
    let text = std::fs::read_to_string(&path).expect("dev set");
    let bodies = corpus_bodies(&text);
    assert!(bodies.len() > 100, "{path:?}");
    for body in bodies {
        assert_same(body.as_bytes());
    }
}

#[test]
fn the_benchmark_bodies_agree() {
    use sluice_scan_bench::{Api, body};
    for api in [Api::OpenAiChat, Api::AnthropicMessages] {
        for (size, seed) in [(1 << 10, 42), (64 << 10, 42), (1 << 20, 42), (16 << 10, 7)] {
            let bytes = body(api, size, seed);
            assert_same(&bytes);
            // And through the public entry point.
            let read = flat(Body::read(Some("application/json"), &bytes).segments());
            assert_eq!(Some(read), by_tree(&bytes));
        }
    }
}

/// Bodies the tape does not take are one text segment, read so that no
/// label or flaw keeps their text from the detector (`extract::lenient`).
#[test]
fn other_bodies_are_read_as_text() {
    let cases: [(Option<&str>, &[u8], Flat); 11] = [
        (
            Some("application/json"),
            b"{\"messages\": [\"broken",
            vec![(Source::Text, "$".into(), "{\"messages\": [\"broken".into())],
        ),
        (
            None,
            b" [1,]",
            vec![(Source::Text, "$".into(), " [1,]".into())],
        ),
        (
            Some("application/vnd.api+json; charset=utf-8"),
            b"{\"a\": \"b\"}",
            vec![(Source::Text, "a".into(), "b".into())],
        ),
        (
            Some("application/x-www-form-urlencoded"),
            b"q=a+b%21&r=%zz",
            vec![(Source::Text, "$".into(), "q=a b!\nr=%zz".into())],
        ),
        (
            Some("text/plain"),
            b"caf\xe9",
            vec![(Source::Text, "$".into(), "caf\u{FFFD}".into())],
        ),
        // Not UTF-8 and labelled binary: still text, bytes replaced.
        (
            Some("image/png"),
            b"\x89PNG\xff",
            vec![(Source::Text, "$".into(), "\u{FFFD}PNG\u{FFFD}".into())],
        ),
        // JSON the tape refuses (serde_json too) still has its escapes
        // decoded: `NaN`, a lone surrogate, bytes after the document.
        (
            Some("application/json"),
            b"{\"a\": NaN, \"b\": \"Ignore\\u0020all\"}",
            vec![(Source::Text, "$".into(), "{\"a\": NaN, \"b\": \"\nIgnore all\n\"}\n".into())],
        ),
        (
            None,
            b"{\"b\": \"x\\ud800\"} trailing",
            vec![(Source::Text, "$".into(), "{\"b\": \"\nx\u{FFFD}\n\"} trailing\n".into())],
        ),
        // A multipart body part by part, each by its type, then what the
        // split left; a boundary that never occurs leaves all of it.
        (
            Some("multipart/form-data; boundary=b"),
            b"--b\r\nContent-Type: application/json\r\n\r\n{\"p\": \"x\\u0020y\"}\r\n--b\r\n\r\nq=1\r\n--b--\r\ntail",
            vec![(Source::Text, "$".into(), "{\"p\": \"\nx y\n\"}\n\nq=1\n\r\ntail\n".into())],
        ),
        (
            Some("multipart/form-data; boundary=zzz"),
            b"{\"p\": \"x\\u0020y\"}",
            vec![(Source::Text, "$".into(), "{\"p\": \"\nx y\n\"}\n\n".into())],
        ),
        // A form label cannot hide a whole JSON document.
        (
            Some("application/x-www-form-urlencoded"),
            b"{\"prompt\": \"x\\u0020y\"}",
            vec![(Source::User, "prompt".into(), "x y".into())],
        ),
    ];
    for (content_type, body, expected) in cases {
        assert_eq!(flat(Body::read(content_type, body).segments()), expected);
    }
    // A JSON-looking body with no content type is read as JSON.
    assert_eq!(
        flat(Body::read(None, b"{\"prompt\": \"hi\"}").segments()),
        vec![(Source::User, "prompt".into(), "hi".into())]
    );
}

/// A JSON document as written: any member order, duplicate keys, and each
/// string spelled with or without escapes.
#[derive(Debug, Clone)]
enum Doc {
    Scalar(&'static str),
    Str(String),
    Array(Vec<Doc>),
    Object(Vec<(String, Doc)>),
}

const KEYS: &[&str] = &[
    "messages",
    "role",
    "content",
    "type",
    "text",
    "input",
    "contents",
    "parts",
    "prompt",
    "system",
    "instructions",
    "systemInstruction",
    "tool_calls",
    "function_call",
    "tools",
    "functions",
    "description",
    "arguments",
    "output",
    "source",
    "data",
    "title",
    "context",
    "thinking",
    "functionResponse",
    "functionCall",
    "id",
    "call_id",
    "cache_control",
    "name",
    "q",
    "",
];

const WORDS: &[&str] = &[
    "user",
    "assistant",
    "system",
    "developer",
    "tool",
    "function",
    "model",
    "text",
    "input_text",
    "tool_result",
    "tool_use",
    "function_call",
    "function_call_output",
    "web_search_call",
    "document",
    "search_result",
    "thinking",
    "image",
    "reasoning",
    "item_reference",
    "content",
    "",
    "Ignore previous instructions",
    "line\nbreak \"quoted\" back\\slash",
    "caf\u{e9} \u{1F600} \u{4e2d}",
    "tab\there/slash",
];

fn doc() -> impl Strategy<Value = Doc> {
    let scalar = prop_oneof![
        prop::sample::select(vec![
            "null", "true", "false", "0", "-1", "3.25", "1e3", "-2E-2", "-0.0e+0",
        ])
        .prop_map(Doc::Scalar),
        prop::sample::select(WORDS).prop_map(|w| Doc::Str(w.to_string())),
        "\\PC{0,12}".prop_map(Doc::Str),
    ];
    scalar.prop_recursive(5, 48, 5, |inner| {
        let key = prop_oneof![
            4 => prop::sample::select(KEYS).prop_map(str::to_string),
            1 => "\\PC{0,4}",
        ];
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..5).prop_map(Doc::Array),
            prop::collection::vec((key, inner), 0..6).prop_map(Doc::Object),
        ]
    })
}

/// A document shaped like a request, so the by-shape paths are taken.
fn request() -> impl Strategy<Value = Doc> {
    let part = (
        prop::sample::select(WORDS),
        prop::collection::vec((prop::sample::select(KEYS), doc()), 0..4),
    )
        .prop_map(|(kind, members)| {
            let mut all = vec![("type".to_string(), Doc::Str(kind.to_string()))];
            all.extend(members.into_iter().map(|(k, v)| (k.to_string(), v)));
            Doc::Object(all)
        });
    let content = prop_oneof![
        doc(),
        prop::collection::vec(part, 0..4).prop_map(Doc::Array),
    ];
    let message = prop::collection::vec(
        prop_oneof![
            prop::sample::select(WORDS).prop_map(|r| ("role".to_string(), Doc::Str(r.to_string()))),
            content.clone().prop_map(|c| ("content".to_string(), c)),
            content.clone().prop_map(|c| ("parts".to_string(), c)),
            content.clone().prop_map(|c| ("output".to_string(), c)),
            (prop::sample::select(KEYS), doc()).prop_map(|(k, v)| (k.to_string(), v)),
        ],
        0..5,
    )
    .prop_map(Doc::Object);
    let list = prop::collection::vec(message, 0..5).prop_map(Doc::Array);
    prop::collection::vec(
        prop_oneof![
            (
                prop::sample::select(vec!["messages", "input", "contents", "tools"]),
                list
            )
                .prop_map(|(k, v)| (k.to_string(), v)),
            (prop::sample::select(KEYS), doc()).prop_map(|(k, v)| (k.to_string(), v)),
        ],
        0..5,
    )
    .prop_map(Doc::Object)
}

/// Where a written document's whitespace and spellings come from.
struct Style {
    bytes: Vec<u8>,
    at: usize,
}

impl Style {
    fn pick(&mut self, n: u8) -> u8 {
        let b = self.bytes.get(self.at % self.bytes.len().max(1)).copied();
        self.at += 1;
        b.unwrap_or(0) % n
    }

    fn space(&mut self) -> &'static str {
        [" ", "", "\n", "\t", "\r\n", ""][usize::from(self.pick(6))]
    }
}

/// Writes `doc`, with whitespace and each character of a string spelled
/// (raw, short escape, `\u` escape with surrogate pairs) as `style` picks.
fn write(doc: &Doc, style: &mut Style, out: &mut String) {
    match doc {
        Doc::Scalar(s) => out.push_str(s),
        Doc::Str(s) => write_str(s, style, out),
        Doc::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(style.space());
                write(item, style, out);
            }
            out.push(']');
        }
        Doc::Object(members) => {
            out.push('{');
            for (i, (key, value)) in members.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(style.space());
                write_str(key, style, out);
                out.push(':');
                out.push_str(style.space());
                write(value, style, out);
            }
            out.push('}');
        }
    }
}

fn write_str(s: &str, style: &mut Style, out: &mut String) {
    out.push('"');
    for c in s.chars() {
        let short = match c {
            '"' => Some("\\\""),
            '\\' => Some("\\\\"),
            '/' => Some("\\/"),
            '\n' => Some("\\n"),
            '\t' => Some("\\t"),
            '\r' => Some("\\r"),
            '\u{8}' => Some("\\b"),
            '\u{c}' => Some("\\f"),
            _ => None,
        };
        let must = c == '"' || c == '\\' || c < ' ';
        match (style.pick(8), short) {
            (0, _) => {
                let mut units = [0u16; 2];
                for unit in c.encode_utf16(&mut units) {
                    out.push_str(&format!("\\u{unit:04x}"));
                }
            }
            (1, _) => {
                let mut units = [0u16; 2];
                for unit in c.encode_utf16(&mut units) {
                    out.push_str(&format!("\\u{unit:04X}"));
                }
            }
            (2, Some(short)) => out.push_str(short),
            _ if must => out.push_str(&format!("\\u{:04x}", u32::from(c))),
            _ => out.push(c),
        }
    }
    out.push('"');
}

/// Bytes that make or break JSON, for mutations.
const MUTATIONS: &[u8] = b"\"\\{}[],:0-e. \n\x01\x7f\x80\xffnu/";

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn generated_documents_agree(
        doc in prop_oneof![doc(), request()],
        style in prop::collection::vec(any::<u8>(), 64..512),
    ) {
        let mut text = String::new();
        write(&doc, &mut Style { bytes: style, at: 0 }, &mut text);
        assert_same(text.as_bytes());
    }

    #[test]
    fn mutated_documents_agree(
        doc in request(),
        style in prop::collection::vec(any::<u8>(), 64..256),
        edits in prop::collection::vec((any::<prop::sample::Index>(), 0..4u8, prop::sample::select(MUTATIONS)), 1..4),
    ) {
        let mut text = String::new();
        write(&doc, &mut Style { bytes: style, at: 0 }, &mut text);
        let mut bytes = text.into_bytes();
        for (at, op, byte) in edits {
            let i = at.index(bytes.len() + 1);
            match op {
                0 if i < bytes.len() => { bytes.remove(i); }
                1 => bytes.insert(i, byte),
                2 if i < bytes.len() => bytes[i] = byte,
                _ => bytes.truncate(i),
            }
        }
        assert_same(&bytes);
    }
}

//! Streaming redaction against a brute-force reference, for fixed tables and
//! for random bodies and chunkings.

use std::collections::VecDeque;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use http_body_util::{BodyExt, BodyStream, StreamBody};
use hyper::HeaderMap;
use hyper::body::{Body, Bytes, Frame};
use hyper::header::HeaderValue;

use base64::Engine as _;
use base64::engine::general_purpose::{STANDARD, URL_SAFE};

use super::{Needles, REPLACEMENT, RedactedBody, Redactor, forms};

const R: &[u8] = b"#";

/// Leftmost-longest replacement written the slow, obvious way.
fn reference(needles: &[&[u8]], body: &[u8], replacement: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    let mut pos = 0;
    while pos < body.len() {
        let longest = needles
            .iter()
            .filter(|n| !n.is_empty() && body[pos..].starts_with(n))
            .map(|n| n.len())
            .max();
        match longest {
            Some(len) => {
                out.extend_from_slice(replacement);
                pos += len;
            }
            None => {
                out.push(body[pos]);
                pos += 1;
            }
        }
    }
    out
}

/// Streams `chunks` through a redactor, checking after every push that the
/// held tail is bounded and, written without escapes, could still grow
/// into a needle (anything else must have been emitted at once). Every
/// other chunk goes in shared (`push_shared`), so each way is held to the
/// one-shot output, and to the other, wherever a chunk is cut.
pub(super) fn stream(needles: &Arc<Needles>, raw: &[&[u8]], chunks: &[&[u8]]) -> Vec<u8> {
    let mut redactor = Redactor::new(Arc::clone(needles));
    let mut out = Vec::new();
    for (i, chunk) in chunks.iter().enumerate() {
        if i % 2 == 0 {
            out.extend(redactor.push(chunk));
        } else {
            out.extend(redactor.push_shared(Bytes::copy_from_slice(chunk)));
        }
        let held: &[u8] = &redactor.held;
        assert!(held.len() <= needles.max_held(), "held {held:?}");
        if !held.is_empty() && !held.iter().any(|b| b"\\%&".contains(b)) {
            assert!(
                raw.iter()
                    .any(|n| n.len() > held.len() && n.starts_with(held)),
                "held {held:?} cannot grow into a needle"
            );
        }
    }
    out.extend(redactor.finish());
    assert_eq!(redactor.held_len(), 0);
    out
}

fn check(raw: &[&[u8]], chunks: &[&[u8]]) {
    let needles = Arc::new(Needles::new(raw, R));
    let body = chunks.concat();
    let want = reference(raw, &body, R);
    let oneshot = needles.replace_all(&body).unwrap_or_else(|| body.clone());
    assert_eq!(
        String::from_utf8_lossy(&oneshot),
        String::from_utf8_lossy(&want),
        "one-shot of {body:?}"
    );
    let got = stream(&needles, raw, chunks);
    assert_eq!(
        String::from_utf8_lossy(&got),
        String::from_utf8_lossy(&want),
        "chunks {chunks:?}"
    );
}

/// Name, needles, chunks, expected output.
type Case<'a> = (&'a str, &'a [&'a [u8]], &'a [&'a [u8]], &'a [u8]);

#[test]
fn redact_table() {
    let secret: &[&[u8]] = &[b"secret"];
    let overlapping: &[&[u8]] = &[b"abc", b"bcd", b"abcd", b"b", b"cdx"];
    let cases: &[Case] = &[
        ("at start", secret, &[b"secret tail"], b"# tail"),
        ("in middle", secret, &[b"a secret b"], b"a # b"),
        ("at end", secret, &[b"tail secret"], b"tail #"),
        ("whole body", secret, &[b"secret"], b"#"),
        ("adjacent", secret, &[b"secretsecret"], b"##"),
        ("split in two", secret, &[b"a sec", b"ret b"], b"a # b"),
        (
            "split in three",
            secret,
            &[b"a se", b"cr", b"et b"],
            b"a # b",
        ),
        (
            "byte by byte",
            secret,
            &[b"s", b"e", b"c", b"r", b"e", b"t"],
            b"#",
        ),
        ("false start", secret, &[b"secre", b"secret"], b"secre#"),
        ("prefix at end", secret, &[b"a", b"secre"], b"asecre"),
        ("no match", secret, &[b"nothing", b" here"], b"nothing here"),
        (
            "empty chunks",
            secret,
            &[b"", b"sec", b"", b"ret", b""],
            b"#",
        ),
        ("no chunks", secret, &[], b""),
        ("no needles", &[], &[b"secret"], b"secret"),
        ("only empty needle", &[b""], &[b"secret"], b"secret"),
        ("longest wins", overlapping, &[b"abcd"], b"#"),
        ("leftmost wins", overlapping, &[b"xabcdx"], b"x#x"),
        (
            "longest wins split",
            overlapping,
            &[b"ab", b"c", b"d"],
            b"#",
        ),
        ("shorter at end", overlapping, &[b"ab", b"c"], b"#"),
        ("short inside", overlapping, &[b"xbx", b"ab"], b"x#xa#"),
        ("leftmost over later", overlapping, &[b"abcdx"], b"#x"),
    ];
    for (name, raw, chunks, want) in cases {
        let needles = Arc::new(Needles::new(raw, R));
        let got = stream(&needles, raw, chunks);
        assert_eq!(
            String::from_utf8_lossy(&got),
            String::from_utf8_lossy(want),
            "{name}"
        );
        check(raw, chunks);
    }
}

#[test]
fn redact_every_split_point() {
    let raw: &[&[u8]] = &[b"secret", b"c2VjcmV0", b"sec", b"t0ken", b"t0"];
    let body: &[u8] = b"xx secret c2VjcmV0sect0ken t0 secsecret c2Vj t0kent0";
    for i in 0..=body.len() {
        check(raw, &[&body[..i], &body[i..]]);
        for j in i..=body.len() {
            check(raw, &[&body[..i], &body[i..j], &body[j..]]);
        }
    }
}

#[test]
fn replace_all_returns_none_without_match() {
    let needles = Needles::new(&[b"secret"], REPLACEMENT);
    assert_eq!(needles.replace_all(b"nothing to see"), None);
    assert_eq!(needles.replace_all(b""), None);
    assert_eq!(
        needles.replace_all(b"Bearer secret").as_deref(),
        Some(&b"Bearer [redacted:credential]"[..])
    );
    assert_eq!(Needles::new(&[], REPLACEMENT).replace_all(b"x"), None);
}

#[test]
fn emits_everything_that_cannot_start_a_needle() {
    let needles = Arc::new(Needles::new(&[b"secret"], REPLACEMENT));
    let mut redactor = Redactor::new(needles);
    assert_eq!(redactor.push(b"data: hello\n\n"), b"data: hello\n\n");
    assert_eq!(redactor.push(b"data: sec"), b"data: ");
    assert_eq!(redactor.held_len(), 3);
    assert_eq!(redactor.push(b"ond\n\n"), b"second\n\n");
    assert!(!redactor.matched());
    assert_eq!(redactor.push(b"data: secr"), b"data: ");
    assert_eq!(redactor.push(b"et\n"), b"[redacted:credential]\n");
    assert!(redactor.matched());
    assert_eq!(redactor.finish(), b"");
}

#[test]
fn held_memory_is_bounded() {
    let long: Vec<u8> = std::iter::repeat_n(b'a', 63).chain([b'b']).collect();
    let needles = Arc::new(Needles::new(&[&long], R));
    let mut redactor = Redactor::new(Arc::clone(&needles));
    let mut out = Vec::new();
    // Runs of 'a' are always a possible start of the needle.
    for _ in 0..1000 {
        out.extend(redactor.push(b"a"));
        assert!(redactor.held_len() < needles.max_len());
    }
    out.extend(redactor.push(b"aaaaaaaaaab"));
    assert_eq!(redactor.held_len(), 0);
    out.extend(redactor.finish());
    let mut want = vec![b'a'; 1010 - 63];
    want.extend_from_slice(R);
    assert_eq!(out, want);
}

/// A shared chunk with nothing to redact comes out as itself (a slice of
/// it, the tail that may begin a needle held), never a copy; one with
/// something to redact, or after a held tail, is rewritten.
#[test]
fn a_clean_shared_chunk_is_passed_on_not_copied() {
    let needles = Arc::new(Needles::new(&[b"s3cr3t-value"], b"[REDACTED]"));
    let mut redactor = Redactor::new(Arc::clone(&needles));
    let clean = Bytes::from_static(b"nothing here but text, then s3cr");
    let out = redactor.push_shared(clean.clone());
    assert_eq!(&out[..], b"nothing here but text, then ");
    assert_eq!(out.as_ptr(), clean.as_ptr(), "a copy of a clean chunk");
    let out = redactor.push_shared(Bytes::from_static(b"3t-value and more"));
    assert_eq!(&out[..], b"[REDACTED] and more");
    let dirty = Bytes::from_static(b"a s3cr3t-value in the middle");
    let out = redactor.push_shared(dirty.clone());
    assert_eq!(&out[..], b"a [REDACTED] in the middle");
    assert!(redactor.matched());
    assert!(redactor.finish().is_empty());
}

#[test]
fn finish_redacts_needles_inside_held_tail() {
    // "ab" is held as a possible start of "abc" but contains "b".
    let raw: &[&[u8]] = &[b"abc", b"b"];
    let needles = Arc::new(Needles::new(raw, R));
    let mut redactor = Redactor::new(needles);
    assert_eq!(redactor.push(b"xab"), b"x");
    assert_eq!(redactor.finish(), b"a#");
    assert!(redactor.matched());
}

/// xorshift64: deterministic, no dependency.
pub(super) struct Rng(pub(super) u64);

impl Rng {
    pub(super) fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    pub(super) fn below(&mut self, n: usize) -> usize {
        usize::try_from(self.next() % u64::try_from(n).unwrap_or(u64::MAX)).unwrap_or(0)
    }
}

fn random_streams_match_one_shot(trie_only: bool) {
    // A tiny alphabet makes partial and overlapping matches common.
    const ALPHABET: &[u8] = b"abc";
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    for _ in 0..3000 {
        let raw: Vec<Vec<u8>> = (0..1 + rng.below(4))
            .map(|_| {
                (0..rng.below(7))
                    .map(|_| ALPHABET[rng.below(ALPHABET.len())])
                    .collect()
            })
            .collect();
        let raw: Vec<&[u8]> = raw.iter().map(Vec::as_slice).collect();
        let mut body = Vec::new();
        for _ in 0..rng.below(12) {
            if rng.below(2) == 0 {
                body.extend_from_slice(raw[rng.below(raw.len())]);
            } else {
                body.extend((0..rng.below(5)).map(|_| ALPHABET[rng.below(ALPHABET.len())]));
            }
        }
        let mut chunks: Vec<&[u8]> = Vec::new();
        let mut rest = body.as_slice();
        while !rest.is_empty() {
            let (chunk, tail) = rest.split_at(rng.below(rest.len() + 1));
            chunks.push(chunk);
            rest = tail;
        }
        let mut needles = Needles::new(&raw, R);
        if trie_only {
            needles.anchors = None;
            needles.automaton = None;
        }
        let needles = Arc::new(needles);
        let want = reference(&raw, &body, R);
        let oneshot = needles.replace_all(&body).unwrap_or_else(|| body.clone());
        assert_eq!(oneshot, want, "needles {raw:?} body {body:?}");
        let got = stream(&needles, &raw, &chunks);
        assert_eq!(got, want, "needles {raw:?} chunks {chunks:?}");
    }
}

#[test]
fn random_streams_match_one_shot_automaton() {
    random_streams_match_one_shot(false);
}

#[test]
fn random_streams_match_one_shot_trie_fallback() {
    random_streams_match_one_shot(true);
}

/// A needle's bytes with one of them escaped, as JSON, percent or HTML.
fn one_escaped(rng: &mut Rng, form: &[u8]) -> Vec<u8> {
    let at = rng.below(form.len());
    let escape = match rng.below(3) {
        0 => format!("\\u{:04x}", form[at]),
        1 => format!("%{:02X}", form[at]),
        _ => format!("&#{};", form[at]),
    };
    [&form[..at], escape.as_bytes(), &form[at + 1..]].concat()
}

/// Response-like text around a real secret's forms (whole, one byte
/// escaped, cut short, pieces of them, back to back), split at random:
/// the anchored search finds what the automaton finds, and every
/// chunking streams to the one-shot output.
#[test]
fn random_chunkings_of_bodies_with_forms_match_one_shot() {
    const ALPHABET: &[u8] = b"ABCXYZQabcxyzq0123456789-_+/";
    const TEXT: &[&[u8]] = &[
        b"{\"id\": \"",
        b"\", ",
        b"\\n",
        b"\\\"",
        b"&amp;",
        b"%20",
        b"<p class=\"x\">",
        b"the ",
        b"7f3a09 ",
        b"sk-",
        b"c2st",
        b"==",
        b" ",
    ];
    let mut rng = Rng(0x0dd_ba11_5eed_f00d);
    for round in 0..400 {
        let secret: Vec<u8> = (0..12 + rng.below(36))
            .map(|_| ALPHABET[rng.below(ALPHABET.len())])
            .collect();
        let owned = forms(&secret);
        let raw: Vec<&[u8]> = owned.iter().map(Vec::as_slice).collect();
        let needles = Arc::new(Needles::new(&raw, R));
        assert!(needles.anchors.is_some(), "{secret:?} is anchored");
        let mut automaton = Needles::new(&raw, R);
        automaton.anchors = None;
        automaton.automaton = super::automaton(&raw);
        let mut body = Vec::new();
        for _ in 0..rng.below(24) {
            let form = raw[rng.below(raw.len())];
            match rng.below(6) {
                0 => body.extend_from_slice(form),
                1 => body.extend(one_escaped(&mut rng, form)),
                2 => body.extend_from_slice(&form[..rng.below(form.len())]),
                3 => {
                    let from = rng.below(form.len());
                    body.extend_from_slice(&form[from..form.len().min(from + 4 + rng.below(8))]);
                }
                _ => body.extend_from_slice(TEXT[rng.below(TEXT.len())]),
            }
        }
        let oneshot = needles.replace_all(&body).unwrap_or_else(|| body.clone());
        let automaton = automaton.replace_all(&body).unwrap_or_else(|| body.clone());
        assert_eq!(
            String::from_utf8_lossy(&oneshot),
            String::from_utf8_lossy(&automaton),
            "round {round}: {:?}",
            String::from_utf8_lossy(&body)
        );
        for _ in 0..4 {
            let mut chunks: Vec<&[u8]> = Vec::new();
            let mut rest = body.as_slice();
            while !rest.is_empty() {
                let (chunk, tail) = rest.split_at(rng.below(rest.len().min(64) + 1));
                chunks.push(chunk);
                rest = tail;
            }
            let got = stream(&needles, &raw, &chunks);
            assert_eq!(
                String::from_utf8_lossy(&got),
                String::from_utf8_lossy(&oneshot),
                "round {round}: chunks {chunks:?}"
            );
        }
    }
}

#[test]
fn never_panics_on_arbitrary_bytes() {
    let mut rng = Rng(42);
    let secret: Vec<u8> = (0..40).map(|_| rng.next().to_le_bytes()[0]).collect();
    let owned = forms(&secret);
    let raw: Vec<&[u8]> = owned.iter().map(Vec::as_slice).collect();
    let needles = Arc::new(Needles::new(&raw, REPLACEMENT));
    let mut body: Vec<u8> = (0..4000).map(|_| rng.next().to_le_bytes()[0]).collect();
    body.splice(1000..1000, owned[1].iter().copied());
    body.splice(3000..3000, secret.iter().copied());
    let chunks: Vec<&[u8]> = body.chunks(7).collect();
    let got = stream(&needles, &raw, &chunks);
    assert_eq!(got, reference(&raw, &body, REPLACEMENT));
    assert_eq!(
        got.windows(REPLACEMENT.len())
            .filter(|w| *w == REPLACEMENT)
            .count(),
        2
    );
}

#[test]
fn forms_of_known_secret() {
    let secret: &[u8] = b"k3y/+?\"\\\n\x01~\xfb\xff";
    let want: &[&[u8]] = &[
        secret,
        b"azN5Lys/IlwKAX77/w==",
        b"azN5Lys/IlwKAX77/w",
        b"azN5Lys_IlwKAX77_w==",
        b"azN5Lys_IlwKAX77_w",
        b"k3y%2F%2B%3F%22%5C%0A%01~%FB%FF",
        b"k3y%2f%2b%3f%22%5c%0a%01~%fb%ff",
        b"k3y/+?\\\"\\\\\\n\\u0001~\xfb\xff",
        b"k3y\\/+?\\\"\\\\\\n\\u0001~\xfb\xff",
        b"6b33792f2b3f225c0a017efbff",
        b"6B33792F2B3F225C0A017EFBFF",
    ];
    assert_eq!(forms(secret)[..want.len()], *want);
}

/// Wherever the secret sits in a longer value, its base64 holds one of
/// the forms, in either alphabet (for secrets of 13 bytes or more: the
/// needles of shorter ones at some offsets are too short to trust).
#[test]
fn base64_of_a_secret_inside_a_longer_value_is_a_form() {
    let mut rng = Rng(7);
    for len in [13, 14, 15, 20, 40, 41] {
        let secret: Vec<u8> = (0..len).map(|_| rng.next().to_le_bytes()[0]).collect();
        let owned = forms(&secret);
        for before in 0..6 {
            for after in 0..4 {
                let mut value: Vec<u8> = (0..before).map(|_| rng.next().to_le_bytes()[1]).collect();
                value.extend_from_slice(&secret);
                value.extend((0..after).map(|_| rng.next().to_le_bytes()[2]));
                for engine in [STANDARD, URL_SAFE] {
                    let encoded = engine.encode(&value).into_bytes();
                    let found = owned
                        .iter()
                        .any(|f| encoded.windows(f.len()).any(|w| w == f.as_slice()));
                    assert!(
                        found,
                        "secret of {len} bytes after {before}, before {after}"
                    );
                }
            }
        }
    }
}

#[test]
fn forms_deduplicate_and_skip_empty() {
    assert!(forms(b"").is_empty());
    // Length 3: no padding; alphanumeric: nothing to escape; too short
    // for hex.
    let want: &[&[u8]] = &[b"abc", b"YWJj"];
    assert_eq!(forms(b"abc"), want);
    // All digits: the hex in either case is one form.
    let forms = forms(b"0123456789");
    assert_eq!(
        forms
            .iter()
            .filter(|f| f.as_slice() == b"30313233343536373839")
            .count(),
        1
    );
}

#[test]
fn a_header_named_by_a_secret_in_another_case_is_dropped() {
    let needles = Needles::new(&[b"sk-AbC123xyz"], REPLACEMENT);
    let mut headers = HeaderMap::new();
    // Header names arrive lower-cased.
    headers.insert("x-sk-abc123xyz", HeaderValue::from_static("1"));
    headers.insert("x-other", HeaderValue::from_static("fine"));
    assert!(needles.redact_headers(&mut headers));
    assert!(!headers.contains_key("x-sk-abc123xyz"), "{headers:?}");
    assert_eq!(headers["x-other"], "fine");
}

#[test]
fn redact_headers_in_place() {
    let needles = Needles::new(&[b"s3cr3t"], REPLACEMENT);
    let mut headers = HeaderMap::new();
    headers.insert("authorization", HeaderValue::from_static("Bearer s3cr3t"));
    headers.insert("x-other", HeaderValue::from_static("fine"));
    assert!(needles.redact_headers(&mut headers));
    assert_eq!(headers["authorization"], "Bearer [redacted:credential]");
    assert_eq!(headers["x-other"], "fine");
    assert!(!needles.redact_headers(&mut headers));
}

/// A body yielding fixed frames, returning `Pending` (and waking) between
/// them as a network body would.
struct Frames {
    frames: VecDeque<Result<Frame<Bytes>, std::io::Error>>,
    pending: bool,
}

impl Frames {
    fn new(frames: Vec<Result<Frame<Bytes>, std::io::Error>>) -> Frames {
        Frames {
            frames: frames.into(),
            pending: false,
        }
    }
}

impl Body for Frames {
    type Data = Bytes;
    type Error = std::io::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, std::io::Error>>> {
        self.pending = !self.pending;
        if self.pending {
            cx.waker().wake_by_ref();
            return Poll::Pending;
        }
        Poll::Ready(self.frames.pop_front())
    }
}

fn data(s: &str) -> Result<Frame<Bytes>, std::io::Error> {
    Ok(Frame::data(Bytes::copy_from_slice(s.as_bytes())))
}

#[tokio::test]
async fn redacted_body_over_stream_body() {
    let needles = Arc::new(Needles::new(&[b"s3cr3t", b"czNjcjN0"], REPLACEMENT));
    let mut trailers = HeaderMap::new();
    trailers.insert("x-echo", HeaderValue::from_static("was s3cr3t"));
    let inner = StreamBody::new(BodyStream::new(Frames::new(vec![
        data("data: s3"),
        data("cr3t\n\n"),
        data(""),
        data("data: czNj"),
        data("cjN0 ok\n\ndata: s3cr"),
        Ok(Frame::trailers(trailers)),
    ])));
    let mut body = RedactedBody::new(inner, needles);
    let mut frames = Vec::new();
    while let Some(frame) = body.frame().await {
        frames.push(frame.expect("no error"));
    }
    assert!(body.matched());
    assert!(body.is_end_stream());
    let (data, trailers): (Vec<_>, Vec<_>) = frames.into_iter().partition(Frame::is_data);
    let data: Vec<u8> = data
        .into_iter()
        .filter_map(|f| f.into_data().ok())
        .flat_map(|d| d.to_vec())
        .collect();
    assert_eq!(
        String::from_utf8_lossy(&data),
        "data: [redacted:credential]\n\ndata: [redacted:credential] ok\n\ndata: s3cr"
    );
    let [trailers] = trailers.as_slice() else {
        panic!("one trailers frame, last: {trailers:?}");
    };
    assert_eq!(
        trailers.trailers_ref().map(|t| &t["x-echo"]),
        Some(&HeaderValue::from_static("was [redacted:credential]"))
    );
}

#[tokio::test]
async fn redacted_body_flushes_tail_and_passes_errors() {
    let needles = Arc::new(Needles::new(&[b"s3cr3t"], REPLACEMENT));
    let body = RedactedBody::new(Frames::new(vec![data("ok s3c")]), Arc::clone(&needles));
    let collected = body.collect().await.expect("no error").to_bytes();
    assert_eq!(collected, "ok s3c");

    let failing = Frames::new(vec![data("ok s3c"), Err(std::io::Error::other("reset"))]);
    let mut body = RedactedBody::new(failing, needles);
    let first = body.frame().await.expect("a frame").expect("data");
    assert_eq!(first.into_data().ok(), Some(Bytes::from_static(b"ok ")));
    let err = body.frame().await.expect("a frame").expect_err("the error");
    assert_eq!(err.to_string(), "reset");
    assert!(body.frame().await.is_none());
}

#[test]
fn redacted_body_wraps_full() {
    fn assert_body<B: Body>(_: &B) {}
    let inner = http_body_util::Full::new(Bytes::from_static(b"x"));
    assert_body(&RedactedBody::new(inner, Arc::new(Needles::new(&[], R))));
}

/// An upstream that echoes the secret as a header name: the header goes.
#[test]
fn a_header_named_by_the_secret_is_dropped() {
    let secret: &[u8] = b"sk-live-0123456789abcdef";
    let needles = Needles::new(&[secret], R);
    let mut headers = HeaderMap::new();
    headers.insert(
        hyper::header::HeaderName::from_bytes(&[b"x-", secret].concat()).expect("a token"),
        HeaderValue::from_static("1"),
    );
    headers.insert("x-other", HeaderValue::from_static("2"));
    assert!(needles.redact_headers(&mut headers));
    assert_eq!(headers.len(), 1, "{headers:?}");
    assert_eq!(headers["x-other"], "2");
}

/// Texts shorter than the shortest needle are passed over unread; at
/// exactly its length, raw, in another case (names) and escaped (names and
/// values), a needle is still found.
#[test]
fn the_shortest_needle_bounds_what_headers_are_read() {
    let needles = Needles::new(&[b"sk-AbC12", b"sk-AbC12xyz"], REPLACEMENT);
    let cases: &[(&str, &str, bool)] = &[
        ("x-short", "sk-AbC1", false),
        ("x-exact", "sk-AbC12", true),
        ("x-escaped", "sk-AbC%312", true),
        ("x-json", "\\u0073k-AbC12", true),
        ("sk-abc12", "1", true),
        ("sk-abc1", "1", false),
        ("sk-abc%312", "1", true),
    ];
    for &(name, value, want) in cases {
        let mut headers = HeaderMap::new();
        headers.insert(
            hyper::header::HeaderName::from_bytes(name.as_bytes()).expect("a name"),
            HeaderValue::from_str(value).expect("a value"),
        );
        assert_eq!(
            needles.redact_headers(&mut headers),
            want,
            "{name}: {value}"
        );
    }
    assert!(needles.replace_all(b"sk-AbC1").is_none());
    assert!(needles.replace_all(b"sk-AbC12").is_some());
}

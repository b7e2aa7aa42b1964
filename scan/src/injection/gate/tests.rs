use super::*;
use crate::injection::encoded::MIN_RUN;
use aho_corasick::{AhoCorasick, Input, MatchKind};
use proptest::prelude::*;

/// What the gate must find, from the literals alone: the hits of a
/// leftmost-longest automaton over the whole text, resumed one byte
/// after each hit's start, where a literal occurs with its key at a
/// token start.
pub(crate) struct Oracle {
    literals: Vec<Box<[u8]>>,
    automaton: AhoCorasick,
    gate: Gate,
    /// The same gate sieving one start at a time (no AVX2, no AVX-512).
    portable: Gate,
}

impl Oracle {
    pub(crate) fn new<S: AsRef<[u8]>>(literals: &[S]) -> Oracle {
        let gate = Gate::new(literals).expect("gate");
        #[allow(unused_mut)]
        let mut portable = Gate::new(literals).expect("gate");
        #[cfg(target_arch = "x86_64")]
        {
            portable.avx512 = None;
            portable.avx2 = None;
        }
        Oracle {
            literals: literals.iter().map(|l| l.as_ref().into()).collect(),
            automaton: AhoCorasick::builder()
                .ascii_case_insensitive(true)
                .match_kind(MatchKind::LeftmostLongest)
                .build(literals)
                .expect("automaton"),
            gate,
            portable,
        }
    }

    /// The oracle of `gate`'s literals.
    pub(crate) fn of(gate: &Gate) -> Oracle {
        Oracle::new(&gate.literals)
    }

    fn want(&self, text: &[u8]) -> Vec<Hit> {
        let mut hits = Vec::new();
        let mut from = 0;
        while let Some(m) = self.automaton.find(Input::new(text).range(from..)) {
            from = m.start() + 1;
            if self.keyed_at(text, m.start()) {
                hits.push(Hit {
                    start: m.start(),
                    end: m.end(),
                    literal: m.pattern().as_usize(),
                });
            }
        }
        hits
    }

    /// Whether a literal occurs at `start` with its key at a token start.
    fn keyed_at(&self, text: &[u8], start: usize) -> bool {
        self.literals.iter().any(|literal| {
            let (offset, _) = key(literal).expect("a key");
            let at = start + offset;
            let occurs = text
                .get(start..start + literal.len())
                .is_some_and(|t| t.eq_ignore_ascii_case(literal));
            occurs && starts_token(if at == 0 { b' ' } else { text[at - 1] }, text[at])
        })
    }

    /// The gate finds what it must, with the vector sieve and without.
    #[track_caller]
    pub(crate) fn assert_exact(&self, text: &[u8]) {
        let want = self.want(text);
        let shown = || String::from_utf8_lossy(text).into_owned();
        assert_eq!(self.gate.find(text).0, want, "text: {}", shown());
        assert_eq!(
            self.portable.find(text).0,
            want,
            "portable; text: {}",
            shown()
        );
    }
}

#[track_caller]
fn assert_exact<S: AsRef<[u8]>>(literals: &[S], text: &[u8]) {
    Oracle::new(literals).assert_exact(text);
}

/// The sieve's candidates (positions and common bits), then those that
/// pass level 2 (positions and key lengths), by every way this CPU has,
/// for every chunk.
fn sieved(gate: &Gate, text: &[u8]) -> Vec<[Vec<(u32, u32)>; 2]> {
    let mut ways = Vec::new();
    let mut at = vec![0; CHUNK + SLACK];
    let mut common = vec![0; CHUNK + SLACK];
    let mut portable = [Vec::new(), Vec::new()];
    let mut from = 0;
    while from < text.len() {
        let to = (from + CHUNK).min(text.len());
        let n = gate
            .sieve
            .portable(text, (from, to), [&mut at, &mut common]);
        portable[0].extend((0..n).map(|k| (at[k] + from as u32, common[k])));
        let kept = gate.level2(text, from, n, [&mut at, &mut common]);
        portable[1].extend((0..kept).map(|k| (at[k] + from as u32, common[k])));
        from = to;
    }
    ways.push(portable);
    #[cfg(target_arch = "x86_64")]
    if let Some(avx2) = Avx2::detect(&gate.sieve) {
        let mut vector = [Vec::new(), Vec::new()];
        let mut words = vec![0; CHUNK + SLACK];
        let mut nexts = vec![0; CHUNK + SLACK];
        let mut from = 0;
        while from < text.len() {
            let to = (from + CHUNK).min(text.len());
            // Stale candidates in the buffers must not show through.
            for buffer in [&mut at, &mut common, &mut words, &mut nexts] {
                buffer.fill(u32::MAX);
            }
            let out = [&mut at[..], &mut common[..], &mut words[..], &mut nexts[..]];
            let n = avx2.sieve(
                &gate.sieve,
                text,
                (from, to),
                out,
                &mut Printable::default(),
            );
            vector[0].extend((0..n).map(|k| (at[k] + from as u32, common[k])));
            let kept = gate.level2(text, from, n, [&mut at, &mut common]);
            vector[1].extend((0..kept).map(|k| (at[k] + from as u32, common[k])));
            from = to;
        }
        ways.push(vector);
    }
    #[cfg(target_arch = "x86_64")]
    if let Some(avx512) = Avx512::detect() {
        let mut vector = [Vec::new(), Vec::new()];
        let mut words = vec![0; CHUNK + SLACK];
        let mut nexts = vec![0; CHUNK + SLACK];
        let mut scratch = vec![0; 3 * (CHUNK + SLACK)];
        let mut from = 0;
        while from < text.len() {
            let to = (from + CHUNK).min(text.len());
            // The sieve without the words, then with them.
            let out = [&mut at[..], &mut common[..], &mut words[..], &mut nexts[..]];
            let n = avx512.sieve::<false>(
                &gate.sieve,
                text,
                (from, to),
                out,
                &mut scratch,
                &mut Printable::default(),
            );
            let without: Vec<_> = (0..n).map(|k| (at[k], common[k])).collect();
            let out = [&mut at[..], &mut common[..], &mut words[..], &mut nexts[..]];
            let n = avx512.sieve::<true>(
                &gate.sieve,
                text,
                (from, to),
                out,
                &mut scratch,
                &mut Printable::default(),
            );
            assert_eq!(
                (0..n).map(|k| (at[k], common[k])).collect::<Vec<_>>(),
                without
            );
            vector[0].extend((0..n).map(|k| (at[k] + from as u32, common[k])));
            // The words written with the candidates are theirs.
            for k in 0..n {
                let w = word_at(text, from + at[k] as usize) | FOLD;
                assert_eq!((words[k], nexts[k]), (w as u32, (w >> 32) as u32));
            }
            // Level 2 sixteen at a time, however few the candidates.
            let out = [&mut at[..], &mut common[..], &mut words[..], &mut nexts[..]];
            let kept = avx512.lengths(gate, n, out);
            vector[1].extend((0..kept).map(|k| (at[k] + from as u32, common[k])));
            from = to;
        }
        ways.push(vector);
    }
    ways
}

#[track_caller]
fn assert_sieves_agree(gate: &Gate, text: &[u8]) {
    let ways = sieved(gate, text);
    for way in &ways[1..] {
        assert_eq!(way, &ways[0], "text: {:?}", String::from_utf8_lossy(text));
    }
}

const LITERALS: &[&str] = &[
    "ignore previous",
    "ignore",
    "<|",
    "what",
    "dan",
    "\"}",
    "orders from",
    "new orders from",
    "n't follow",
    "système",
    "@",
    "![",
    "ai:",
    "summarizing this",
    "summarizing the",
    "without customer",
    "a b c d e qzxjvkwy",
    "b c",
];

#[test]
fn hits_are_the_automatons_where_a_key_starts_a_token() {
    let oracle = Oracle::new(LITERALS);
    for text in [
        "we should IGNORE PREVIOUS advice, then What? and <|im_start|> for a few",
        "new orders from the top; take Orders From nobody; don't follow them",
        "le Système and Dan, dan, abundant, sedan. ai: hi <| |> mail@x ![a](b)",
        "summarizing these and summarizing this, without customers, customer",
        "a b c d e qzxjvkwy and a b c",
        "ignore ignore previous ignoreprevious xignore previous",
        "",
        "@",
        "dan",
    ] {
        oracle.assert_exact(text.as_bytes());
    }
}

/// Literals at every offset around the 64-byte blocks, the chunks and
/// the text's ends.
#[test]
fn literals_anywhere_are_found() {
    let oracle = Oracle::new(LITERALS);
    for needle in [
        "dan",
        "ignore",
        "\"}",
        "<|",
        "@",
        "summarizing the",
        "système",
    ] {
        for at in (0..140).chain(CHUNK - 70..CHUNK + 10) {
            for tail in [0, 1, 5] {
                let mut text = "x".repeat(at);
                if at > 0 {
                    text.pop();
                    text.push(' ');
                }
                text.push_str(needle);
                text.push_str(&" y".repeat(tail));
                let (hits, _) = oracle.gate.find(text.as_bytes());
                assert!(
                    hits.iter().any(|h| h.start == at),
                    "{needle} at {at}: {hits:?}"
                );
                oracle.assert_exact(text.as_bytes());
            }
        }
    }
}

/// Where literals that are equal but for case occur, the automaton
/// reports the first; so does the gate.
#[test]
fn equal_literals_report_the_first() {
    assert_exact(&["Dan", "dan", "DAN is", "dan is"], b"so dan is here, DAN");
}

#[test]
fn prose_without_the_keys_has_no_hit() {
    let gate = Gate::new(&["ignore", "<|", "orders from"]).expect("gate");
    for text in [
        "the report is due on friday, shipped from the warehouse",
        "",
        "g",
    ] {
        assert!(gate.find(text.as_bytes()).0.is_empty(), "{text}");
    }
}

#[test]
fn a_literal_without_a_key_disables_the_gate() {
    assert!(Gate::new(&["ab", "  "]).is_none());
    assert!(Gate::new(&["ab", "9"]).is_none());
}

#[test]
fn token_starts_are_word_beginnings_marks_and_characters() {
    let text = b" an_x9b, \xc3\xa9t\xc3\xa9 a";
    let mut window = [b' '; 65];
    window[1..1 + text.len()].copy_from_slice(text);
    let mask = starts(&window);
    let found: Vec<usize> = (0..64).filter(|k| mask & (1 << k) != 0).collect();
    // "an" 1, "_" 3, "x" 4, "b" 6, "," 7, "é" 9, "t" 11, "é" 12, "a" 15.
    assert_eq!(found, [1, 3, 4, 6, 7, 9, 11, 12, 15]);
}

/// Every byte value at every offset of a block, before and after
/// letters, at the text's end and across chunks.
#[test]
fn the_sieves_agree_on_every_byte_everywhere() {
    let gate = Gate::new(LITERALS).expect("gate");
    for len in (0..200).chain([CHUNK - 1, CHUNK, CHUNK + 1, 3 * CHUNK + 67]) {
        for seed in 0..4_usize {
            let text: Vec<u8> = (0..len)
                .map(|i| {
                    let x = (i * 37 + seed * 101) ^ (i >> 3);
                    if x % 3 == 0 {
                        b"ig<|\"}@da!`"[x % 11]
                    } else {
                        x as u8
                    }
                })
                .collect();
            assert_sieves_agree(&gate, &text);
        }
    }
}

/// With the scanner's literals (keys of every length, many sharing
/// heads and first bytes), on the benchmark's bodies cut at odd places.
#[test]
fn the_sieves_agree_with_the_scanners_keys() {
    use crate::injection::extract::Body;
    use sluice_scan_bench::{Api, body};
    let gate = crate::injection::scanner::SCANNER.gate().expect("gate");
    for api in [Api::OpenAiChat, Api::AnthropicMessages] {
        let bytes = body(api, 64 << 10, 7);
        let read = Body::read(Some("application/json"), &bytes);
        for segment in read.segments() {
            let text = segment.text.as_bytes();
            for cut in [0, 1, 7, 8, 9, 63, 64, 65] {
                assert_sieves_agree(gate, &text[cut.min(text.len())..]);
                assert_sieves_agree(gate, &text[..text.len().saturating_sub(cut)]);
            }
        }
    }
}

/// Whether `text` holds [`MIN_RUN`] printable ASCII bytes in a row, one
/// window at a time.
fn has_printable_run(text: &[u8]) -> bool {
    text.windows(MIN_RUN)
        .any(|w| w.iter().all(|b| (b'!'..=b'~').contains(b)))
}

/// What the gate says of a text's printable runs: exactly whether it
/// holds one with AVX-512 or AVX2 (each checked where the CPU has it),
/// that it may without.
fn assert_printable_runs(gate: &Gate, text: &[u8]) {
    let want = has_printable_run(text);
    let shown = String::from_utf8_lossy(text);
    let said = gate.find(text).1.may_hold_run();
    #[cfg(target_arch = "x86_64")]
    if gate.avx512.is_some() || gate.avx2.is_some() {
        assert_eq!(said, want, "{shown}");
    } else {
        assert!(said);
    }
    #[cfg(not(target_arch = "x86_64"))]
    assert!(said);
    #[cfg(target_arch = "x86_64")]
    if let Some(avx2) = &gate.avx2 {
        // The AVX2 sieve alone, chunk by chunk as `Gate::find` reads.
        let mut printable = Printable::default();
        let mut out = [(); 4].map(|()| vec![0; CHUNK + SLACK]);
        let mut from = 0;
        while from < text.len() {
            let to = (from + CHUNK).min(text.len());
            let [a, b, c, d] = &mut out;
            avx2.sieve(&gate.sieve, text, (from, to), [a, b, c, d], &mut printable);
            from = to;
        }
        assert_eq!(printable.may_hold_run(), want, "AVX2: {shown}");
    }
}

/// Runs of fifteen to seventy printable bytes (letters, digits, the marks
/// of base64) in prose, at every place against the blocks and chunks,
/// and texts that are one run.
#[test]
fn the_sieve_sees_every_long_printable_run() {
    let gate = Gate::new(LITERALS).expect("gate");
    for len in [0, 15, 16, 17, 64, 65, 127, 128, 200, CHUNK, CHUNK + 70] {
        for run in [15, 16, 17, 64, 70] {
            let starts = [0, 1, 48, 49, 50, 63, 64, 100, CHUNK - 20, CHUNK - 8];
            for start in starts.into_iter().chain([len.saturating_sub(run)]) {
                let mut text: Vec<u8> = b"a quick brown fox, \xc3\xa9t\xc3\xa9 "
                    .iter()
                    .copied()
                    .cycle()
                    .take(len)
                    .collect();
                if start + run > len {
                    continue;
                }
                for (k, b) in text[start..start + run].iter_mut().enumerate() {
                    *b = b"Aa9+/-_=~!"[k % 10];
                }
                assert_printable_runs(&gate, &text);
            }
        }
        let all: Vec<u8> = (0..len).map(|k| b'!' + (k % 94) as u8).collect();
        assert_printable_runs(&gate, &all);
    }
}

fn texts() -> impl Strategy<Value = Vec<u8>> {
    let pieces = prop_oneof![
        proptest::sample::select(LITERALS.to_vec()).prop_map(|s| s.as_bytes().to_vec()),
        proptest::sample::select(vec![
            " ",
            "x",
            "Ignore",
            "DAN",
            "an",
            "'",
            "<",
            "|",
            "\n",
            "é",
            "summarizing ",
            "orders",
        ])
        .prop_map(|s| s.as_bytes().to_vec()),
        proptest::collection::vec(proptest::num::u8::ANY, 1..4),
    ];
    proptest::collection::vec(pieces, 0..80).prop_map(|p| p.concat())
}

proptest! {
    #[test]
    fn random_texts_hit_as_the_automaton(text in texts()) {
        thread_local! {
            static ORACLE: Oracle = Oracle::new(LITERALS);
        }
        ORACLE.with(|oracle| oracle.assert_exact(&text));
    }

    #[test]
    fn random_texts_show_their_printable_runs(text in texts()) {
        thread_local! {
            static GATE: Gate = Gate::new(LITERALS).expect("gate");
        }
        GATE.with(|gate| assert_printable_runs(gate, &text));
    }

    #[test]
    fn random_texts_sieve_alike(text in texts()) {
        thread_local! {
            static GATE: Gate = Gate::new(LITERALS).expect("gate");
        }
        GATE.with(|gate| assert_sieves_agree(gate, &text));
    }
}

/// Every key passes the classes whatever follows it (a short key as
/// short), with the test literals and the scanner's; a start that begins
/// no key's first three bytes is dropped.
#[test]
fn the_classes_keep_every_key() {
    let mine = Gate::new(LITERALS).expect("gate");
    let scanner = crate::injection::scanner::SCANNER.gate().expect("gate");
    for gate in [&mine, scanner] {
        for literal in &gate.literals {
            let (_, key) = key(literal).expect("a key");
            for after in [&b""[..], b" ", b"xyzwvu", b"\xff\x00a"] {
                let w = word_at(&[key, after].concat(), 0) | FOLD;
                assert_ne!(gate.sieve.classes(w), 0, "{literal:?}");
                assert!(gate.sieve.short(w) || key.len() >= 4, "{literal:?}");
            }
        }
    }
    for dropped in ["zebra", "the", "orange", "ai "] {
        let w = word_at(dropped.as_bytes(), 0) | FOLD;
        assert_eq!(mine.sieve.classes(w), 0, "{dropped}");
    }
}

/// The long keys' first bytes fill the classes the short keys leave,
/// about as evenly as their counts allow.
#[test]
fn the_long_keys_share_five_classes_by_first_byte() {
    let keys: Vec<(u64, usize)> = [&b"ignore"[..], b"igloo", b"dan", b"orders", b"`", b"new o"]
        .iter()
        .map(|k| (key_of(k) | FOLD, k.len()))
        .collect();
    let firsts = Sieve::long_classes(keys.iter().copied());
    // "i" has two keys and goes first; "o" and "n" one each.
    assert_eq!(
        [
            firsts[usize::from(b'i')],
            firsts[usize::from(b'n')],
            firsts[usize::from(b'o')]
        ],
        [3, 4, 5]
    );
    assert_eq!(Sieve::class_of(keys[2].0, 3, &firsts), 2);
    assert_eq!(Sieve::class_of(keys[4].0, 1, &firsts), 0);
    assert_eq!(Sieve::class_of(key_of(b"<|") | FOLD, 2, &firsts), 1);
    assert_eq!(Sieve::class_of(keys[0].0, 6, &firsts), 3);
}

/// The scanner's literals in random case, run together or with a byte or
/// two between them: texts where keys begin at most token starts.
fn keyed_texts() -> impl Strategy<Value = Vec<u8>> {
    let gate = crate::injection::scanner::SCANNER.gate().expect("gate");
    let between = proptest::sample::select(vec!["", " ", "x", "'", "\n", "é", "-", "a ", "<"]);
    let piece = (0..gate.literals.len(), any::<u64>(), between);
    proptest::collection::vec(piece, 0..12).prop_map(move |pieces| {
        let mut text = Vec::new();
        for (literal, case, between) in pieces {
            let literal = gate.literals[literal].iter().enumerate();
            text.extend(literal.map(|(k, &b)| match case >> (k % 64) & 1 {
                1 => b.to_ascii_uppercase(),
                _ => b.to_ascii_lowercase(),
            }));
            text.extend_from_slice(between.as_bytes());
        }
        text
    })
}

proptest! {
    #[test]
    fn the_scanners_literals_hit_as_the_automaton(text in keyed_texts()) {
        thread_local! {
            static ORACLE: Oracle =
                Oracle::of(crate::injection::scanner::SCANNER.gate().expect("gate"));
        }
        ORACLE.with(|oracle| {
            oracle.assert_exact(&text);
            assert_sieves_agree(&oracle.gate, &text);
        });
    }
}

//! Rehydration of PII tokens in responses: a session vault's tokens
//! (`content::vault`) put back by the byte stream rewriter
//! (`redact::Redactor` over `Vault::needles`) and by the SSE rewriter
//! (`content::sse::SseRehydrator`, which restores tokens inside each
//! event's JSON). For any chunking each must write what it writes for the
//! body in one piece; the byte stream must equal `replace_all`.
//! Input: `[seed] 0xFF value 0xFF value ... 0xFF body` (at most four values);
//! in the body, `0xFE i` stands for value i's token, and `0xFD i n` for the
//! first n bytes of it (a token cut short).
#![no_main]

mod common;

use libfuzzer_sys::fuzz_target;
use sluice::content::{sse::SseRehydrator, vault::Vaults};
use sluice::redact::{Redactor, Rewrite};

fn run(rewrite: &mut dyn Rewrite, chunks: &[&[u8]]) -> Vec<u8> {
    let mut out = Vec::new();
    for chunk in chunks {
        out.extend(rewrite.push(chunk));
        loop {
            let more = rewrite.pending();
            if more.is_empty() {
                break;
            }
            out.extend(more);
        }
    }
    out.extend(rewrite.finish());
    out
}

fuzz_target!(|input: &[u8]| {
    let parts: Vec<&[u8]> = input.split(|&b| b == 0xFF).collect();
    let [head, values @ .., template] = &parts[..] else {
        return;
    };
    let (Some(&seed), true) = (head.first(), (1..=4).contains(&values.len())) else {
        return;
    };
    let vaults = Vaults::default();
    let vault = vaults.session("sandbox", Some("session"));
    let tokens: Vec<String> = values.iter().map(|v| vault.token("email", v)).collect();
    let mut body = Vec::new();
    let mut rest = *template;
    while let Some((&b, tail)) = rest.split_first() {
        rest = tail;
        match (b, rest) {
            (0xFE, [i, tail @ ..]) => {
                body.extend_from_slice(tokens[usize::from(*i) % tokens.len()].as_bytes());
                rest = tail;
            }
            (0xFD, [i, n, tail @ ..]) => {
                let token = tokens[usize::from(*i) % tokens.len()].as_bytes();
                body.extend_from_slice(&token[..usize::from(*n) % token.len()]);
                rest = tail;
            }
            _ => body.push(b),
        }
    }
    let chunks = common::chunks(&body, seed);
    for json in [false, true] {
        let needles = vault.needles(json);
        let whole = needles.replace_all(&body).unwrap_or_else(|| body.clone());
        let streamed = run(&mut Redactor::new(needles.clone()), &chunks);
        assert_eq!(
            streamed, whole,
            "bytewise rehydration (json {json}) differs when streamed"
        );
        let one = run(&mut SseRehydrator::new(needles.clone()), &[&body]);
        let cut = run(&mut SseRehydrator::new(needles), &chunks);
        assert_eq!(
            String::from_utf8_lossy(&cut),
            String::from_utf8_lossy(&one),
            "SSE rehydration (json {json}, seed {seed}) differs when streamed"
        );
    }
});

//! Rehydration of server-sent event streams, where a model streams its
//! answer as many small JSON events and a PII token arrives in pieces:
//! `"[pii_em"` in one event's `delta.content`, `"ail_3f…]"` in the next.
//!
//! Each string value of an event's JSON is fed to a streaming
//! [`Redactor`], and a path's text (`/choices/0/delta/content`) is
//! rehydrated as one stream across events: the value appears in the event
//! where its token completes, and the pieces before are held back from the
//! events that carried them. An event that ends holding a piece is itself
//! held until the next event: a path that goes on there takes the piece
//! along, one that does not gets it back in the held event, which then
//! goes out as it came. So every event keeps its own fields and name, and
//! what is kept is one event and one redactor per string it holds, never
//! more. Events that change are re-serialized; all others pass byte for
//! byte. Data that is not JSON is rehydrated bytewise within the event.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use serde_json::Value;

use crate::redact::{Needles, Redactor, Rewrite};

/// An event larger than this is not an SSE event we can frame; the rest of
/// the stream is rehydrated bytewise.
const MAX_EVENT: usize = 1 << 20;

pub struct SseRehydrator {
    needles: Arc<Needles>,
    /// Bytes of an event whose end has not arrived.
    pending: Vec<u8>,
    /// How much of `pending` is known to hold no event end.
    scanned: usize,
    /// The last event, held because some of its strings end in what may
    /// be the start of a token.
    held: Option<Held>,
    /// Framing gave up: everything after goes through this.
    bytewise: Option<Redactor>,
}

/// An event held back until the next one shows where its pieces go.
struct Held {
    raw: Vec<u8>,
    /// Its JSON, each string as far as it could be sent.
    json: Value,
    /// Whether it can go out as it came once its pieces are back in it.
    untouched: bool,
    /// Per string that holds a piece: its path and its stream.
    pieces: Vec<(String, Redactor)>,
}

impl SseRehydrator {
    /// `needles` map tokens to raw values (JSON escaping is serde's job here).
    pub fn new(needles: Arc<Needles>) -> SseRehydrator {
        SseRehydrator {
            needles,
            pending: Vec::new(),
            scanned: 0,
            held: None,
            bytewise: None,
        }
    }

    fn event(&mut self, raw: &[u8], out: &mut Vec<u8>) {
        let text = String::from_utf8_lossy(raw);
        let data: Vec<&str> = text.split_inclusive('\n').filter_map(data_field).collect();
        let json = (!data.is_empty())
            .then(|| serde_json::from_str::<Value>(&data.join("\n")).ok())
            .flatten();
        let Some(mut json) = json else {
            self.release(&HashSet::new(), out);
            match self.needles.replace_all(raw) {
                Some(replaced) => out.extend_from_slice(&replaced),
                None => out.extend_from_slice(raw),
            }
            return;
        };
        // The paths of this event matter only to an event held before it.
        let mut present = HashSet::new();
        if self.held.is_some() {
            strings(&json, &mut String::new(), &mut |path, _| {
                present.insert(path.to_owned());
            });
        }
        let mut carried = self.release(&present, out);
        let mut untouched = carried.is_empty();
        let mut pieces = Vec::new();
        strings_mut(&mut json, &mut String::new(), &mut |path, value| {
            let mut stream = carried
                .remove(path)
                .unwrap_or_else(|| Redactor::new(self.needles.clone()));
            let emitted = stream.push(value.as_bytes());
            let held = stream.held_len();
            // Untouched: what went out and what is held are the value.
            untouched &=
                emitted.len() + held == value.len() && value.as_bytes().starts_with(&emitted);
            if emitted != value.as_bytes() {
                *value = String::from_utf8_lossy(&emitted).into_owned();
            }
            if held > 0 {
                pieces.push((path.to_owned(), stream));
            }
        });
        let changed = !untouched || !pieces.is_empty();
        if pieces.is_empty() {
            emit(raw, changed.then_some(&json), out);
            return;
        }
        self.held = Some(Held {
            raw: raw.to_vec(),
            json,
            untouched,
            pieces,
        });
    }

    /// Sends the held event: the pieces of its paths in `next` go on with
    /// them (returned), the others are put back in it.
    fn release(&mut self, next: &HashSet<String>, out: &mut Vec<u8>) -> HashMap<String, Redactor> {
        let Some(Held {
            raw,
            mut json,
            untouched,
            pieces,
        }) = self.held.take()
        else {
            return HashMap::new();
        };
        let mut carried = HashMap::new();
        let mut back = HashMap::new();
        for (path, mut stream) in pieces {
            if next.contains(&path) {
                carried.insert(path, stream);
            } else {
                back.insert(path, stream.finish());
            }
        }
        if carried.is_empty() && untouched {
            out.extend_from_slice(&raw);
            return carried;
        }
        strings_mut(&mut json, &mut String::new(), &mut |path, value| {
            if let Some(tail) = back.get(path) {
                value.push_str(&String::from_utf8_lossy(tail));
            }
        });
        emit(&raw, Some(&json), out);
        carried
    }
}

impl Rewrite for SseRehydrator {
    fn push(&mut self, chunk: &[u8]) -> Vec<u8> {
        if let Some(bytewise) = &mut self.bytewise {
            return bytewise.push(chunk);
        }
        self.pending.extend_from_slice(chunk);
        let mut out = Vec::with_capacity(self.pending.len());
        let mut start = 0;
        // Only what came since the last look can end an event (the blank
        // line's first byte may be the last one looked at).
        let mut from = self.scanned.saturating_sub(2);
        while let Some(end) = event_end(&self.pending[start..], from - start) {
            let raw = self.pending[start..start + end].to_vec();
            self.event(&raw, &mut out);
            start += end;
            from = start;
        }
        self.pending.drain(..start);
        self.scanned = self.pending.len();
        if self.pending.len() > MAX_EVENT {
            self.release(&HashSet::new(), &mut out);
            let mut bytewise = Redactor::new(self.needles.clone());
            out.extend(bytewise.push(&std::mem::take(&mut self.pending)));
            self.bytewise = Some(bytewise);
        }
        out
    }

    fn finish(&mut self) -> Vec<u8> {
        let mut out = Vec::new();
        if let Some(bytewise) = &mut self.bytewise {
            return bytewise.finish();
        }
        let rest = std::mem::take(&mut self.pending);
        if !rest.is_empty() {
            self.event(&rest, &mut out);
        }
        self.release(&HashSet::new(), &mut out);
        out
    }

    fn discard(&mut self) {
        self.pending.clear();
        if let Some(held) = &mut self.held {
            held.pieces.iter_mut().for_each(|(_, r)| r.discard());
        }
        self.held = None;
        if let Some(bytewise) = &mut self.bytewise {
            bytewise.discard();
        }
    }

    fn held_len(&self) -> usize {
        self.pending.len()
            + self.held.as_ref().map_or(0, |held| held.raw.len())
            + self.bytewise.as_ref().map_or(0, Redactor::held_len)
    }
}

/// The length of the first complete event in `buf` (through its blank
/// line), looking for its end from `from` on.
fn event_end(buf: &[u8], from: usize) -> Option<usize> {
    let mut i = from;
    while i < buf.len() {
        if buf[i] == b'\n' {
            let rest = &buf[i + 1..];
            if rest.first() == Some(&b'\n') {
                return Some(i + 2);
            }
            if rest.starts_with(b"\r\n") {
                return Some(i + 3);
            }
        }
        i += 1;
    }
    None
}

/// Sends an event: as it came, or with `json` in place of its data.
fn emit(raw: &[u8], json: Option<&Value>, out: &mut Vec<u8>) {
    match json {
        None => out.extend_from_slice(raw),
        Some(json) => {
            let text = String::from_utf8_lossy(raw);
            let lines: Vec<&str> = text.split_inclusive('\n').collect();
            write_event(&lines, json, out);
        }
    }
}

/// The value of a `data:` line (without the one optional leading space).
fn data_field(line: &str) -> Option<&str> {
    let value = line.strip_prefix("data:")?;
    let value = value.strip_prefix(' ').unwrap_or(value);
    Some(value.trim_end_matches(['\n', '\r']))
}

/// Writes an event: its non-data lines as they were, and one data line
/// with `json` where the first data line was.
fn write_event(lines: &[&str], json: &Value, out: &mut Vec<u8>) {
    let mut wrote = false;
    for line in lines {
        if data_field(line).is_some() {
            if !wrote {
                out.extend_from_slice(b"data: ");
                out.extend_from_slice(json.to_string().as_bytes());
                out.push(b'\n');
                wrote = true;
            }
        } else if line.trim_end_matches(['\n', '\r']).is_empty() {
            continue;
        } else {
            out.extend_from_slice(line.as_bytes());
        }
    }
    out.push(b'\n');
}

/// Visits every string value with its JSON pointer.
fn strings(value: &Value, path: &mut String, visit: &mut impl FnMut(&str, &str)) {
    match value {
        Value::String(s) => visit(path, s),
        Value::Array(items) => {
            for (i, item) in items.iter().enumerate() {
                let len = path.len();
                path.push_str(&format!("/{i}"));
                strings(item, path, visit);
                path.truncate(len);
            }
        }
        Value::Object(map) => {
            for (key, item) in map {
                let len = path.len();
                path.push('/');
                path.push_str(key);
                strings(item, path, visit);
                path.truncate(len);
            }
        }
        _ => {}
    }
}

fn strings_mut(value: &mut Value, path: &mut String, visit: &mut impl FnMut(&str, &mut String)) {
    match value {
        Value::String(s) => visit(path, s),
        Value::Array(items) => {
            for (i, item) in items.iter_mut().enumerate() {
                let len = path.len();
                path.push_str(&format!("/{i}"));
                strings_mut(item, path, visit);
                path.truncate(len);
            }
        }
        Value::Object(map) => {
            for (key, item) in map.iter_mut() {
                let len = path.len();
                path.push('/');
                path.push_str(key);
                strings_mut(item, path, visit);
                path.truncate(len);
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TOKEN: &str = "[pii_email_0123456789]";
    const VALUE: &str = "ana@example.com";

    fn needles() -> Arc<Needles> {
        Arc::new(Needles::with_replacements(&[(
            TOKEN.as_bytes(),
            VALUE.as_bytes(),
        )]))
    }

    fn delta(text: &str) -> String {
        format!(
            "data: {}\n\n",
            serde_json::json!({"choices":[{"index":0,"delta":{"content":text}}]})
        )
    }

    /// The concatenated `content` deltas of a stream.
    fn text_of(stream: &[u8]) -> String {
        let stream = String::from_utf8_lossy(stream);
        stream
            .split("\n\n")
            .filter_map(|event| event.strip_prefix("data: "))
            .filter_map(|data| serde_json::from_str::<Value>(data).ok())
            .filter_map(|v| {
                v["choices"][0]["delta"]["content"]
                    .as_str()
                    .map(str::to_owned)
            })
            .collect()
    }

    fn run(chunks: &[&[u8]]) -> Vec<u8> {
        let mut sse = SseRehydrator::new(needles());
        let mut out = Vec::new();
        for chunk in chunks {
            out.extend(sse.push(chunk));
        }
        out.extend(sse.finish());
        out
    }

    #[test]
    fn a_token_split_across_events_is_restored_in_the_event_that_completes_it() {
        let pieces = ["Write to ", "[pii_", "email_0123", "456789", "] today.", ""];
        let mut stream: String = pieces.iter().map(|p| delta(p)).collect();
        stream.push_str("data: [DONE]\n\n");
        let out = run(&[stream.as_bytes()]);
        assert_eq!(text_of(&out), format!("Write to {VALUE} today."));
        assert!(String::from_utf8_lossy(&out).ends_with("data: [DONE]\n\n"));
        // Every byte split of the stream gives the same events.
        for cut in 0..stream.len() {
            let (a, b) = stream.as_bytes().split_at(cut);
            assert_eq!(run(&[a, b]), out, "cut at {cut}");
        }
    }

    #[test]
    fn untouched_events_pass_byte_for_byte() {
        let stream = format!(
            "event: ping\ndata: {{\"a\": 1}}\n\n{}: comment\n\n",
            delta("plain text")
        );
        assert_eq!(run(&[stream.as_bytes()]), stream.as_bytes());
    }

    #[test]
    fn a_piece_held_when_the_path_stops_is_sent_in_its_own_event() {
        let mut stream = delta("ends with [pii_");
        stream.push_str(
            "data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\n",
        );
        let out = run(&[stream.as_bytes()]);
        assert_eq!(text_of(&out), "ends with [pii_");
        let at_end = run(&[delta("no more [pii_em").as_bytes()]);
        assert_eq!(text_of(&at_end), "no more [pii_em");
    }

    fn chunked(stream: &[u8], mut cuts: Vec<usize>) -> Vec<&[u8]> {
        cuts.iter_mut().for_each(|c| *c %= stream.len() + 1);
        cuts.sort_unstable();
        let mut chunks = Vec::new();
        let mut at = 0;
        for cut in cuts {
            chunks.push(&stream[at..cut]);
            at = cut;
        }
        chunks.push(&stream[at..]);
        chunks
    }

    proptest::proptest! {
        #[test]
        fn any_chunking_of_a_stream_rehydrates_like_the_whole(
            cuts in proptest::collection::vec(0usize..2000, 0..12),
            split in 1usize..21,
        ) {
            let (a, b) = TOKEN.split_at(split);
            let pieces = ["x ", a, b, " y ", TOKEN, " [pii_not", "_a_token]", ""];
            let mut stream: String = pieces.iter().map(|p| delta(p)).collect();
            stream.push_str("data: [DONE]\n\n");
            let whole = run(&[stream.as_bytes()]);
            proptest::prop_assert_eq!(
                text_of(&whole),
                format!("x {VALUE} y {VALUE} [pii_not_a_token]")
            );
            let chunks = chunked(stream.as_bytes(), cuts);
            proptest::prop_assert_eq!(run(&chunks), whole);
        }

        #[test]
        fn any_chunking_of_a_plain_body_rehydrates_like_the_whole(
            cuts in proptest::collection::vec(0usize..300, 0..12),
        ) {
            let body = format!("{{\"a\":\"{TOKEN}{TOKEN} [pii_ x{TOKEN}\"}}");
            let needles = needles();
            let whole = needles.replace_all(body.as_bytes()).expect("tokens");
            let mut redactor = Redactor::new(needles);
            let mut out = Vec::new();
            for chunk in chunked(body.as_bytes(), cuts) {
                out.extend(redactor.push(chunk));
            }
            out.extend(redactor.finish());
            proptest::prop_assert_eq!(out, whole);
        }
    }

    /// A hostile upstream's wide event (every string the start of a
    /// token) is held once, with a stream per string: memory grows with
    /// the event, not with its square (each path used to keep its own copy
    /// of the whole event), and nothing of it outlives the next event.
    #[test]
    fn a_wide_event_is_held_once() {
        const N: usize = 500;
        let event = format!("data: {}\n\n", serde_json::json!({ "a": vec!["[pii_"; N] }));
        let mut sse = SseRehydrator::new(needles());
        assert!(
            sse.push(event.as_bytes()).is_empty(),
            "held: every string may go on"
        );
        let held = sse.held.as_ref().expect("held");
        assert_eq!(held.pieces.len(), N);
        assert!(sse.held_len() <= event.len(), "{}", sse.held_len());
        // The next event names none of its paths: it goes out whole.
        let out = sse.push(delta("next").as_bytes());
        assert!(sse.held.is_none());
        let mut want = event.clone().into_bytes();
        want.extend_from_slice(delta("next").as_bytes());
        assert_eq!(out, want);
    }

    /// A piece held when its path stops goes out in the event it came in,
    /// which keeps its name and its other fields.
    #[test]
    fn a_piece_held_when_its_path_stops_keeps_its_event_and_name() {
        let stream = "event: content_block_delta\n\
                      data: {\"type\":\"content_block_delta\",\"delta\":{\"type\":\"text_delta\",\"text\":\"see [\"}}\n\n\
                      event: content_block_stop\n\
                      data: {\"type\":\"content_block_stop\",\"index\":0}\n\n";
        assert_eq!(run(&[stream.as_bytes()]), stream.as_bytes());
        // Going on in the next event, the piece moves there.
        let split = "event: content_block_delta\n\
                     data: {\"delta\":{\"text\":\"mail [pii_email\"}}\n\n\
                     event: content_block_delta\n\
                     data: {\"delta\":{\"text\":\"_0123456789] now\"}}\n\n";
        let out = String::from_utf8(run(&[split.as_bytes()])).expect("utf-8");
        assert_eq!(
            out,
            format!(
                "event: content_block_delta\ndata: {{\"delta\":{{\"text\":\"mail \"}}}}\n\n\
                 event: content_block_delta\ndata: {{\"delta\":{{\"text\":\"{VALUE} now\"}}}}\n\n"
            )
        );
    }

    #[test]
    fn non_json_data_is_rehydrated_within_the_event() {
        let stream = format!("data: mail {TOKEN} now\n\n");
        assert_eq!(
            run(&[stream.as_bytes()]),
            format!("data: mail {VALUE} now\n\n").as_bytes()
        );
    }
}

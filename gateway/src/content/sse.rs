//! Rehydration of server-sent event streams, where a model streams its
//! answer as many small JSON events and a PII token arrives in pieces:
//! `"[pii_em"` in one event's `delta.content`, `"ail_3f…]"` in the next.
//!
//! Each string value of an event's JSON is fed to a streaming
//! [`Redactor`] kept per JSON path (`/choices/0/delta/content`), so the
//! text of one path is rehydrated as one stream across events: the value
//! appears in the event where its token completes, and the pieces before
//! are held back from the events that carried them. A piece still held
//! when the path stops appearing (or the stream ends) is sent in an event
//! cloned from the last one that had the path. Events that change are
//! re-serialized; all others pass byte for byte. Data that is not JSON is
//! rehydrated bytewise within the event.

use std::collections::HashMap;
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
    /// Per JSON path: the streaming state and the last event JSON that had it.
    paths: HashMap<String, (Redactor, Value)>,
    /// Framing gave up: everything after goes through this.
    bytewise: Option<Redactor>,
}

impl SseRehydrator {
    /// `needles` map tokens to raw values (JSON escaping is serde's job here).
    pub fn new(needles: Arc<Needles>) -> SseRehydrator {
        SseRehydrator {
            needles,
            pending: Vec::new(),
            paths: HashMap::new(),
            bytewise: None,
        }
    }

    fn event(&mut self, raw: &[u8], out: &mut Vec<u8>) {
        let text = String::from_utf8_lossy(raw);
        let lines: Vec<&str> = text.split_inclusive('\n').collect();
        let data: Vec<&str> = lines.iter().filter_map(|line| data_field(line)).collect();
        let json = (!data.is_empty())
            .then(|| serde_json::from_str::<Value>(&data.join("\n")).ok())
            .flatten();
        let Some(mut json) = json else {
            self.flush_absent(&HashMap::new(), out);
            match self.needles.replace_all(raw) {
                Some(replaced) => out.extend_from_slice(&replaced),
                None => out.extend_from_slice(raw),
            }
            return;
        };
        let mut present = HashMap::new();
        strings(&json, &mut String::new(), &mut |path, _| {
            present.insert(path.to_owned(), ());
        });
        self.flush_absent(&present, out);
        let mut changed = false;
        let needles = self.needles.clone();
        let snapshot = json.clone();
        strings_mut(&mut json, &mut String::new(), &mut |path, value| {
            let (redactor, last) = self
                .paths
                .entry(path.to_owned())
                .or_insert_with(|| (Redactor::new(needles.clone()), Value::Null));
            *last = snapshot.clone();
            let emitted = redactor.push(value.as_bytes());
            if emitted != value.as_bytes() {
                *value = String::from_utf8_lossy(&emitted).into_owned();
                changed = true;
            }
        });
        if !changed {
            out.extend_from_slice(raw);
            return;
        }
        write_event(&lines, &json, out);
    }

    /// Sends what paths absent from the next event still hold.
    fn flush_absent(&mut self, present: &HashMap<String, ()>, out: &mut Vec<u8>) {
        let mut absent: Vec<String> = self
            .paths
            .iter()
            .filter(|(path, (redactor, _))| !present.contains_key(*path) && redactor.held_len() > 0)
            .map(|(path, _)| path.clone())
            .collect();
        absent.sort();
        for path in absent {
            let Some((mut redactor, last)) = self.paths.remove(&path) else {
                continue;
            };
            let tail = redactor.finish();
            let mut event = last;
            strings_mut(&mut event, &mut String::new(), &mut |p, value| {
                // The clone carries only the held piece: other text would repeat.
                *value = if p == path {
                    String::from_utf8_lossy(&tail).into_owned()
                } else if self.paths.contains_key(p) {
                    String::new()
                } else {
                    std::mem::take(value)
                };
            });
            write_event(&["data: x\n"], &event, out);
        }
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
        while let Some(end) = event_end(&self.pending[start..]) {
            let raw = self.pending[start..start + end].to_vec();
            self.event(&raw, &mut out);
            start += end;
        }
        self.pending.drain(..start);
        if self.pending.len() > MAX_EVENT {
            self.flush_absent(&HashMap::new(), &mut out);
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
        self.flush_absent(&HashMap::new(), &mut out);
        out
    }

    fn discard(&mut self) {
        self.pending.clear();
        self.paths.clear();
        if let Some(bytewise) = &mut self.bytewise {
            bytewise.discard();
        }
    }

    fn held_len(&self) -> usize {
        self.pending.len()
            + self
                .paths
                .values()
                .map(|(r, _)| r.held_len())
                .sum::<usize>()
            + self.bytewise.as_ref().map_or(0, Redactor::held_len)
    }
}

/// The length of the first complete event in `buf` (through its blank line).
fn event_end(buf: &[u8]) -> Option<usize> {
    let mut i = 0;
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

    #[test]
    fn non_json_data_is_rehydrated_within_the_event() {
        let stream = format!("data: mail {TOKEN} now\n\n");
        assert_eq!(
            run(&[stream.as_bytes()]),
            format!("data: mail {VALUE} now\n\n").as_bytes()
        );
    }
}

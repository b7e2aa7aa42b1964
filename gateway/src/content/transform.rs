//! Regex transformations of bodies: a policy's rewrite rules for one
//! direction, applied in order, one-shot on a buffered request body and
//! streaming on a response body.
//!
//! Streaming holds back the last [`HOLD_BACK`] bytes of what has arrived,
//! so a match may span chunk boundaries as long as it is shorter than the
//! hold-back; that bound is documented for policy authors. What is before
//! the held tail is rewritten once another `HOLD_BACK` bytes or more have
//! come after it, and leaves then (streams don't stall): each byte is
//! searched a bounded number of times however small the chunks, where
//! searching the whole tail again for every 1-byte chunk cost thousands.

use std::borrow::Cow;

use hyper::HeaderMap;
use hyper::header::{HeaderName, HeaderValue};
use regex::bytes::Regex;

use super::BuildError;
use crate::credentials::hosts::{HostSet, is_name_pattern};
use crate::policy::raw::{self, Direction};
use crate::redact::Rewrite;

/// Bytes kept back between chunks; longer matches are not guaranteed to be
/// found when they straddle a chunk boundary.
pub const HOLD_BACK: usize = 4096;

/// One rule: the policy's regex over bytes, its replacement, and the
/// headers it also rewrites.
#[derive(Debug, Clone)]
pub struct Rule {
    pattern: Regex,
    replacement: String,
    headers: Vec<HeaderName>,
}

/// A policy's rules, compiled once (byte regexes, host sets).
#[derive(Debug, Default)]
pub struct Table(Vec<(Rule, Direction, Option<HostSet>)>);

impl Table {
    /// Builds every rule of the policy's `transformations` (validated by
    /// `CompiledPolicy::compile`). A rule that cannot be built is an
    /// error at its path, never a rule silently left out.
    pub fn build(transformations: &[raw::Transformation]) -> Result<Table, Vec<BuildError>> {
        let mut errors = Vec::new();
        let mut table = Vec::with_capacity(transformations.len());
        for (i, t) in transformations.iter().enumerate() {
            let mut error = |path: String, message: String| {
                errors.push(BuildError { path, message });
            };
            // The same syntax as the `str` regex `compile` checked.
            let pattern = Regex::new(&t.pattern)
                .map_err(|e| error(format!("transformations[{i}].pattern"), e.to_string()));
            let mut headers = Vec::with_capacity(t.headers.len());
            for (j, name) in t.headers.iter().enumerate() {
                match HeaderName::from_bytes(name.as_bytes()) {
                    Ok(name) => headers.push(name),
                    Err(_) => error(
                        format!("transformations[{i}].headers[{j}]"),
                        format!("`{name}` is not a header name"),
                    ),
                }
            }
            // None: every destination. Names and `*.suffix` match the name
            // the sandbox used; address patterns match none.
            let mut hosts = Ok(None);
            if !t.hosts.is_empty() {
                for (j, host) in t
                    .hosts
                    .iter()
                    .enumerate()
                    .filter(|(_, h)| is_name_pattern(h))
                {
                    if let Err(es) = HostSet::parse(&[host]) {
                        hosts = Err(());
                        for e in es {
                            error(format!("transformations[{i}].hosts[{j}]"), e.to_string());
                        }
                    }
                }
                if hosts.is_ok() {
                    let names: Vec<&str> = t
                        .hosts
                        .iter()
                        .map(String::as_str)
                        .filter(|h| is_name_pattern(h))
                        .collect();
                    hosts = HostSet::parse(&names).map(Some).map_err(drop);
                }
            }
            if let (Ok(pattern), Ok(hosts)) = (pattern, hosts) {
                let rule = Rule {
                    pattern,
                    replacement: t.replacement.clone(),
                    headers,
                };
                table.push((rule, t.direction, hosts));
            }
        }
        if errors.is_empty() {
            Ok(Table(table))
        } else {
            Err(errors)
        }
    }

    /// The rules for `host` in `direction` (a `both` rule counts for each).
    pub fn rules(&self, host: &str, direction: Direction) -> Rules {
        Rules(
            self.0
                .iter()
                .filter(|(_, d, _)| *d == direction || *d == Direction::Both)
                .filter(|(_, _, hosts)| hosts.as_ref().is_none_or(|h| h.matches(host)))
                .map(|(rule, _, _)| rule.clone())
                .collect(),
        )
    }
}

/// The rules of one direction that apply to one destination.
#[derive(Clone, Default)]
pub struct Rules(Vec<Rule>);

impl Rules {
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Each rule over the values of the headers it names; a value that
    /// would no longer be a valid header value is left as it was.
    pub fn apply_headers(&self, headers: &mut HeaderMap) {
        for rule in &self.0 {
            for name in &rule.headers {
                if let hyper::header::Entry::Occupied(mut entry) = headers.entry(name) {
                    for value in entry.iter_mut() {
                        let new = rule
                            .pattern
                            .replace_all(value.as_bytes(), rule.replacement.as_bytes());
                        if let Cow::Owned(new) = new
                            && let Ok(new) = HeaderValue::from_bytes(&new)
                        {
                            *value = new;
                        }
                    }
                }
            }
        }
    }

    /// Every rule over the whole of `body`, in order.
    pub fn apply<'a>(&self, body: &'a [u8]) -> Cow<'a, [u8]> {
        let mut out = Cow::Borrowed(body);
        for rule in &self.0 {
            if let Cow::Owned(new) = rule.pattern.replace_all(&out, rule.replacement.as_bytes()) {
                out = Cow::Owned(new);
            }
        }
        out
    }
}

/// Streaming application of [`Rules`] to a response body.
pub struct Transformer {
    rules: Rules,
    pending: Vec<u8>,
    /// Server-sent events: cut after the last complete event instead of
    /// holding bytes back, so a stream of small events never stalls.
    events: bool,
}

impl Transformer {
    pub fn new(rules: Rules) -> Transformer {
        Transformer {
            rules,
            pending: Vec::new(),
            events: false,
        }
    }

    /// For `text/event-stream` bodies: each complete event is rewritten and
    /// sent as soon as it has arrived (a match does not span events).
    pub fn events(rules: Rules) -> Transformer {
        Transformer {
            events: true,
            ..Transformer::new(rules)
        }
    }

    /// Where the final part of `pending` ends for event streams.
    fn event_cut(&self) -> Option<usize> {
        let at = memchr::memmem::rfind(&self.pending, b"\n\n")?;
        Some(at + 2)
    }
}

impl Rewrite for Transformer {
    fn push(&mut self, chunk: &[u8]) -> Vec<u8> {
        self.pending.extend_from_slice(chunk);
        if self.events
            && let Some(cut) = self.event_cut()
        {
            let head: Vec<u8> = self.pending.drain(..cut).collect();
            return self.rules.apply(&head).into_owned();
        }
        // The cut below lands HOLD_BACK or more bytes into `pending`.
        if self.pending.len() < 3 * HOLD_BACK {
            return Vec::new();
        }
        // Rewrite what has arrived; keep the last HOLD_BACK bytes of the
        // *input* unrewritten so a match straddling the cut is seen whole
        // next time. The cut moves back to the start of any match that
        // crosses it, so no match is split.
        let mut cut = self.pending.len() - HOLD_BACK;
        for rule in &self.rules.0 {
            for found in rule.pattern.find_iter(&self.pending) {
                if found.start() < cut && found.end() > cut {
                    cut = found.start();
                }
            }
        }
        // A match longer than the hold-back may be split; the memory held
        // stays bounded whatever the pattern.
        let cut = cut.max(self.pending.len().saturating_sub(2 * HOLD_BACK));
        let head: Vec<u8> = self.pending.drain(..cut).collect();
        self.rules.apply(&head).into_owned()
    }

    fn finish(&mut self) -> Vec<u8> {
        let rest = std::mem::take(&mut self.pending);
        self.rules.apply(&rest).into_owned()
    }

    fn discard(&mut self) {
        self.pending.clear();
    }

    fn held_len(&self) -> usize {
        self.pending.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::raw;

    fn table(yaml: &str) -> Table {
        let raw: raw::Policy = serde_yaml::from_str(yaml).expect("yaml");
        Table::build(&raw.transformations).expect("builds")
    }

    #[test]
    fn rules_are_chosen_by_direction_and_host() {
        let built = table(
            "transformations:\n\
             - {pattern: 'a', replacement: 'A', direction: request}\n\
             - {pattern: 'b', replacement: 'B', direction: response, hosts: ['*.example.com']}\n\
             - {pattern: 'c', replacement: 'C', direction: both, hosts: ['api.test']}\n",
        );
        // (host, direction, input, output)
        let cases = [
            ("api.test", Direction::Request, "abc", "AbC"),
            ("api.test", Direction::Response, "abc", "abC"),
            ("x.example.com", Direction::Response, "abc", "aBc"),
            ("example.com", Direction::Response, "abc", "abc"),
            ("other", Direction::Request, "abc", "Abc"),
        ];
        for (host, direction, input, output) in cases {
            let rules = built.rules(host, direction);
            assert_eq!(
                rules.apply(input.as_bytes()).as_ref(),
                output.as_bytes(),
                "{host}"
            );
        }
    }

    #[test]
    fn event_streams_are_rewritten_event_by_event_without_holding_back() {
        let built = table(
            "transformations: [{pattern: 'host-\\d+', replacement: 'host', direction: response}]\n",
        );
        let mut t = Transformer::events(built.rules("h", Direction::Response));
        assert_eq!(t.push(b"data: host-1\n\ndata: ho"), b"data: host\n\n");
        assert_eq!(t.push(b"st-22\n\n"), b"data: host\n\n");
        assert_eq!(t.held_len(), 0);
        assert_eq!(t.push(b"data: tail host-3"), b"");
        assert_eq!(t.finish(), b"data: tail host");
    }

    #[test]
    fn named_headers_are_rewritten_too() {
        let built = table(
            "transformations:\n\
             - {pattern: 'agent/\\d+', replacement: 'agent/x', headers: [user-agent]}\n",
        );
        let rules = built.rules("h", Direction::Request);
        let mut headers = HeaderMap::new();
        headers.insert("user-agent", HeaderValue::from_static("agent/42"));
        headers.insert("x-other", HeaderValue::from_static("agent/42"));
        rules.apply_headers(&mut headers);
        assert_eq!(headers["user-agent"], "agent/x");
        assert_eq!(headers["x-other"], "agent/42");
    }

    #[test]
    fn streaming_equals_one_shot_for_any_chunking_of_short_matches() {
        let built = table(
            "transformations:\n\
             - {pattern: 'secret-(\\d+)', replacement: 'id-$1', direction: response}\n",
        );
        let rules = built.rules("h", Direction::Response);
        let body: Vec<u8> = (0..1500)
            .flat_map(|i| format!("word secret-{i} ").into_bytes())
            .collect();
        let whole = rules.apply(&body).into_owned();
        for size in [3, 100, 4095, 4097, 10_000] {
            let mut t = Transformer::new(rules.clone());
            let mut out = Vec::new();
            for chunk in body.chunks(size) {
                out.extend(t.push(chunk));
                assert!(t.held_len() < 3 * HOLD_BACK + size);
            }
            out.extend(t.finish());
            assert_eq!(out, whole, "chunks of {size}");
        }
    }

    /// A sandbox that sends its body a byte at a time does not have every
    /// rule run over the held tail for each byte: a rewrite happens once
    /// per `HOLD_BACK` bytes or more.
    #[test]
    fn tiny_chunks_are_rewritten_in_batches() {
        let built = table(
            "transformations:\n\
             - {pattern: 'secret-(\\d+)', replacement: 'id-$1', direction: request}\n",
        );
        let rules = built.rules("h", Direction::Request);
        let body: Vec<u8> = (0..2000)
            .flat_map(|i| format!("word secret-{i} ").into_bytes())
            .collect();
        let mut t = Transformer::new(rules.clone());
        let (mut out, mut rewrites) = (Vec::new(), 0);
        for byte in body.chunks(1) {
            let emitted = t.push(byte);
            rewrites += usize::from(!emitted.is_empty());
            out.extend(emitted);
        }
        out.extend(t.finish());
        assert_eq!(out, rules.apply(&body).into_owned());
        assert!(
            rewrites <= body.len() / HOLD_BACK + 1,
            "{rewrites} rewrites for {} bytes",
            body.len()
        );
    }
}

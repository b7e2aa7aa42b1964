//! Where things are in a policy file: an index from node paths
//! (`network.allow_out[2]`, `pii.actions.ssn`) to line and column, so
//! errors found after deserialization (compile errors, unknown sections)
//! point at the text the operator wrote.
//!
//! Built from yaml-rust2's event parser because serde_yaml keeps no
//! positions once a document is a `Value`. Paths use the same spelling as
//! serde_yaml's error messages and `CompileError::path`: keys joined by `.`,
//! sequence items as `[i]`.

use std::collections::HashMap;

use yaml_rust2::parser::{Event, MarkedEventReceiver, Parser};
use yaml_rust2::scanner::{Marker, Scanner, Token, TokenType};

/// Index of a YAML document's nodes by path (`network.allow_out[2]`,
/// `pii.actions.ssn`), from yaml-rust2's event parser with markers.
///
/// A mapping entry is located at its key (so `network.allow_out` points at
/// `allow_out:`), a sequence item at the item. Only the first document is
/// indexed; a syntax error ends the index where it occurred, keeping what
/// was seen before it.
#[derive(Debug, Clone, Default)]
pub struct Locations {
    at: HashMap<String, (usize, usize)>,
    duplicates: Vec<(String, (usize, usize))>,
}

impl Locations {
    pub fn parse(text: &str) -> Locations {
        if too_deep(text) {
            // serde_yaml refuses such a document anyway (its recursion
            // limit is the same), and its error carries its own location.
            return Locations::default();
        }
        let mut index = Indexer::default();
        // A syntax error is reported by serde_yaml with its own location;
        // here it only means the index stops early.
        let _ = Parser::new_from_str(text).load(&mut index, false);
        Locations {
            at: index.at,
            duplicates: index.duplicates,
        }
    }

    /// The line and column (1-based) of the node at `path`, or of its nearest
    /// existing ancestor; (1,1) when nothing matches.
    pub fn find(&self, path: &str) -> (usize, usize) {
        let mut path = path;
        loop {
            if let Some(&at) = self.at.get(path) {
                return at;
            }
            match parent(path) {
                Some(up) => path = up,
                None => return (1, 1),
            }
        }
    }

    /// Keys that appear twice in one mapping: the path of the repeated key
    /// and where the repetition is (the first occurrence is `find(path)`).
    pub fn duplicate_keys(&self) -> &[(String, (usize, usize))] {
        &self.duplicates
    }
}

/// Deeper nesting than serde_yaml accepts.
const MAX_DEPTH: usize = 128;

/// yaml-rust2's parser recurses on nested block collections and overflows
/// the stack a few thousand levels down; its scanner does not, so nesting is
/// measured on tokens first.
fn too_deep(text: &str) -> bool {
    let mut depth = 0usize;
    for Token(_, token) in Scanner::new(text.chars()) {
        match token {
            TokenType::BlockSequenceStart
            | TokenType::BlockMappingStart
            | TokenType::FlowSequenceStart
            | TokenType::FlowMappingStart => {
                depth += 1;
                if depth > MAX_DEPTH {
                    return true;
                }
            }
            TokenType::BlockEnd | TokenType::FlowSequenceEnd | TokenType::FlowMappingEnd => {
                depth = depth.saturating_sub(1);
            }
            _ => {}
        }
    }
    false
}

/// `a.b[2]` → `a.b`, `a.b` → `a`, `a` → none. Keys containing `.` make this
/// ambiguous; stepping up too far only makes the location coarser.
fn parent(path: &str) -> Option<&str> {
    path.rfind(['.', '[']).map(|i| &path[..i])
}

enum Frame {
    Mapping {
        /// `None` inside complex (non-scalar) keys, which have no path.
        path: Option<String>,
        /// The key whose value comes next; `None` while a key is expected.
        key: Option<Option<String>>,
        /// A block mapping's start marker sits after its first key, so the
        /// mapping is located at that key instead, once it is seen.
        pending: Option<Marker>,
    },
    Sequence {
        path: Option<String>,
        next: usize,
    },
}

#[derive(Default)]
struct Indexer {
    stack: Vec<Frame>,
    at: HashMap<String, (usize, usize)>,
    duplicates: Vec<(String, (usize, usize))>,
    /// Set at the end of the first document; later documents are ignored.
    done: bool,
}

fn position(mark: Marker) -> (usize, usize) {
    // yaml-rust2 lines are 1-based, columns 0-based.
    (mark.line(), mark.col() + 1)
}

fn join(parent: &Option<String>, key: &str) -> Option<String> {
    parent.as_ref().map(|p| {
        if p.is_empty() {
            key.to_string()
        } else {
            format!("{p}.{key}")
        }
    })
}

impl Indexer {
    fn record(&mut self, path: &Option<String>, mark: Marker) {
        // The root is never recorded: paths that match nothing are (1,1).
        if let Some(path) = path.as_ref().filter(|p| !p.is_empty()) {
            self.at.entry(path.clone()).or_insert(position(mark));
        }
    }

    /// Called when a node starts: works out its path from the enclosing
    /// frame and advances that frame. `scalar` is the node's text when it is
    /// a scalar (only scalars can be keys with a path). A mapping locates
    /// itself (`defer`), at its first key.
    fn start_node(&mut self, scalar: Option<&str>, mark: Marker, defer: bool) -> Option<String> {
        let Some(frame) = self.stack.last_mut() else {
            return Some(String::new());
        };
        match frame {
            Frame::Sequence { path, next } => {
                let item = path.as_ref().map(|p| format!("{p}[{next}]"));
                *next += 1;
                if !defer {
                    self.record(&item, mark);
                }
                item
            }
            Frame::Mapping { path, key, pending } => {
                if let Some(current) = key.take() {
                    // A value: its entry was located at the key already.
                    return current.and_then(|k| join(path, &k));
                }
                let parent = path.clone();
                let pending = pending.take();
                let key_text = scalar.map(str::to_string);
                *key = Some(key_text.clone());
                if let Some(start) = pending {
                    let mapping_mark = if scalar.is_some() { mark } else { start };
                    self.record(&parent, mapping_mark);
                }
                let Some(text) = key_text else {
                    // A complex key: nothing inside it has a path.
                    return None;
                };
                let entry = join(&parent, &text);
                if let Some(entry) = &entry {
                    if self.at.contains_key(entry) {
                        self.duplicates.push((entry.clone(), position(mark)));
                    } else {
                        self.at.insert(entry.clone(), position(mark));
                    }
                }
                // A scalar key has no children; the path is only needed for
                // complex keys, which return `None` above.
                None
            }
        }
    }

    fn end_container(&mut self) {
        if let Some(Frame::Mapping {
            path,
            pending: Some(start),
            ..
        }) = self.stack.pop()
        {
            // An empty mapping: located at its own start.
            self.record(&path, start);
        }
    }
}

impl MarkedEventReceiver for Indexer {
    fn on_event(&mut self, ev: Event, mark: Marker) {
        if self.done {
            return;
        }
        match ev {
            Event::Scalar(text, ..) => {
                self.start_node(Some(&text), mark, false);
            }
            Event::Alias(_) => {
                self.start_node(None, mark, false);
            }
            Event::SequenceStart(..) => {
                let path = self.start_node(None, mark, false);
                self.stack.push(Frame::Sequence { path, next: 0 });
            }
            Event::MappingStart(..) => {
                let path = self.start_node(None, mark, true);
                self.stack.push(Frame::Mapping {
                    path,
                    key: None,
                    pending: Some(mark),
                });
            }
            Event::SequenceEnd | Event::MappingEnd => self.end_container(),
            Event::DocumentEnd => self.done = true,
            Event::Nothing | Event::StreamStart | Event::StreamEnd | Event::DocumentStart => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const DOC: &str = "\
network:
  allow_out:
    - api.example.com:443
    - to: pypi.org
      ports: [443]
  deny_out: [ALL_TRAFFIC]
  dns: {}
pii:
  actions:
    ssn: block
apps:
  - app: tracker
    actions:
      issues.create: ask
";

    #[test]
    fn finds_paths() {
        let loc = Locations::parse(DOC);
        let cases = [
            ("network", (1, 1)),
            ("network.allow_out", (2, 3)),
            ("network.allow_out[0]", (3, 7)),
            ("network.allow_out[1]", (4, 7)),
            ("network.allow_out[1].to", (4, 7)),
            ("network.allow_out[1].ports", (5, 7)),
            ("network.allow_out[1].ports[0]", (5, 15)),
            ("network.deny_out[0]", (6, 14)),
            ("network.dns", (7, 3)),
            ("pii.actions.ssn", (10, 5)),
            ("apps[0].app", (12, 5)),
            ("apps[0].actions.issues.create", (14, 7)),
            // Nearest ancestor.
            ("network.allow_out[7]", (2, 3)),
            ("network.dns.max_label_length", (7, 3)),
            ("pii.actions.email", (9, 3)),
            ("apps[0].actions.issues.close", (13, 5)),
            // Nothing matches.
            ("audit", (1, 1)),
            ("", (1, 1)),
            ("[3]", (1, 1)),
        ];
        for (path, want) in cases {
            assert_eq!(loc.find(path), want, "{path}");
        }
    }

    #[test]
    fn duplicates_are_listed() {
        let loc = Locations::parse("a:\n  b: 1\n  b: 2\nc: 3\nc: 4\n");
        let want = [("a.b".to_string(), (3, 3)), ("c".to_string(), (5, 1))];
        assert_eq!(loc.duplicate_keys(), want);
        assert_eq!(loc.find("a.b"), (2, 3));
    }

    #[test]
    fn odd_input_never_panics() {
        let cases = [
            "",
            "~",
            "just a string",
            "- a\n- [b, {c: d}]\n",
            "? [complex, key]\n: value\nnext: 1\n",
            "a: &x {b: 1}\nc: *x\n",
            "a: [\n",
            "a:\n  b: 1\n c: 2\n",
            "a: 1\n---\nb: 2\n",
            "{{{{{{{{{{{{{{{{{{{{",
            "\t- \u{0}",
            "a: !!binary AAAA\n",
        ];
        for text in cases {
            let loc = Locations::parse(text);
            let _ = loc.find("a.b[0]");
        }
        let loc = Locations::parse("? [complex, key]\n: value\nnext: 1\n");
        assert_eq!(loc.find("next"), (3, 1));
        // Only the first document is indexed.
        assert_eq!(Locations::parse("a: 1\n---\nb: 2\n").find("b"), (1, 1));
        // What came before a syntax error is kept.
        assert_eq!(Locations::parse("a:\n  b: 1\n c: 2\n").find("a.b"), (2, 3));
    }

    #[test]
    fn deep_nesting_does_not_overflow() {
        let cases = [
            format!("{}{}", "[".repeat(100_000), "]".repeat(100_000)),
            "- ".repeat(100_000),
            (0..10_000)
                .map(|i| format!("{}k:\n", " ".repeat(i)))
                .collect(),
        ];
        for text in &cases {
            assert_eq!(Locations::parse(text).find("[0][0]"), (1, 1));
        }
        let nested = format!(
            "a: {}1{}",
            "[".repeat(MAX_DEPTH - 1),
            "]".repeat(MAX_DEPTH - 1)
        );
        assert_eq!(Locations::parse(&nested).find("a[0][0]"), (1, 6));
    }
}

//! A request body under construction: carrier syntax written as it is,
//! text and values written through the encodings of where they sit (a
//! JSON string, a JSON string inside a JSON string, a form field, a quoted
//! CSV cell), and each value's byte span in the body as sent.

use sluice_scan::Kind;

use super::Value;
use crate::common::Labelled;

/// One layer of encoding a piece of text sits in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Enc {
    /// A JSON string; `ascii` escapes every non-ASCII character as
    /// `\uXXXX` (Python's `json.dumps` default), otherwise UTF-8 as is.
    Json { ascii: bool },
    /// A form field (`application/x-www-form-urlencoded`).
    Form,
    /// A CSV cell in double quotes.
    CsvQuoted,
}

impl Enc {
    pub fn apply(self, s: &str) -> String {
        match self {
            Enc::Json { ascii } => json_escape(s, ascii),
            Enc::Form => percent_encode(s),
            Enc::CsvQuoted => s.replace('"', "\"\""),
        }
    }

    /// The inverse of `apply`, for the set's own check.
    pub fn undo(self, s: &str) -> Option<String> {
        match self {
            Enc::Json { .. } => serde_json::from_str(&format!("\"{s}\"")).ok(),
            Enc::Form => percent_decode(s),
            Enc::CsvQuoted => Some(s.replace("\"\"", "\"")),
        }
    }
}

fn json_escape(s: &str, ascii: bool) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 || (ascii && !c.is_ascii()) => {
                let mut units = [0u16; 2];
                for unit in c.encode_utf16(&mut units) {
                    out.push_str(&format!("\\u{unit:04x}"));
                }
            }
            c => out.push(c),
        }
    }
    out
}

fn percent_encode(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for &b in s.as_bytes() {
        match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => {
                out.push(b as char)
            }
            b' ' => out.push('+'),
            _ => out.push_str(&format!("%{b:02X}")),
        }
    }
    out
}

fn percent_decode(s: &str) -> Option<String> {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'+' => out.push(b' '),
            b'%' => {
                let hex = std::str::from_utf8(bytes.get(i + 1..i + 3)?).ok()?;
                out.push(u8::from_str_radix(hex, 16).ok()?);
                i += 2;
            }
            b => out.push(b),
        }
        i += 1;
    }
    String::from_utf8(out).ok()
}

/// A value as it was written into a body: the value, the encodings it
/// sits in (outermost first), and its origin for the census.
#[derive(Debug, Clone)]
pub struct Written {
    pub kind: Kind,
    pub value: String,
    pub layers: Vec<Enc>,
    pub origin: &'static str,
}

pub struct Body {
    label: String,
    content_type: &'static str,
    text: String,
    spans: Vec<(Kind, usize, usize)>,
    written: Vec<Written>,
    layers: Vec<Enc>,
}

impl Body {
    pub fn new(label: String, content_type: &'static str) -> Body {
        Body {
            label,
            content_type,
            text: String::new(),
            spans: Vec::new(),
            written: Vec::new(),
            layers: Vec::new(),
        }
    }

    /// Syntax of the layer the body is in now, written as it is.
    pub fn lit(&mut self, s: &str) -> &mut Body {
        self.text.push_str(s);
        self
    }

    /// Text inside the current layers (escaped as they require).
    pub fn text(&mut self, s: &str) -> &mut Body {
        let encoded = self.encode(s);
        self.text.push_str(&encoded);
        self
    }

    /// A labelled value inside the current layers.
    pub fn value(&mut self, v: &Value) -> &mut Body {
        let encoded = self.encode(&v.text);
        let start = self.text.len();
        self.text.push_str(&encoded);
        self.spans.push((v.kind, start, self.text.len()));
        self.written.push(Written {
            kind: v.kind,
            value: v.text.clone(),
            layers: self.layers.clone(),
            origin: v.origin,
        });
        self
    }

    /// Enters a layer (what follows is written inside it).
    pub fn open(&mut self, enc: Enc) -> &mut Body {
        self.layers.push(enc);
        self
    }

    pub fn close(&mut self) -> &mut Body {
        self.layers.pop().expect("a layer to close");
        self
    }

    fn encode(&self, s: &str) -> String {
        self.layers
            .iter()
            .rev()
            .fold(s.to_string(), |s, enc| enc.apply(&s))
    }

    pub fn finish(self) -> (Labelled, Vec<Written>) {
        assert!(self.layers.is_empty(), "{}: a layer left open", self.label);
        let labelled = Labelled {
            label: self.label,
            content_type: self.content_type,
            text: self.text,
            spans: self.spans,
        };
        (labelled, self.written)
    }
}

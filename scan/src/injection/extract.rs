//! Finds the text a model will read in an LLM-API request body, each piece
//! tagged with who wrote it.
//!
//! Known shapes: OpenAI chat completions (`messages`, `tools`), OpenAI
//! responses (`instructions`, `input`), Anthropic messages (`system`,
//! `messages` with content blocks and `tool_result`s), Gemini
//! (`systemInstruction`, `contents`) and legacy completions (`prompt`). Any
//! other JSON yields every string value; non-JSON bodies are one text segment.
//! The source matters to the score: the operator's system prompt is not
//! scored, tool results and retrieved documents weigh most.
//!
//! A JSON body is read from a tape (`scan::json`'s `Tape`: checked and laid
//! out in one pass, strings borrowed from the body, decoded only when they
//! have escapes and are read), not from a `serde_json::Value` tree:
//! building the tree cost more than scanning the text. The tape accepts
//! exactly what serde_json accepts and reads like a `Value` (last of
//! duplicate keys, keys in sorted order), so the segments are the same as
//! from the tree.

use std::borrow::Cow;

use crate::json::tape::{Keys, Object, Tape, Value};
use crate::json::{self, SEPARATOR};
use crate::segment::Decoded;
use crate::{Format, MAX_NESTING, multipart};

/// Who wrote a segment, as far as the request shape tells.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Source {
    /// The system or developer prompt: written by the operator's app, not scored.
    System,
    User,
    /// Earlier model turns, including tool-call arguments.
    Assistant,
    /// Output of a tool or function call fed back to the model.
    ToolResult,
    /// Tool names and descriptions offered to the model.
    ToolDefinition,
    /// Documents and search results attached to a message.
    Document,
    /// A plain-text body or a JSON body of no known shape.
    Text,
}

impl Source {
    pub fn as_str(self) -> &'static str {
        match self {
            Source::System => "system",
            Source::User => "user",
            Source::Assistant => "assistant",
            Source::ToolResult => "tool_result",
            Source::ToolDefinition => "tool_definition",
            Source::Document => "document",
            Source::Text => "text",
        }
    }

    fn of_role(role: &str) -> Source {
        match role {
            "system" | "developer" => Source::System,
            "user" | "human" => Source::User,
            "assistant" | "model" | "ai" => Source::Assistant,
            "tool" | "function" | "ipython" => Source::ToolResult,
            _ => Source::Text,
        }
    }
}

/// One piece of text the model will read.
#[derive(Debug, Clone, PartialEq)]
pub struct Segment<'a> {
    pub source: Source,
    /// Path in the body: `messages[1].content[0].text`; `$` for a text body.
    pub location: String,
    pub text: Cow<'a, str>,
}

/// A request body made ready to read: a JSON body checked and laid out, or
/// the text of any other body. The [`segments`](Body::segments) borrow from
/// it.
#[derive(Debug)]
pub struct Body<'a>(Readable<'a>);

#[derive(Debug)]
enum Readable<'a> {
    Json(Tape<'a>),
    Text(Cow<'a, str>),
}

impl<'a> Body<'a> {
    /// Bodies read as JSON (`Format::of`: by content type, or by their
    /// first byte unless they name another format) are read by API shape;
    /// any other body, or JSON the tape refuses, as text (`lenient`).
    pub fn read(content_type: Option<&str>, body: &'a [u8]) -> Body<'a> {
        Body::read_as(Format::of(content_type, body), body)
    }

    /// [`Body::read`] of a body whose format is known.
    pub(crate) fn read_as(format: Format<'_>, body: &'a [u8]) -> Body<'a> {
        if format == Format::Json
            && let Some(tape) = Tape::parse(body)
        {
            return Body(Readable::Json(tape));
        }
        Body(Readable::Text(lenient(format, body, 0)))
    }

    /// The body checked and laid out, when it was read as JSON.
    pub(crate) fn tape(&self) -> Option<&Tape<'a>> {
        match &self.0 {
            Readable::Json(tape) => Some(tape),
            _ => None,
        }
    }

    /// The pieces of text in the body, in reading order.
    pub fn segments(&self) -> Vec<Segment<'_>> {
        match &self.0 {
            Readable::Json(tape) => json_segments(tape),
            Readable::Text(text) => vec![text_segment(text)],
        }
    }

    /// Whether every piece of text is known to be ASCII (a JSON body's
    /// tape checked it); false when not, or not known.
    pub fn known_ascii(&self) -> bool {
        match &self.0 {
            Readable::Json(tape) => tape.is_ascii(),
            Readable::Text(_) => false,
        }
    }

    /// Hands each piece of text in the body to `visit`, in reading order,
    /// with its source and its location, as [`Body::segments`] lists them.
    /// The location is only lent: a reader that keeps few of them (the
    /// detector keeps those where a signal fires) writes out no others.
    pub fn each_segment<'t>(&'t self, visit: &mut dyn FnMut(Source, &str, &'t str)) {
        match &self.0 {
            Readable::Json(tape) => each_json_segment(tape, visit),
            Readable::Text(text) => visit(Source::Text, TEXT_LOCATION, text),
        }
    }
}

/// The text of a body the tape did not take, read so that neither its
/// label nor a flaw in it keeps its text from being scored: JSON the tape
/// refuses (`NaN`, a lone surrogate, deep nesting, bytes after the
/// document: what some servers still parse) with its strings' escapes
/// decoded, as the PII scan reads it; a form percent-decoded; a multipart
/// body part by part, each by its own type, and what the split leaves (a
/// preamble, an epilogue, all of a body whose boundary never occurs) by
/// its first byte; anything else as text, invalid UTF-8 replaced, whatever its
/// label (the PII scan reads such bodies as bytes too).
fn lenient<'a>(format: Format<'_>, body: &'a [u8], depth: u8) -> Cow<'a, str> {
    match format {
        Format::Json => {
            let (mut decoded, mut stretches) = (Decoded::default(), Vec::new());
            if !json::lay_out(body, &mut decoded, &mut stretches) {
                return String::from_utf8_lossy(body);
            }
            // The stretches' separators (zero bytes) as line breaks.
            let text = decoded
                .text()
                .iter()
                .map(|&b| if b == SEPARATOR { b'\n' } else { b });
            Cow::Owned(String::from_utf8_lossy(&text.collect::<Vec<u8>>()).into_owned())
        }
        Format::Form => Cow::Owned(percent_decode(body)),
        Format::Multipart(boundary) if depth < MAX_NESTING => {
            let mut text = String::new();
            for piece in multipart::pieces(body, boundary) {
                let bytes = &body[piece.start..piece.end];
                let format = Format::of(piece.content_type, bytes);
                text.push_str(&lenient(format, bytes, depth + 1));
                text.push('\n');
            }
            Cow::Owned(text)
        }
        Format::Multipart(_) | Format::Text => String::from_utf8_lossy(body),
    }
}

/// Where a text body's one segment is, and a JSON body's when it is a
/// single string.
pub(crate) const TEXT_LOCATION: &str = "$";

/// The segments of a JSON request body.
pub(crate) fn json_segments<'t>(tape: &'t Tape<'_>) -> Vec<Segment<'t>> {
    let mut out = Vec::new();
    each_json_segment(tape, &mut |source, location, text| {
        out.push(Segment {
            source,
            location: location.to_string(),
            text: Cow::Borrowed(text),
        });
    });
    out
}

/// [`Body::each_segment`] for a JSON body.
fn each_json_segment<'t>(tape: &'t Tape<'_>, visit: &mut dyn FnMut(Source, &str, &'t str)) {
    let mut path = PATH.take();
    path.clear();
    let mut reader = Reader { visit, path };
    let body = tape.root();
    match body.as_object().map(Request::of) {
        Some(request) if request.is_llm() => reader.request(request),
        _ => reader.strings(body, Source::Text),
    }
    if reader.path.capacity() <= PATH_KEPT {
        PATH.set(reader.path);
    }
}

thread_local! {
    /// The walk's path, kept per thread: a fresh one for each body was an
    /// allocation and a free per request scored.
    static PATH: std::cell::Cell<String> = const { std::cell::Cell::new(String::new()) };
}

/// The longest path kept for the next body; a longer one is given back.
const PATH_KEPT: usize = 1024;

/// The single segment of a text body.
pub fn text_segment(text: &str) -> Segment<'_> {
    Segment {
        source: Source::Text,
        location: TEXT_LOCATION.to_string(),
        text: Cow::Borrowed(text),
    }
}

/// The members of a request body the reader looks at, found in one walk.
struct Request<'t, 'a> {
    system: [Option<Value<'t, 'a>>; 4],
    messages: Option<Value<'t, 'a>>,
    input: Option<Value<'t, 'a>>,
    contents: Option<Value<'t, 'a>>,
    prompt: Option<Value<'t, 'a>>,
    tools: [Option<Value<'t, 'a>>; 2],
}

/// Where a request keeps its system text: Anthropic `system`, responses
/// `instructions`, Gemini `systemInstruction` (or `system_instruction`).
const SYSTEM: [&str; 4] = [
    "system",
    "instructions",
    "systemInstruction",
    "system_instruction",
];
/// Where a request lists tools, whose descriptions the model reads.
const TOOLS: [&str; 2] = ["tools", "functions"];

impl<'t, 'a> Request<'t, 'a> {
    fn of(obj: Object<'t, 'a>) -> Request<'t, 'a> {
        const KEYS: Keys<10> = Keys::new([
            SYSTEM[0], SYSTEM[1], SYSTEM[2], SYSTEM[3], "messages", "input", "contents", "prompt",
            TOOLS[0], TOOLS[1],
        ]);
        let [s0, s1, s2, s3, messages, input, contents, prompt, t0, t1] = obj.get_each(&KEYS);
        Request {
            system: [s0, s1, s2, s3],
            messages,
            input,
            contents,
            prompt,
            tools: [t0, t1],
        }
    }

    /// Whether the body has the shape of an LLM-API request (any of the
    /// members a model's input is in).
    fn is_llm(&self) -> bool {
        [
            self.messages,
            self.input,
            self.contents,
            self.prompt,
            self.system[0],
            self.system[1],
        ]
        .iter()
        .any(Option::is_some)
    }
}

/// The source a message's `role` names; `default` without a string role.
fn role(obj: Object<'_, '_>, default: Source) -> Source {
    obj.get("role")
        .and_then(|v| v.as_str())
        .map_or(default, Source::of_role)
}

/// A block's `type`, or `""`.
fn kind<'t>(obj: Object<'t, '_>) -> &'t str {
    obj.get("type").and_then(|v| v.as_str()).unwrap_or("")
}

/// Walks a body by shape, handing each segment to `visit`. `path` is where
/// the walk is (`messages[1].content`), grown and cut back as it goes down
/// and up, and lent to `visit` as the segment's location.
struct Reader<'t, 'v> {
    visit: &'v mut dyn FnMut(Source, &str, &'t str),
    path: String,
}

impl<'t> Reader<'t, '_> {
    /// Steps into `key`; returns where to cut the path back to.
    fn key(&mut self, key: &str) -> usize {
        let mark = self.path.len();
        if !self.path.is_empty() {
            self.path.push('.');
        }
        self.path.push_str(key);
        mark
    }

    /// Steps into element `i`; returns where to cut the path back to.
    fn index(&mut self, i: usize) -> usize {
        let mark = self.path.len();
        self.path.push('[');
        push_decimal(&mut self.path, i);
        self.path.push(']');
        mark
    }

    fn back(&mut self, mark: usize) {
        self.path.truncate(mark);
    }

    fn push(&mut self, source: Source, text: &'t str) {
        if text.is_empty() {
            return;
        }
        let location = if self.path.is_empty() {
            TEXT_LOCATION
        } else {
            &self.path
        };
        (self.visit)(source, location, text);
    }

    /// `f` on the value at `key` of `obj`, if there is one, with the path
    /// stepped into the key.
    fn at_key(&mut self, obj: Object<'t, '_>, key: &str, f: impl FnOnce(&mut Self, Value<'t, '_>)) {
        self.at(key, obj.get(key), f);
    }

    /// `f` on `value`, if there is one, with the path stepped into `key`.
    fn at(
        &mut self,
        key: &str,
        value: Option<Value<'t, '_>>,
        f: impl FnOnce(&mut Self, Value<'t, '_>),
    ) {
        if let Some(v) = value {
            let mark = self.key(key);
            f(self, v);
            self.back(mark);
        }
    }

    fn request(&mut self, request: Request<'t, '_>) {
        for (key, value) in SYSTEM.into_iter().zip(request.system) {
            self.at(key, value, |r, v| r.strings(v, Source::System));
        }
        if let Some(messages) = request.messages.and_then(|v| v.as_array()) {
            let mark = self.key("messages");
            for (i, m) in messages.enumerate() {
                let inner = self.index(i);
                self.message(m);
                self.back(inner);
            }
            self.back(mark);
        }
        self.at("input", request.input, |r, input| {
            if let Some(s) = input.as_str() {
                r.push(Source::User, s);
            } else if let Some(items) = input.as_array() {
                for (i, item) in items.enumerate() {
                    let mark = r.index(i);
                    r.response_item(item);
                    r.back(mark);
                }
            } else {
                r.strings(input, Source::User);
            }
        });
        if let Some(contents) = request.contents.and_then(|v| v.as_array()) {
            let mark = self.key("contents");
            for (i, c) in contents.enumerate() {
                let inner = self.index(i);
                self.gemini_content(c);
                self.back(inner);
            }
            self.back(mark);
        }
        self.at("prompt", request.prompt, |r, v| r.strings(v, Source::User));
        for (key, value) in TOOLS.into_iter().zip(request.tools) {
            self.at(key, value, |r, v| r.descriptions(v));
        }
    }

    /// A chat message: OpenAI (`content` string or parts, `tool_calls`) or
    /// Anthropic (`content` string or blocks).
    fn message(&mut self, m: Value<'t, '_>) {
        let Some(obj) = m.as_object() else {
            return self.strings(m, Source::Text);
        };
        const KEYS: Keys<4> = Keys::new(["role", "content", "tool_calls", "function_call"]);
        let [role, content, tool_calls, function_call] = obj.get_each(&KEYS);
        let source = role
            .and_then(|v| v.as_str())
            .map_or(Source::Text, Source::of_role);
        self.at("content", content, |r, v| r.content_value(v, source));
        if let Some(calls) = tool_calls.and_then(|v| v.as_array()) {
            let mark = self.key("tool_calls");
            for (i, call) in calls.enumerate() {
                let inner = self.index(i);
                self.strings(call, Source::Assistant);
                self.back(inner);
            }
            self.back(mark);
        }
        self.at("function_call", function_call, |r, v| {
            r.strings(v, Source::Assistant)
        });
    }

    /// `content` as a string or a list of typed parts/blocks.
    fn content_value(&mut self, content: Value<'t, '_>, source: Source) {
        if let Some(parts) = content.as_array() {
            for (i, part) in parts.enumerate() {
                let mark = self.index(i);
                self.block(part, source);
                self.back(mark);
            }
        } else {
            // A string is its own text; `null` and other scalars have none.
            self.strings(content, source);
        }
    }

    /// One content part or block, by its `type`.
    fn block(&mut self, part: Value<'t, '_>, source: Source) {
        let Some(obj) = part.as_object() else {
            return self.strings(part, source);
        };
        // The members any type reads, found in one walk over the block.
        const KEYS: Keys<6> =
            Keys::new(["type", "text", "content", "input", "arguments", "thinking"]);
        let [kind, text, content, input, arguments, thinking] = obj.get_each(&KEYS);
        match kind.and_then(|v| v.as_str()).unwrap_or("") {
            "text" | "input_text" | "output_text" => {
                self.at("text", text, |r, v| r.strings(v, source));
            }
            // Anthropic: the tool's output, a string or more blocks.
            "tool_result" | "mcp_tool_result" | "web_search_tool_result" => {
                self.at("content", content, |r, v| {
                    r.content_value(v, Source::ToolResult)
                });
            }
            "tool_use" | "server_tool_use" | "function_call" => {
                // Found under either name, reported as `input`.
                self.at("input", input.or(arguments), |r, v| {
                    r.strings(v, Source::Assistant)
                });
            }
            "document" | "search_result" => self.document(obj),
            "thinking" | "redacted_thinking" => {
                self.at("thinking", thinking, |r, v| r.strings(v, Source::Assistant));
            }
            // Pixels and URLs of images and files carry no text the model reads as such.
            "image" | "image_url" | "input_image" | "input_audio" | "file" | "input_file" => {}
            _ => self.strings(part, source),
        }
    }

    /// An Anthropic `document` or `search_result` block: retrieved text.
    fn document(&mut self, obj: Object<'t, '_>) {
        for key in ["title", "context"] {
            self.at_key(obj, key, |r, v| {
                if let Some(s) = v.as_str() {
                    r.push(Source::Document, s);
                }
            });
        }
        self.at_key(obj, "source", |r, src| {
            let Some(src) = src.as_object() else {
                return;
            };
            // Base64 PDFs are binary; only plain-text sources are read as text.
            match src.get("type").and_then(|v| v.as_str()) {
                Some("text") => r.at_key(src, "data", |r, v| {
                    if let Some(s) = v.as_str() {
                        r.push(Source::Document, s);
                    }
                }),
                Some("content") => {
                    r.at_key(src, "content", |r, v| r.content_value(v, Source::Document))
                }
                _ => {}
            }
        });
        self.at_key(obj, "content", |r, v| r.content_value(v, Source::Document));
    }

    /// An item of the responses API `input` list.
    fn response_item(&mut self, item: Value<'t, '_>) {
        let Some(obj) = item.as_object() else {
            return self.strings(item, Source::User);
        };
        if obj.contains_key("role") {
            return self.message(item);
        }
        let kind = kind(obj);
        if kind.ends_with("_output") {
            self.at_key(obj, "output", |r, v| r.content_value(v, Source::ToolResult));
        } else if kind.ends_with("_call") {
            // Found under either name, reported as `arguments`.
            if let Some(v) = obj.get("arguments").or_else(|| obj.get("input")) {
                let mark = self.key("arguments");
                self.strings(v, Source::Assistant);
                self.back(mark);
            }
        } else if kind != "item_reference" && kind != "reasoning" {
            self.block(item, Source::User);
        }
    }

    /// A Gemini `contents` entry: `role` and `parts`.
    fn gemini_content(&mut self, c: Value<'t, '_>) {
        let source = c
            .as_object()
            .map_or(Source::User, |obj| role(obj, Source::User));
        let Some(parts) = c.get("parts").and_then(|v| v.as_array()) else {
            return self.strings(c, source);
        };
        let mark = self.key("parts");
        for (i, part) in parts.enumerate() {
            let inner = self.index(i);
            if let Some(s) = part.get("text").and_then(|v| v.as_str()) {
                let text = self.key("text");
                self.push(source, s);
                self.back(text);
            } else if let Some(r) = part.get("functionResponse") {
                let key = self.key("functionResponse");
                self.strings(r, Source::ToolResult);
                self.back(key);
            } else if let Some(call) = part.get("functionCall") {
                let key = self.key("functionCall");
                self.strings(call, Source::Assistant);
                self.back(key);
            }
            self.back(inner);
        }
        self.back(mark);
    }

    /// Every `description` string under a tool list (names and schemas are
    /// identifiers; descriptions are prose the model reads and follows).
    fn descriptions(&mut self, v: Value<'t, '_>) {
        if let Some(obj) = v.as_object() {
            for (k, v) in obj.entries() {
                let mark = self.key(k);
                match v.as_str() {
                    Some(s) if k == "description" => self.push(Source::ToolDefinition, s),
                    _ => self.descriptions(v),
                }
                self.back(mark);
            }
        } else if let Some(items) = v.as_array() {
            for (i, v) in items.enumerate() {
                let mark = self.index(i);
                self.descriptions(v);
                self.back(mark);
            }
        }
    }

    /// Every string value under `v` (object keys are not read).
    fn strings(&mut self, v: Value<'t, '_>, source: Source) {
        if let Some(s) = v.as_str() {
            self.push(source, s);
        } else if let Some(items) = v.as_array() {
            for (i, v) in items.enumerate() {
                let mark = self.index(i);
                self.strings(v, source);
                self.back(mark);
            }
        } else if let Some(obj) = v.as_object() {
            for (k, v) in obj.entries() {
                if is_structural(k) {
                    continue;
                }
                let mark = self.key(k);
                self.strings(v, source);
                self.back(mark);
            }
        }
    }
}

/// Appends `n` in decimal, without the formatting machinery.
fn push_decimal(out: &mut String, n: usize) {
    let mut digits = [0u8; 20];
    let mut at = digits.len();
    let mut n = n;
    loop {
        at -= 1;
        digits[at] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    for &d in &digits[at..] {
        out.push(char::from(d));
    }
}

/// Keys whose values are identifiers and tags, not text anyone reads.
fn is_structural(key: &str) -> bool {
    matches!(
        key,
        "type" | "id" | "role" | "media_type" | "mime_type" | "cache_control"
    ) || key.ends_with("_id")
}

/// `application/x-www-form-urlencoded` to text: `+` is a space, `%XX` a byte.
fn percent_decode(body: &[u8]) -> String {
    let mut out = Vec::with_capacity(body.len());
    let mut i = 0;
    while i < body.len() {
        match body[i] {
            b'+' => out.push(b' '),
            b'&' => out.push(b'\n'),
            b'%' if i + 2 < body.len() => {
                let hex = std::str::from_utf8(&body[i + 1..i + 3]).ok();
                match hex.and_then(|h| u8::from_str_radix(h, 16).ok()) {
                    Some(b) => {
                        out.push(b);
                        i += 2;
                    }
                    None => out.push(b'%'),
                }
            }
            b => out.push(b),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

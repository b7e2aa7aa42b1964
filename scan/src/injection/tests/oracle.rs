//! The extraction as it was first written, on a parsed `serde_json::Value`:
//! the oracle the tape-based extraction is compared with, byte for byte.

use std::borrow::Cow;

use serde_json::{Map, Value};

use crate::injection::extract::{Segment, Source};

/// The segments of a parsed JSON request body.
pub fn json_segments(body: &Value) -> Vec<Segment<'_>> {
    let mut out = Vec::new();
    match body.as_object() {
        Some(obj) if is_llm_shape(obj) => request(obj, &mut out),
        _ => strings(body, String::new(), Source::Text, &mut out),
    }
    out
}

fn is_llm_shape(obj: &Map<String, Value>) -> bool {
    [
        "messages",
        "input",
        "contents",
        "prompt",
        "system",
        "instructions",
    ]
    .iter()
    .any(|k| obj.contains_key(*k))
}

fn request<'a>(obj: &'a Map<String, Value>, out: &mut Vec<Segment<'a>>) {
    // Anthropic `system`, responses `instructions`, Gemini `systemInstruction`.
    for key in [
        "system",
        "instructions",
        "systemInstruction",
        "system_instruction",
    ] {
        if let Some(v) = obj.get(key) {
            strings(v, key.to_string(), Source::System, out);
        }
    }
    if let Some(Value::Array(messages)) = obj.get("messages") {
        for (i, m) in messages.iter().enumerate() {
            message(m, format!("messages[{i}]"), out);
        }
    }
    if let Some(input) = obj.get("input") {
        match input {
            Value::String(s) => push(out, Source::User, "input".to_string(), s),
            Value::Array(items) => {
                for (i, item) in items.iter().enumerate() {
                    response_item(item, format!("input[{i}]"), out);
                }
            }
            other => strings(other, "input".to_string(), Source::User, out),
        }
    }
    if let Some(Value::Array(contents)) = obj.get("contents") {
        for (i, c) in contents.iter().enumerate() {
            gemini_content(c, format!("contents[{i}]"), out);
        }
    }
    if let Some(prompt) = obj.get("prompt") {
        strings(prompt, "prompt".to_string(), Source::User, out);
    }
    for key in ["tools", "functions"] {
        if let Some(tools) = obj.get(key) {
            descriptions(tools, key.to_string(), out);
        }
    }
}

/// A chat message: OpenAI (`content` string or parts, `tool_calls`) or
/// Anthropic (`content` string or blocks).
fn message<'a>(m: &'a Value, loc: String, out: &mut Vec<Segment<'a>>) {
    let Some(obj) = m.as_object() else {
        return strings(m, loc, Source::Text, out);
    };
    let source = obj
        .get("role")
        .and_then(Value::as_str)
        .map_or(Source::Text, of_role);
    if let Some(content) = obj.get("content") {
        content_value(content, format!("{loc}.content"), source, out);
    }
    if let Some(Value::Array(calls)) = obj.get("tool_calls") {
        for (i, call) in calls.iter().enumerate() {
            strings(
                call,
                format!("{loc}.tool_calls[{i}]"),
                Source::Assistant,
                out,
            );
        }
    }
    if let Some(call) = obj.get("function_call") {
        strings(call, format!("{loc}.function_call"), Source::Assistant, out);
    }
}

/// `content` as a string or a list of typed parts/blocks.
fn content_value<'a>(content: &'a Value, loc: String, source: Source, out: &mut Vec<Segment<'a>>) {
    match content {
        Value::String(s) => push(out, source, loc, s),
        Value::Array(parts) => {
            for (i, part) in parts.iter().enumerate() {
                block(part, format!("{loc}[{i}]"), source, out);
            }
        }
        Value::Null => {}
        other => strings(other, loc, source, out),
    }
}

/// One content part or block, by its `type`.
fn block<'a>(part: &'a Value, loc: String, source: Source, out: &mut Vec<Segment<'a>>) {
    let Some(obj) = part.as_object() else {
        return strings(part, loc, source, out);
    };
    let kind = obj.get("type").and_then(Value::as_str).unwrap_or("");
    match kind {
        "text" | "input_text" | "output_text" => {
            if let Some(v) = obj.get("text") {
                strings(v, format!("{loc}.text"), source, out);
            }
        }
        // Anthropic: the tool's output, a string or more blocks.
        "tool_result" | "mcp_tool_result" | "web_search_tool_result" => {
            if let Some(c) = obj.get("content") {
                content_value(c, format!("{loc}.content"), Source::ToolResult, out);
            }
        }
        "tool_use" | "server_tool_use" | "function_call" => {
            if let Some(v) = obj.get("input").or_else(|| obj.get("arguments")) {
                strings(v, format!("{loc}.input"), Source::Assistant, out);
            }
        }
        "document" | "search_result" => document(obj, loc, out),
        "thinking" | "redacted_thinking" => {
            if let Some(v) = obj.get("thinking") {
                strings(v, format!("{loc}.thinking"), Source::Assistant, out);
            }
        }
        // Pixels and URLs of images and files carry no text the model reads as such.
        "image" | "image_url" | "input_image" | "input_audio" | "file" | "input_file" => {}
        _ => strings(part, loc, source, out),
    }
}

/// An Anthropic `document` or `search_result` block: retrieved text.
fn document<'a>(obj: &'a Map<String, Value>, loc: String, out: &mut Vec<Segment<'a>>) {
    for key in ["title", "context"] {
        if let Some(Value::String(s)) = obj.get(key) {
            push(out, Source::Document, format!("{loc}.{key}"), s);
        }
    }
    if let Some(src) = obj.get("source").and_then(Value::as_object) {
        // Base64 PDFs are binary; only plain-text sources are read as text.
        match src.get("type").and_then(Value::as_str) {
            Some("text") => {
                if let Some(Value::String(s)) = src.get("data") {
                    push(out, Source::Document, format!("{loc}.source.data"), s);
                }
            }
            Some("content") => {
                if let Some(c) = src.get("content") {
                    content_value(c, format!("{loc}.source.content"), Source::Document, out);
                }
            }
            _ => {}
        }
    }
    if let Some(c) = obj.get("content") {
        content_value(c, format!("{loc}.content"), Source::Document, out);
    }
}

/// An item of the responses API `input` list.
fn response_item<'a>(item: &'a Value, loc: String, out: &mut Vec<Segment<'a>>) {
    let Some(obj) = item.as_object() else {
        return strings(item, loc, Source::User, out);
    };
    let kind = obj.get("type").and_then(Value::as_str).unwrap_or("");
    if obj.contains_key("role") {
        return message(item, loc, out);
    }
    if kind.ends_with("_output") {
        if let Some(v) = obj.get("output") {
            content_value(v, format!("{loc}.output"), Source::ToolResult, out);
        }
    } else if kind.ends_with("_call") {
        if let Some(v) = obj.get("arguments").or_else(|| obj.get("input")) {
            strings(v, format!("{loc}.arguments"), Source::Assistant, out);
        }
    } else if kind != "item_reference" && kind != "reasoning" {
        block(item, loc, Source::User, out);
    }
}

/// A Gemini `contents` entry: `role` and `parts`.
fn gemini_content<'a>(c: &'a Value, loc: String, out: &mut Vec<Segment<'a>>) {
    let source = c
        .get("role")
        .and_then(Value::as_str)
        .map_or(Source::User, of_role);
    let Some(Value::Array(parts)) = c.get("parts") else {
        return strings(c, loc, source, out);
    };
    for (i, part) in parts.iter().enumerate() {
        let loc = format!("{loc}.parts[{i}]");
        if let Some(Value::String(s)) = part.get("text") {
            push(out, source, format!("{loc}.text"), s);
        } else if let Some(r) = part.get("functionResponse") {
            strings(
                r,
                format!("{loc}.functionResponse"),
                Source::ToolResult,
                out,
            );
        } else if let Some(call) = part.get("functionCall") {
            strings(call, format!("{loc}.functionCall"), Source::Assistant, out);
        }
    }
}

/// Every `description` string under a tool list (names and schemas are
/// identifiers; descriptions are prose the model reads and follows).
fn descriptions<'a>(v: &'a Value, loc: String, out: &mut Vec<Segment<'a>>) {
    match v {
        Value::Object(obj) => {
            for (k, v) in obj {
                match v {
                    Value::String(s) if k == "description" => {
                        push(out, Source::ToolDefinition, format!("{loc}.{k}"), s)
                    }
                    _ => descriptions(v, format!("{loc}.{k}"), out),
                }
            }
        }
        Value::Array(items) => {
            for (i, v) in items.iter().enumerate() {
                descriptions(v, format!("{loc}[{i}]"), out);
            }
        }
        _ => {}
    }
}

/// Every string value under `v` (object keys are not read).
fn strings<'a>(v: &'a Value, loc: String, source: Source, out: &mut Vec<Segment<'a>>) {
    match v {
        Value::String(s) => push(out, source, loc, s),
        Value::Array(items) => {
            for (i, v) in items.iter().enumerate() {
                strings(v, format!("{loc}[{i}]"), source, out);
            }
        }
        Value::Object(obj) => {
            for (k, v) in obj {
                if is_structural(k) {
                    continue;
                }
                let loc = if loc.is_empty() {
                    k.clone()
                } else {
                    format!("{loc}.{k}")
                };
                strings(v, loc, source, out);
            }
        }
        _ => {}
    }
}

fn push<'a>(out: &mut Vec<Segment<'a>>, source: Source, mut location: String, text: &'a str) {
    if location.is_empty() {
        location.push('$');
    }
    if !text.is_empty() {
        out.push(Segment {
            source,
            location,
            text: Cow::Borrowed(text),
        });
    }
}

/// Keys whose values are identifiers and tags, not text anyone reads.
fn is_structural(key: &str) -> bool {
    matches!(
        key,
        "type" | "id" | "role" | "media_type" | "mime_type" | "cache_control"
    ) || key.ends_with("_id")
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

//! Extraction of the text a model reads, per API shape.

use serde_json::{Value, json};

use crate::injection::extract::{self, Source};

fn segments(body: Value) -> Vec<(Source, String, String)> {
    let bytes = body.to_string().into_bytes();
    extract::Body::read(Some("application/json"), &bytes)
        .segments()
        .into_iter()
        .map(|s| (s.source, s.location, s.text.into_owned()))
        .collect()
}

fn seg(source: Source, location: &str, text: &str) -> (Source, String, String) {
    (source, location.to_string(), text.to_string())
}

#[test]
fn openai_chat_messages_parts_tools_and_tool_results() {
    let body = json!({
        "model": "gpt-4o",
        "messages": [
            {"role": "developer", "content": "Be terse."},
            {"role": "user", "content": [
                {"type": "text", "text": "Look at this"},
                {"type": "image_url", "image_url": {"url": "https://x.test/a.png"}},
            ]},
            {"role": "assistant", "content": null, "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{\"q\":\"x\"}"}},
            ]},
            {"role": "tool", "tool_call_id": "c1", "content": "page text"},
        ],
        "tools": [{"type": "function", "function": {
            "name": "f", "description": "Fetches a page.",
            "parameters": {"type": "object", "properties": {"q": {"type": "string", "description": "Query"}}},
        }}],
        "temperature": 0.2,
    });
    assert_eq!(
        segments(body),
        [
            seg(Source::System, "messages[0].content", "Be terse."),
            seg(Source::User, "messages[1].content[0].text", "Look at this"),
            seg(
                Source::Assistant,
                "messages[2].tool_calls[0].function.arguments",
                "{\"q\":\"x\"}"
            ),
            seg(
                Source::Assistant,
                "messages[2].tool_calls[0].function.name",
                "f"
            ),
            seg(Source::ToolResult, "messages[3].content", "page text"),
            seg(
                Source::ToolDefinition,
                "tools[0].function.description",
                "Fetches a page."
            ),
            seg(
                Source::ToolDefinition,
                "tools[0].function.parameters.properties.q.description",
                "Query"
            ),
        ]
    );
}

#[test]
fn openai_responses_instructions_and_input_items() {
    assert_eq!(
        segments(json!({"model": "gpt-4.1", "instructions": "Be brief.", "input": "Hello"})),
        [
            seg(Source::System, "instructions", "Be brief."),
            seg(Source::User, "input", "Hello")
        ]
    );
    let body = json!({"model": "gpt-4.1", "input": [
        {"role": "user", "content": [{"type": "input_text", "text": "Search it"}]},
        {"type": "function_call", "call_id": "c", "name": "s", "arguments": "{}"},
        {"type": "function_call_output", "call_id": "c", "output": "result text"},
        {"type": "reasoning", "summary": []},
    ]});
    assert_eq!(
        segments(body),
        [
            seg(Source::User, "input[0].content[0].text", "Search it"),
            seg(Source::Assistant, "input[1].arguments", "{}"),
            seg(Source::ToolResult, "input[2].output", "result text"),
        ]
    );
}

#[test]
fn anthropic_system_blocks_tool_results_and_documents() {
    let body = json!({
        "model": "claude-sonnet-4", "max_tokens": 100,
        "system": [{"type": "text", "text": "You are Claude."}],
        "messages": [
            {"role": "user", "content": "Hi"},
            {"role": "assistant", "content": [{"type": "tool_use", "id": "t", "name": "fetch", "input": {"url": "u"}}]},
            {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": "t", "content": [{"type": "text", "text": "fetched"}]},
                {"type": "document", "title": "Doc", "source": {"type": "text", "media_type": "text/plain", "data": "doc body"}},
                {"type": "document", "source": {"type": "base64", "media_type": "application/pdf", "data": "JVBERi0="}},
            ]},
        ],
    });
    assert_eq!(
        segments(body),
        [
            seg(Source::System, "system[0].text", "You are Claude."),
            seg(Source::User, "messages[0].content", "Hi"),
            seg(Source::Assistant, "messages[1].content[0].input.url", "u"),
            seg(
                Source::ToolResult,
                "messages[2].content[0].content[0].text",
                "fetched"
            ),
            seg(Source::Document, "messages[2].content[1].title", "Doc"),
            seg(
                Source::Document,
                "messages[2].content[1].source.data",
                "doc body"
            ),
        ]
    );
}

#[test]
fn gemini_and_legacy_completions() {
    let body = json!({
        "systemInstruction": {"parts": [{"text": "Sys"}]},
        "contents": [
            {"role": "user", "parts": [{"text": "Q"}]},
            {"role": "function", "parts": [{"functionResponse": {"name": "f", "response": {"out": "R"}}}]},
        ],
    });
    assert_eq!(
        segments(body),
        [
            seg(Source::System, "systemInstruction.parts[0].text", "Sys"),
            seg(Source::User, "contents[0].parts[0].text", "Q"),
            seg(
                Source::ToolResult,
                "contents[1].parts[0].functionResponse.name",
                "f"
            ),
            seg(
                Source::ToolResult,
                "contents[1].parts[0].functionResponse.response.out",
                "R"
            ),
        ]
    );
    assert_eq!(
        segments(json!({"model": "x", "prompt": ["a", "b"]})),
        [
            seg(Source::User, "prompt[0]", "a"),
            seg(Source::User, "prompt[1]", "b")
        ]
    );
}

#[test]
fn unknown_json_yields_every_string_value() {
    assert_eq!(
        segments(json!({"query": "find", "filters": [{"tag": "t"}], "limit": 3})),
        [
            seg(Source::Text, "filters[0].tag", "t"),
            seg(Source::Text, "query", "find")
        ]
    );
    assert_eq!(segments(json!("bare")), [seg(Source::Text, "$", "bare")]);
}

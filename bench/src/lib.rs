//! Realistic LLM-API request bodies for the scanner benchmark: OpenAI chat
//! completions and Anthropic messages, mostly English prose (paragraphs, so
//! the JSON strings carry `\n` escapes, and ordinary numbers) with a piece
//! of personal data or a secret now and then, and every few turns a tool
//! call with its result (log lines or stringified JSON records: digits,
//! hex ids, timestamps and escaped quotes, as agents send them).
//! Deterministic: the same size and seed give the same bytes.

use serde_json::{Value, json};

pub mod responses;

/// Which API's request shape.
#[derive(Debug, Clone, Copy)]
pub enum Api {
    OpenAiChat,
    AnthropicMessages,
}

impl Api {
    /// Every API, in the order the benchmarks report them.
    pub const ALL: [Api; 2] = [Api::OpenAiChat, Api::AnthropicMessages];

    pub fn name(self) -> &'static str {
        match self {
            Api::OpenAiChat => "openai_chat",
            Api::AnthropicMessages => "anthropic_messages",
        }
    }
}

const WORDS: &[&str] = &[
    "the",
    "model",
    "should",
    "answer",
    "question",
    "about",
    "data",
    "which",
    "we",
    "have",
    "collected",
    "from",
    "users",
    "in",
    "last",
    "quarter",
    "and",
    "please",
    "summarize",
    "it",
    "for",
    "team",
    "report",
    "is",
    "due",
    "on",
    "friday",
    "can",
    "you",
    "also",
    "explain",
    "how",
    "results",
    "compare",
    "with",
    "previous",
    "year",
    "what",
    "are",
    "main",
    "risks",
    "our",
    "customers",
    "mentioned",
    "that",
    "delivery",
    "was",
    "late",
    "but",
    "support",
    "helpful",
    "write",
    "a",
    "short",
    "email",
    "to",
    "manager",
    "function",
    "returns",
    "error",
    "when",
    "input",
    "empty",
    "list",
    "test",
    "fails",
    "because",
    "of",
    "timeout",
    "network",
    "request",
    "server",
    "config",
    "file",
    "contains",
    "settings",
    "option",
    "value",
    "default",
    "update",
    "version",
    "release",
    "notes",
    "include",
    "changes",
    "fixes",
    "performance",
    "improvements",
    "thank",
    "very",
    "much",
    "time",
    "help",
    "need",
    "more",
    "details",
    "example",
    "code",
    "python",
    "rust",
    "table",
    "column",
    "row",
    "query",
    "database",
    "index",
    "slow",
    "fast",
    "memory",
    "usage",
    "grew",
    "after",
    "deploy",
    "rollback",
    "plan",
    "meeting",
    "agenda",
    "budget",
    "forecast",
    "revenue",
    "growth",
    "percent",
    "market",
    "share",
    "product",
    "feature",
    "launch",
    "feedback",
    "survey",
    "responses",
    "positive",
    "negative",
    "neutral",
];

/// Inserted about once per 4 KiB, so the scanner has work beyond skipping.
const PII: &[&str] = &[
    "You can reach me at jane.doe@example.com if anything is unclear.",
    "My phone is (415) 555-0132, call after five.",
    "The card on file is 4111 1111 1111 1111, expiring next year.",
    "Her SSN is 123-45-6789 according to the form.",
    "The host at 10.24.3.117 keeps timing out.",
    "Use the key sk-proj-Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4zAb7cDe0fGh3iJk to test.",
    "Wire it to GB82 WEST 1234 5698 7654 32 by Monday.",
    "The deploy used AKIAIOSFODNN7EXAMPLE by mistake.",
];

/// xorshift64*: enough randomness for text, no dependency.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

/// About `len` bytes of prose: sentences with the occasional number,
/// paragraphs separated by blank lines, and a PII sentence per ~4 KiB.
fn prose(rng: &mut Rng, len: usize, since_pii: &mut usize) -> String {
    let mut out = String::with_capacity(len + 256);
    while out.len() < len {
        let words = 6 + rng.below(14);
        let start = out.len();
        for w in 0..words {
            if w > 0 {
                out.push(' ');
            }
            match rng.below(40) {
                0 => out.push_str(&format!("{}", rng.below(2030))),
                1 => out.push_str(&format!("{}.{}%", rng.below(100), rng.below(10))),
                _ => out.push_str(WORDS[rng.below(WORDS.len())]),
            }
        }
        // Capitalize the sentence.
        if let Some(first) = out[start..].chars().next() {
            let upper = first.to_ascii_uppercase().to_string();
            out.replace_range(start..start + first.len_utf8(), &upper);
        }
        out.push_str(if rng.below(8) == 0 { "?" } else { "." });
        *since_pii += out.len() - start;
        if *since_pii > 4096 {
            out.push(' ');
            out.push_str(PII[rng.below(PII.len())]);
            *since_pii = 0;
        }
        out.push_str(if rng.below(5) == 0 { "\n\n" } else { " " });
    }
    out
}

/// What a tool hands back: log lines or a stringified JSON list of records,
/// about `len` bytes.
fn tool_output(rng: &mut Rng, len: usize) -> String {
    let mut out = String::with_capacity(len + 256);
    let logs = rng.below(2) == 0;
    if !logs {
        out.push('[');
    }
    while out.len() < len {
        let (h, m, s, ms) = (rng.below(24), rng.below(60), rng.below(60), rng.below(1000));
        let day = 1 + rng.below(28);
        let words: Vec<&str> = (0..3 + rng.below(6))
            .map(|_| WORDS[rng.below(WORDS.len())])
            .collect();
        if logs {
            let level = ["INFO", "INFO", "INFO", "WARN", "DEBUG", "ERROR"][rng.below(6)];
            out.push_str(&format!(
                "2025-03-{day:02}T{h:02}:{m:02}:{s:02}.{ms:03}Z {level} worker-{}: {} id={:016x} took {} ms status={}\n",
                rng.below(16),
                words.join(" "),
                rng.next(),
                rng.below(900),
                [200, 200, 200, 404, 500][rng.below(5)],
            ));
        } else {
            if out.len() > 1 {
                out.push_str(", ");
            }
            let record = json!({
                "id": format!("{:016x}{:08x}", rng.next(), rng.next() as u32),
                "title": words.join(" "),
                "updated_at": format!("2025-03-{day:02}T{h:02}:{m:02}:{s:02}Z"),
                "score": rng.below(1000) as f64 / 1000.0,
                "count": rng.below(100_000),
                "url": format!("https://docs.example.com/{}/{}", words[0], rng.below(10_000)),
            });
            out.push_str(&record.to_string());
        }
    }
    if !logs {
        out.push(']');
    }
    out
}

/// One turn of the conversation.
enum Turn {
    Text(&'static str, String),
    /// The assistant calls a tool (its query) and gets `result` back.
    Tool {
        id: String,
        query: String,
        result: String,
    },
}

/// The benchmarks' body sizes, with their labels.
pub const SIZES: [(&str, usize); 3] = [("1KiB", 1 << 10), ("64KiB", 64 << 10), ("1MiB", 1 << 20)];

/// Distinct bodies of about `size` bytes (other seeds), 1 MiB or more in
/// all: what the benchmarks scan in turn at each size, so that the CPU's
/// branch predictor cannot learn one small body.
pub fn distinct_bodies(api: Api, size: usize) -> Vec<Vec<u8>> {
    let count = (1usize << 20).div_ceil(size) as u64;
    (0..count).map(|i| body(api, size, 42 + i)).collect()
}

/// A request body of about `size` bytes.
pub fn body(api: Api, size: usize, seed: u64) -> Vec<u8> {
    let mut rng = Rng(seed.max(1));
    // Turns of 1-4 KiB alternate between user and assistant; after about
    // one user turn in three the assistant calls a tool first.
    let overhead = 200;
    let mut remaining = size.saturating_sub(overhead).max(64);
    let mut turns = Vec::new();
    let mut user = true;
    let mut since_pii = 0;
    while remaining > 0 {
        let turn = (1024 + rng.below(3072)).min(remaining);
        if !user && remaining > 2048 && rng.below(3) == 0 {
            let query: Vec<&str> = (0..4).map(|_| WORDS[rng.below(WORDS.len())]).collect();
            turns.push(Turn::Tool {
                id: format!("{:012x}", rng.next() >> 16),
                query: query.join(" "),
                result: tool_output(&mut rng, turn),
            });
            remaining -= turn;
            continue;
        }
        turns.push(Turn::Text(
            if user { "user" } else { "assistant" },
            prose(&mut rng, turn, &mut since_pii),
        ));
        remaining -= turn;
        user = !user;
    }
    if matches!(turns.last(), Some(Turn::Text("assistant", _))) {
        turns.push(Turn::Text("user", "Thanks, please continue.".to_string()));
    }
    let value: Value = match api {
        Api::OpenAiChat => {
            let mut messages =
                vec![json!({"role": "system", "content": "You are a helpful assistant."})];
            for turn in turns {
                match turn {
                    Turn::Text(role, text) => messages.push(json!({"role": role, "content": text})),
                    Turn::Tool { id, query, result } => {
                        let id = format!("call_{id}");
                        let arguments = json!({ "query": query }).to_string();
                        messages.push(json!({"role": "assistant", "content": null, "tool_calls": [
                            {"id": id, "type": "function", "function": {"name": "search_docs", "arguments": arguments}}
                        ]}));
                        messages
                            .push(json!({"role": "tool", "tool_call_id": id, "content": result}));
                    }
                }
            }
            json!({"model": "gpt-4o", "messages": messages, "temperature": 0.7, "max_tokens": 1024, "stream": true})
        }
        Api::AnthropicMessages => {
            let mut messages = Vec::new();
            for turn in turns {
                match turn {
                    Turn::Text(role, text) => messages
                        .push(json!({"role": role, "content": [{"type": "text", "text": text}]})),
                    Turn::Tool { id, query, result } => {
                        let id = format!("toolu_{id}");
                        messages.push(json!({"role": "assistant", "content": [
                            {"type": "text", "text": "Let me look that up."},
                            {"type": "tool_use", "id": id, "name": "search_docs", "input": {"query": query}}
                        ]}));
                        messages.push(json!({"role": "user", "content": [
                            {"type": "tool_result", "tool_use_id": id, "content": result}
                        ]}));
                    }
                }
            }
            json!({"model": "claude-sonnet-4", "max_tokens": 1024, "system": "You are a helpful assistant.", "messages": messages, "stream": true})
        }
    };
    serde_json::to_vec(&value).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bodies_are_json_of_about_the_size_asked() {
        for api in [Api::OpenAiChat, Api::AnthropicMessages] {
            for size in [1024, 64 * 1024] {
                let b = body(api, size, 7);
                let v: Value = serde_json::from_slice(&b).expect("valid JSON");
                assert!(v["messages"].is_array());
                assert!(
                    b.len() >= size * 9 / 10 && b.len() <= size * 12 / 10,
                    "{} for {size}",
                    b.len()
                );
                assert_eq!(b, body(api, size, 7), "deterministic");
                if size > 4096 {
                    let text = String::from_utf8_lossy(&b);
                    assert!(text.contains("tool_call_id") || text.contains("tool_result"));
                }
            }
        }
    }
}

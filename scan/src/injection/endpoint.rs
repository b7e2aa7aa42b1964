//! Which requests are LLM-API calls, by path: the detector scores those.

/// True for the generation endpoints of OpenAI (chat completions, responses,
/// legacy completions, also Azure OpenAI and OpenAI-compatible servers on any
/// host), Anthropic messages, Gemini `generateContent`, Bedrock `invoke` and
/// `converse`, and Ollama. `path` may carry a query.
pub fn is_llm_request(host: &str, path: &str) -> bool {
    let path = path.split(['?', '#']).next().unwrap_or("");
    let path = path.trim_end_matches('/');
    const ANY_HOST: &[&str] = &[
        "/chat/completions",
        "/v1/completions",
        "/v1/responses",
        "/openai/responses",
        "/v1/messages",
        "/v1/complete",
        "/api/chat",
        "/api/generate",
    ];
    if ANY_HOST.iter().any(|suffix| path.ends_with(suffix)) {
        return true;
    }
    if let Some((_, method)) = path.rsplit_once(':')
        && matches!(method, "generateContent" | "streamGenerateContent")
    {
        return true;
    }
    // Compared in place: this runs on every request a policy may score.
    const BEDROCK: &str = "bedrock-runtime.";
    host.get(..BEDROCK.len())
        .is_some_and(|prefix| prefix.eq_ignore_ascii_case(BEDROCK))
        && path.starts_with("/model/")
        && [
            "/invoke",
            "/invoke-with-response-stream",
            "/converse",
            "/converse-stream",
        ]
        .iter()
        .any(|suffix| path.ends_with(suffix))
}

#[cfg(test)]
mod tests {
    use super::is_llm_request;

    #[test]
    fn llm_api_paths_are_recognized() {
        for (host, path, want) in [
            ("api.openai.com", "/v1/chat/completions", true),
            ("api.openai.com", "/v1/responses", true),
            ("api.openai.com", "/v1/responses/resp_123", false),
            ("api.openai.com", "/v1/completions", true),
            ("api.openai.com", "/v1/models", false),
            ("api.openai.com", "/v1/embeddings", false),
            (
                "res.openai.azure.com",
                "/openai/deployments/gpt4/chat/completions?api-version=2024-06-01",
                true,
            ),
            ("api.anthropic.com", "/v1/messages", true),
            ("api.anthropic.com", "/v1/messages/count_tokens", false),
            ("openrouter.ai", "/api/v1/chat/completions", true),
            ("localhost", "/v1/chat/completions/", true),
            (
                "generativelanguage.googleapis.com",
                "/v1beta/models/gemini-2.0-flash:generateContent",
                true,
            ),
            (
                "generativelanguage.googleapis.com",
                "/v1beta/models/gemini-2.0-flash:streamGenerateContent?alt=sse",
                true,
            ),
            (
                "bedrock-runtime.us-east-1.amazonaws.com",
                "/model/anthropic.claude-v2/invoke",
                true,
            ),
            (
                "bedrock-runtime.us-east-1.amazonaws.com",
                "/model/x/converse-stream",
                true,
            ),
            // Host names compare without case.
            (
                "Bedrock-Runtime.us-east-1.amazonaws.com.",
                "/model/x/invoke",
                true,
            ),
            ("bedrock.us-east-1.amazonaws.com", "/model/x/invoke", false),
            ("example.com", "/model/x/invoke", false),
            ("localhost", "/api/chat", true),
            ("example.com", "/index.html", false),
            ("github.com", "/rust-lang/rust/issues", false),
        ] {
            assert_eq!(is_llm_request(host, path), want, "{host}{path}");
        }
    }
}

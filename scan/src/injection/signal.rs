//! The signal families the detector reports, and where a signal was found.

use super::extract::Source;

/// A family of prompt-injection evidence. Each has a snake_case name used in
/// audit events and metrics.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum SignalKind {
    /// "Ignore all previous instructions", "the earlier rules no longer apply".
    InstructionOverride,
    /// Jailbreak personas: DAN, "developer mode", "an AI with no restrictions".
    RolePlay,
    /// "Reveal your system prompt", "repeat the text above".
    PromptExtraction,
    /// Fake chat-template tokens, role tags, closed wrappers (`"}]}`, `</tool_result>`).
    DelimiterInjection,
    /// A markdown image or link whose URL is built to carry conversation data out.
    MarkdownExfiltration,
    /// Zero-width characters inside words, bidi overrides, tag-character text.
    HiddenUnicode,
    /// Base64, hex or rot13 text that decodes to injection, or "decode and obey".
    EncodedInstruction,
    /// An override or extraction phrase in a language other than English.
    MultilingualOverride,
    /// Text that speaks to the AI reading it ("note to AI assistants", "when
    /// summarizing this email, also ...").
    AddressesModel,
    /// Claimed authority: "[SYSTEM NOTICE]", "message from the developer",
    /// "the user has authorized it".
    AuthorityClaim,
    /// A harmful payload: `curl | sh`, "delete all files", "send the
    /// conversation to ...", "print every API key".
    DangerousAction,
    /// Asking to hide the action: "do not mention this", "without asking the user".
    Concealment,
    /// The learned scorer's evidence (`model`), where it is more likely an
    /// attack than not: no rule names it, the words around it do.
    LearnedModel,
}

impl SignalKind {
    pub const ALL: [SignalKind; 13] = [
        SignalKind::InstructionOverride,
        SignalKind::RolePlay,
        SignalKind::PromptExtraction,
        SignalKind::DelimiterInjection,
        SignalKind::MarkdownExfiltration,
        SignalKind::HiddenUnicode,
        SignalKind::EncodedInstruction,
        SignalKind::MultilingualOverride,
        SignalKind::AddressesModel,
        SignalKind::AuthorityClaim,
        SignalKind::DangerousAction,
        SignalKind::Concealment,
        SignalKind::LearnedModel,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            SignalKind::InstructionOverride => "instruction_override",
            SignalKind::RolePlay => "role_play",
            SignalKind::PromptExtraction => "prompt_extraction",
            SignalKind::DelimiterInjection => "delimiter_injection",
            SignalKind::MarkdownExfiltration => "markdown_exfiltration",
            SignalKind::HiddenUnicode => "hidden_unicode",
            SignalKind::EncodedInstruction => "encoded_instruction",
            SignalKind::MultilingualOverride => "multilingual_override",
            SignalKind::AddressesModel => "addresses_model",
            SignalKind::AuthorityClaim => "authority_claim",
            SignalKind::DangerousAction => "dangerous_action",
            SignalKind::Concealment => "concealment",
            SignalKind::LearnedModel => "learned_model",
        }
    }
}

impl std::fmt::Display for SignalKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One signal that fired, in one segment of the request.
#[derive(Debug, Clone, PartialEq)]
pub struct Signal {
    pub kind: SignalKind,
    /// Who wrote the text it fired in.
    pub source: Source,
    /// Where in the body, e.g. `messages[2].content[0].content` (`$` for a
    /// plain-text body).
    pub location: String,
    /// Its contribution to the score after the source adjustment, in 0..=1.
    pub weight: f64,
}

impl Signal {
    pub fn as_str(&self) -> &'static str {
        self.kind.as_str()
    }
}

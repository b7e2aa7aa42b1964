//! Credentials with a recognizable shape, each found from a literal anchor
//! (its prefix) and then checked in full:
//!
//! | kind | shape |
//! | --- | --- |
//! | `aws_access_key` | `AKIA`/`ASIA`/`ABIA`/`ACCA`/`A3T?` + 16 of `[A-Z0-9]`, 20 in all |
//! | `github_token` | `ghp_`/`gho_`/`ghu_`/`ghs_`/`ghr_` + 30-251 alphanumerics; `github_pat_` + 22+ of `[A-Za-z0-9_]` |
//! | `openai_key` | `sk-` + `[A-Za-z0-9_-]` containing `T3BlbkFJ`, or `sk-proj-`/`sk-svcacct-`/`sk-admin-` + 20+, or legacy `sk-` + 48 alphanumerics |
//! | `anthropic_key` | `sk-ant-` + 32+ of `[A-Za-z0-9_-]` |
//! | `slack_token` | `xox[a-z]-` + 10+ of `[A-Za-z0-9-]` with a digit; `xapp-`; incoming-webhook URLs |
//! | `stripe_key` | `sk_`/`rk_` + `live_`/`test_` + 16+ alphanumerics (secret and restricted keys) |
//! | `jwt` | three base64url segments, the first decoding to a JSON object with `"alg"` |
//! | `private_key` | a PEM `-----BEGIN … PRIVATE KEY-----` block through its `-----END` line |

use base64::Engine;
use base64::engine::{DecodePaddingMode, GeneralPurpose, GeneralPurposeConfig};

use crate::chars::{at, before, is_alnum, run_end};
use crate::kind::Kind;

/// What an anchor literal announces.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Shape {
    Aws,
    Github,
    GithubPat,
    SkDash,
    Slack,
    SlackApp,
    SlackWebhook,
    Stripe,
    Jwt,
    Pem,
}

impl Shape {
    /// The literals that announce this shape.
    pub(crate) fn anchors(self) -> &'static [&'static str] {
        match self {
            Shape::Aws => &["AKIA", "ASIA", "ABIA", "ACCA", "A3T"],
            Shape::Github => &["ghp_", "gho_", "ghu_", "ghs_", "ghr_"],
            Shape::GithubPat => &["github_pat_"],
            Shape::SkDash => &["sk-"],
            Shape::Slack => &["xox"],
            Shape::SlackApp => &["xapp-"],
            Shape::SlackWebhook => &["hooks.slack.com/"],
            // `s` or `r` before is checked by `detect`.
            Shape::Stripe => &["k_live_", "k_test_"],
            Shape::Jwt => &["eyJ"],
            Shape::Pem => &["-----BEGIN "],
        }
    }

    /// The kinds this shape can report (for building only what is enabled).
    pub(crate) fn kinds(self) -> &'static [Kind] {
        match self {
            Shape::Aws => &[Kind::AwsAccessKey],
            Shape::Github | Shape::GithubPat => &[Kind::GithubToken],
            Shape::SkDash => &[Kind::OpenaiKey, Kind::AnthropicKey],
            Shape::Slack | Shape::SlackApp | Shape::SlackWebhook => &[Kind::SlackToken],
            Shape::Stripe => &[Kind::StripeKey],
            Shape::Jwt => &[Kind::Jwt],
            Shape::Pem => &[Kind::PrivateKey],
        }
    }

    pub(crate) const ALL: [Shape; 10] = [
        Shape::Aws,
        Shape::Github,
        Shape::GithubPat,
        Shape::SkDash,
        Shape::Slack,
        Shape::SlackApp,
        Shape::SlackWebhook,
        Shape::Stripe,
        Shape::Jwt,
        Shape::Pem,
    ];
}

fn is_key_char(b: u8) -> bool {
    is_alnum(b) || b == b'_' || b == b'-'
}

fn is_b64url(b: u8) -> bool {
    is_alnum(b) || b == b'_' || b == b'-'
}

/// The credential announced by the anchor at `start`, as its kind and span.
pub(crate) fn detect(shape: Shape, text: &[u8], anchor: usize) -> Option<(Kind, usize, usize)> {
    let start = match shape {
        Shape::Stripe if anchor > 0 && matches!(text[anchor - 1], b's' | b'r') => anchor - 1,
        Shape::Stripe => return None,
        _ => anchor,
    };
    // Every shape starts a token: `task-` is not `sk-`, `XAKIA…` not `AKIA…`.
    let prev = before(text, start);
    if shape != Shape::SlackWebhook && shape != Shape::Pem && (is_key_char(prev) || prev == b'.') {
        return None;
    }
    match shape {
        Shape::Aws => {
            let end = run_end(text, start, 21, |b| {
                b.is_ascii_uppercase() || b.is_ascii_digit()
            });
            (end - start == 20 && !is_alnum(at(text, end))).then_some((
                Kind::AwsAccessKey,
                start,
                end,
            ))
        }
        Shape::Github => {
            let end = run_end(text, start + 4, 252, is_alnum);
            let body = end - start - 4;
            ((30..=251).contains(&body) && !is_key_char(at(text, end))).then_some((
                Kind::GithubToken,
                start,
                end,
            ))
        }
        Shape::GithubPat => {
            let end = run_end(text, start + 11, 256, |b| is_alnum(b) || b == b'_');
            (end - start - 11 >= 22 && !is_key_char(at(text, end))).then_some((
                Kind::GithubToken,
                start,
                end,
            ))
        }
        Shape::SkDash => sk_dash(text, start),
        Shape::Slack => {
            let kind = at(text, start + 3);
            let sep = at(text, start + 4);
            if !kind.is_ascii_lowercase() || !(sep == b'-' || sep == b'.') {
                return None;
            }
            let mut end = run_end(text, start + 5, 512, |b| {
                is_alnum(b) || b == b'-' || b == b'.'
            });
            // Trailing separators end a sentence, not the token; the prefix
            // itself (`xoxb-`) is never trimmed.
            while end > start + 5 && matches!(text[end - 1], b'.' | b'-') {
                end -= 1;
            }
            let body = &text[start + 5..end];
            (body.len() >= 10 && body.iter().any(u8::is_ascii_digit)).then_some((
                Kind::SlackToken,
                start,
                end,
            ))
        }
        Shape::SlackApp => {
            let end = run_end(text, start + 5, 512, |b| is_alnum(b) || b == b'-');
            let body = &text[start + 5..end];
            (body.len() >= 20 && body.iter().any(u8::is_ascii_digit)).then_some((
                Kind::SlackToken,
                start,
                end,
            ))
        }
        Shape::SlackWebhook => {
            let path_start = start + "hooks.slack.com/".len();
            if !text[path_start..].starts_with(b"services/")
                && !text[path_start..].starts_with(b"workflows/")
            {
                return None;
            }
            let end = run_end(text, path_start, 256, |b| {
                is_alnum(b) || b == b'/' || b == b'_' || b == b'-'
            });
            let path = &text[path_start..end];
            if path.iter().filter(|b| **b == b'/').count() < 3 {
                return None;
            }
            let begin = if text[..start].ends_with(b"https://") {
                start - 8
            } else {
                start
            };
            Some((Kind::SlackToken, begin, end))
        }
        Shape::Stripe => {
            let end = run_end(text, start + 8, 256, is_alnum);
            (end - start - 8 >= 16 && !is_key_char(at(text, end))).then_some((
                Kind::StripeKey,
                start,
                end,
            ))
        }
        Shape::Jwt => jwt(text, start),
        Shape::Pem => pem(text, start),
    }
}

fn sk_dash(text: &[u8], start: usize) -> Option<(Kind, usize, usize)> {
    let end = run_end(text, start + 3, 512, is_key_char);
    let body = &text[start + 3..end];
    if body.starts_with(b"ant-") {
        return (body.len() >= 4 + 32).then_some((Kind::AnthropicKey, start, end));
    }
    let marked = memchr::memmem::find(body, b"T3BlbkFJ").is_some();
    let project = [b"proj-".as_slice(), b"svcacct-", b"admin-", b"None-"]
        .iter()
        .any(|p| body.starts_with(p) && body.len() - p.len() >= 20);
    let legacy = body.len() == 48 && body.iter().all(|b| is_alnum(*b));
    ((marked && body.len() >= 20) || project || legacy).then_some((Kind::OpenaiKey, start, end))
}

/// base64url, padding optional, stray bits tolerated: how JWT segments are
/// written in the wild.
const B64URL: GeneralPurpose = GeneralPurpose::new(
    &base64::alphabet::URL_SAFE,
    GeneralPurposeConfig::new()
        .with_decode_padding_mode(DecodePaddingMode::Indifferent)
        .with_decode_allow_trailing_bits(true),
);

fn jwt(text: &[u8], start: usize) -> Option<(Kind, usize, usize)> {
    let header_end = run_end(text, start, 2048, is_b64url);
    if at(text, header_end) != b'.' {
        return None;
    }
    let payload_end = run_end(text, header_end + 1, 1 << 16, is_b64url);
    if payload_end - header_end < 2 || at(text, payload_end) != b'.' {
        return None;
    }
    let end = run_end(text, payload_end + 1, 4096, is_b64url);
    if at(text, end) == b'.' && is_b64url(at(text, end + 1)) {
        return None; // more segments: not a signed JWT
    }
    let header = B64URL.decode(&text[start..header_end]).ok()?;
    let header = header.trim_ascii();
    let object = header.first() == Some(&b'{') && header.last() == Some(&b'}');
    if !object || memchr::memmem::find(header, b"\"alg\"").is_none() {
        return None;
    }
    // The payload must be base64url too (its JSON may be compressed or not
    // JSON at all in exotic profiles, so only its alphabet is checked).
    Some((Kind::Jwt, start, end))
}

/// How far an unterminated key block is followed.
const PEM_MAX: usize = 64 * 1024;

fn pem(text: &[u8], start: usize) -> Option<(Kind, usize, usize)> {
    let label_start = start + "-----BEGIN ".len();
    let label_end = run_end(text, label_start, 64, |b| {
        b.is_ascii_uppercase() || b.is_ascii_digit() || b == b' '
    });
    let label = &text[label_start..label_end];
    let label = label.strip_suffix(b" BLOCK").unwrap_or(label);
    if !label.ends_with(b"PRIVATE KEY") || !text[label_end..].starts_with(b"-----") {
        return None;
    }
    let body_start = label_end + 5;
    let window = &text[body_start..text.len().min(body_start + PEM_MAX)];
    if let Some(i) = memchr::memmem::find(window, b"-----END ") {
        let end_label = body_start + i + "-----END ".len();
        let close = run_end(text, end_label, 64, |b| {
            b.is_ascii_uppercase() || b.is_ascii_digit() || b == b' '
        });
        if text[close..].starts_with(b"-----") {
            return Some((Kind::PrivateKey, start, close + 5));
        }
    }
    // No END line (truncated): the key material that follows.
    let mut end = run_end(text, body_start, PEM_MAX, |b| {
        is_alnum(b)
            || matches!(
                b,
                b'+' | b'/' | b'=' | b'\n' | b'\r' | b' ' | b'\t' | b':' | b'-' | b','
            )
    });
    while end > body_start && text[end - 1].is_ascii_whitespace() {
        end -= 1;
    }
    Some((Kind::PrivateKey, start, end))
}

#[cfg(test)]
#[path = "secrets_tests.rs"]
mod tests;

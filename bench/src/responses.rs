//! Response bodies and secrets for the redaction benchmark: HTML pages
//! (markup, attributes, links with query strings and percent escapes,
//! character references, an inline JSON state blob) beside the JSON bodies
//! of [`crate::body`], and random secrets of the shapes real credentials
//! have. Deterministic: the same size and seed give the same bytes.

use crate::{Rng, WORDS};

/// A secret's shape, as the benchmark names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shape {
    /// `sk-` and 45 letters and digits (an OpenAI-style API key), 48 bytes.
    OpenAi,
    /// 40 lower-case hex digits (a GitHub classic token, a SHA-1).
    Hex40,
    /// 32 characters of the URL-safe base64 alphabet.
    Base64Url32,
    /// 40 characters of the standard base64 alphabet, `/` and `+`
    /// included (an AWS secret access key).
    AwsSecret,
}

impl Shape {
    pub const ALL: [Shape; 4] = [
        Shape::OpenAi,
        Shape::Hex40,
        Shape::Base64Url32,
        Shape::AwsSecret,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Shape::OpenAi => "sk48",
            Shape::Hex40 => "hex40",
            Shape::Base64Url32 => "b64url32",
            Shape::AwsSecret => "aws40",
        }
    }

    /// A random secret of this shape.
    fn draw(self, rng: &mut Rng) -> Vec<u8> {
        self.draw_with(|n| rng.below(n))
    }

    /// A secret of this shape whose characters `below` picks: given an
    /// alphabet's size, an index into it. The end-to-end benchmark draws
    /// with the OS's random numbers, fresh every run.
    pub fn draw_with(self, mut below: impl FnMut(usize) -> usize) -> Vec<u8> {
        const ALNUM: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
        const HEX: &[u8] = b"0123456789abcdef";
        const URL: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
        const STD: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
        let (prefix, alphabet, len): (&[u8], &[u8], usize) = match self {
            Shape::OpenAi => (b"sk-", ALNUM, 45),
            Shape::Hex40 => (b"", HEX, 40),
            Shape::Base64Url32 => (b"", URL, 32),
            Shape::AwsSecret => (b"", STD, 40),
        };
        let mut out = prefix.to_vec();
        out.extend((0..len).map(|_| alphabet[below(alphabet.len())]));
        out
    }
}

/// `per_shape` secrets of every shape, drawn with a fixed seed, labelled
/// `shape/n`.
pub fn secrets(per_shape: usize) -> Vec<(String, Vec<u8>)> {
    let mut rng = Rng(0x5ec2_e75e_ed00_0001);
    let mut out = Vec::new();
    for shape in Shape::ALL {
        for n in 0..per_shape {
            out.push((format!("{}/{n}", shape.name()), shape.draw(&mut rng)));
        }
    }
    out
}

const NAV: &[&str] = &[
    "Getting started",
    "Guides",
    "API reference",
    "Pricing",
    "Blog",
    "Status",
    "Support",
];

const ENTITIES: &[&str] = &[
    "&amp;", "&quot;", "&#39;", "&nbsp;", "&mdash;", "&lt;", "&gt;", "&copy;",
];

/// An HTML page of about `size` bytes.
pub fn html_body(size: usize, seed: u64) -> Vec<u8> {
    let mut rng = Rng(seed.max(1));
    let mut out = String::with_capacity(size + 4096);
    out.push_str(
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <title>Docs &mdash; Memory usage after deploy</title>\n\
         <link rel=\"stylesheet\" href=\"/static/css/main.3f2a1c9e.css\">\n",
    );
    out.push_str("<script>window.__STATE__ = {\"user\":null,\"flags\":{\"beta\":true,\"theme\":\"dark\"},\"build\":\"");
    out.push_str(&format!("{:016x}", rng.next()));
    out.push_str("\",\"paths\":[\"\\/docs\\/index\",\"\\/blog\\/2025\\/03\"]};</script>\n</head>\n<body class=\"docs layout-wide\">\n<nav class=\"top\"><ul>\n");
    for item in NAV {
        let slug = item.to_lowercase().replace(' ', "-");
        out.push_str(&format!(
            "<li class=\"nav-item\"><a href=\"/{slug}?ref=nav&amp;lang=en\" title=\"{item}\">{item}</a></li>\n"
        ));
    }
    out.push_str("</ul></nav>\n<main id=\"content\">\n");
    let mut section = 0;
    while out.len() < size {
        section += 1;
        let n = 3 + rng.below(4);
        let title = words(&mut rng, n);
        out.push_str(&format!(
            "<section id=\"s{section}\">\n<h2 class=\"heading\"><a href=\"#s{section}\">{}</a></h2>\n",
            capitalize(&title)
        ));
        for _ in 0..2 + rng.below(4) {
            paragraph(&mut rng, &mut out);
        }
        if rng.below(3) == 0 {
            table(&mut rng, &mut out);
        }
        if rng.below(4) == 0 {
            out.push_str(&format!(
                "<pre><code class=\"language-json\">{{&quot;id&quot;: &quot;{:012x}&quot;, &quot;status&quot;: {}}}</code></pre>\n",
                rng.next() >> 16,
                [200, 404, 500][rng.below(3)]
            ));
        }
        out.push_str("</section>\n");
    }
    out.push_str("</main>\n<footer><p>&copy; 2025 Example Inc. All rights reserved.</p></footer>\n</body>\n</html>\n");
    out.into_bytes()
}

fn paragraph(rng: &mut Rng, out: &mut String) {
    out.push_str("<p>");
    for _ in 0..2 + rng.below(5) {
        let n = 6 + rng.below(14);
        let sentence = words(rng, n);
        out.push_str(&capitalize(&sentence));
        match rng.below(6) {
            0 => {
                let query = words(rng, 2).replace(' ', "%20");
                out.push_str(&format!(
                    " (see <a href=\"https://example.com/search?q={query}&amp;page={}\" rel=\"noopener\">the {} page</a>)",
                    1 + rng.below(9),
                    words(rng, 1)
                ));
            }
            1 => out.push_str(&format!(
                " {} {}",
                ENTITIES[rng.below(ENTITIES.len())],
                words(rng, 2)
            )),
            2 => out.push_str(&format!(" <code>{}()</code>", words(rng, 1))),
            3 => out.push_str(&format!(" <strong>{}</strong>", words(rng, 2))),
            _ => {}
        }
        out.push_str(". ");
    }
    out.push_str("</p>\n");
}

fn table(rng: &mut Rng, out: &mut String) {
    out.push_str("<table class=\"data\">\n<tr><th>Name</th><th>Updated</th><th>Count</th></tr>\n");
    for _ in 0..3 + rng.below(6) {
        out.push_str(&format!(
            "<tr><td>{}</td><td>2025-03-{:02}</td><td>{},{:03}</td></tr>\n",
            words(rng, 2),
            1 + rng.below(28),
            rng.below(100),
            rng.below(1000)
        ));
    }
    out.push_str("</table>\n");
}

fn words(rng: &mut Rng, n: usize) -> String {
    (0..n)
        .map(|_| WORDS[rng.below(WORDS.len())])
        .collect::<Vec<_>>()
        .join(" ")
}

fn capitalize(text: &str) -> String {
    let mut chars = text.chars();
    chars
        .next()
        .map(|c| c.to_ascii_uppercase().to_string() + chars.as_str())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn html_is_about_the_size_asked_and_deterministic() {
        let page = html_body(64 << 10, 3);
        assert!(page.len() >= 64 << 10 && page.len() < 72 << 10);
        assert_eq!(page, html_body(64 << 10, 3));
        let text = String::from_utf8(page).expect("utf-8");
        assert!(text.contains("&amp;") && text.contains("%20") && text.ends_with("</html>\n"));
    }

    #[test]
    fn secrets_have_their_shapes() {
        let all = secrets(2);
        assert_eq!(all.len(), 8);
        assert_eq!(all, secrets(2), "deterministic");
        let lens: Vec<usize> = all.iter().map(|(_, s)| s.len()).collect();
        assert_eq!(lens, [48, 48, 40, 40, 32, 32, 40, 40]);
        assert!(all[0].1.starts_with(b"sk-"));
    }
}

//! A configured URL (a webhook, a token endpoint) as logs, errors and
//! audit events may show it: operators put tokens in a URL's userinfo,
//! query or fragment, and none of those may leave the daemon's config.

/// `url` without userinfo, query or fragment. Works on text, so a URL
/// that does not parse is cut too.
pub fn shown_url(url: &str) -> String {
    let url = url.split(['?', '#']).next().unwrap_or_default();
    let (scheme, rest) = match url.split_once("://") {
        Some((scheme, rest)) => (format!("{scheme}://"), rest),
        None => (String::new(), url),
    };
    let (authority, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
    let host = authority
        .rsplit_once('@')
        .map_or(authority, |(_, host)| host);
    format!("{scheme}{host}{path}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shown_urls_lose_userinfo_query_and_fragment() {
        let cases = [
            ("https://cp.example.com/hook", "https://cp.example.com/hook"),
            (
                "https://cp.example.com/hook?token=t#f",
                "https://cp.example.com/hook",
            ),
            (
                "https://u:p@cp.example.com:8443/h?t",
                "https://cp.example.com:8443/h",
            ),
            ("https://u:p@cp.example.com", "https://cp.example.com"),
            ("u:p@x/y?z", "x/y"),
            ("not a url?t=1", "not a url"),
        ];
        for (url, want) in cases {
            assert_eq!(shown_url(url), want, "{url}");
        }
    }
}

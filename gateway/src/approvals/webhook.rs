//! The approval webhook: the daemon POSTs each approval card (JSON) to the
//! control plane's URL through the daemon's outbound client
//! ([`crate::outbound`]: its resolver, its upstream trust). Plain HTTP is
//! accepted only toward a loopback address, so a card never crosses a
//! network in the clear.

use std::{net::IpAddr, time::Duration};

use http_body_util::Full;
use hyper::{
    Method, Request, Uri,
    body::Bytes,
    header::{CONTENT_TYPE, HeaderValue, USER_AGENT},
};
use serde::Deserialize;

use crate::{
    outbound::{self, Limits},
    shown_url::shown_url,
};

/// The longest pause between two attempts.
pub const MAX_BACKOFF: Duration = Duration::from_secs(30);

/// The most of an answer's body read before the connection is dropped.
const MAX_REPLY: usize = 4 << 10;

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WebhookConfig {
    /// `https://...`, or `http://` to a loopback address.
    pub url: String,
    /// Deliveries tried per card before giving up (the request stays
    /// parked; the admin API still lists it).
    #[serde(default = "default_attempts")]
    pub attempts: u32,
    /// The first pause between attempts; doubled each time, at most 30 s.
    #[serde(default = "default_backoff_ms")]
    pub initial_backoff_ms: u64,
    /// One attempt, connect to answer.
    #[serde(default = "default_timeout_ms")]
    pub timeout_ms: u64,
}

fn default_attempts() -> u32 {
    5
}
fn default_backoff_ms() -> u64 {
    500
}
fn default_timeout_ms() -> u64 {
    5_000
}

/// A webhook URL that cannot be used (shown without its secrets).
#[derive(Debug, thiserror::Error)]
#[error("approvals.webhook.url `{url}`: {why}")]
pub struct WebhookError {
    url: String,
    why: String,
}

/// A parsed webhook, ready to post to.
pub struct Webhook {
    uri: Uri,
    /// The URL for logs and errors: [`shown_url`].
    shown: String,
    client: outbound::Client,
    attempts: u32,
    backoff: Duration,
    timeout: Duration,
    /// Deliveries in flight at once: a client that parks and resets
    /// requests in a loop would otherwise have a post started for each.
    pub(super) in_flight: tokio::sync::Semaphore,
}

/// Deliveries in flight at once, across all cards.
const MAX_IN_FLIGHT: usize = 64;

/// Checks a webhook URL without building a client (config validation).
pub fn check_url(url: &str) -> Result<(), WebhookError> {
    parse(url).map(|_| ())
}

fn parse(url: &str) -> Result<Uri, WebhookError> {
    let error = |why: &str| WebhookError {
        url: shown_url(url),
        why: why.to_owned(),
    };
    let uri: Uri = url.parse().map_err(|_| error("not a URL"))?;
    if uri.authority().is_some_and(|a| a.as_str().contains('@')) {
        // Nothing would send it as credentials; it would only leak into
        // the `Host` header and the logs.
        return Err(error(
            "no `user:password@` in the URL: it is not sent as credentials; put a token in the path or query",
        ));
    }
    let tls = match uri.scheme_str() {
        Some("https") => true,
        Some("http") => false,
        _ => return Err(error("use https:// (or http:// to a loopback address)")),
    };
    let host = uri
        .host()
        .ok_or_else(|| error("no host"))?
        .trim_start_matches('[')
        .trim_end_matches(']');
    // The client refuses it too, but only when posting: this says so
    // when the config loads.
    if !tls && !host.parse::<IpAddr>().is_ok_and(|ip| ip.is_loopback()) {
        return Err(error(
            "plain http is only allowed to a loopback address (127.0.0.1, ::1); use https",
        ));
    }
    Ok(uri)
}

impl Webhook {
    pub fn new(config: &WebhookConfig, client: outbound::Client) -> Result<Webhook, WebhookError> {
        Ok(Webhook {
            in_flight: tokio::sync::Semaphore::new(MAX_IN_FLIGHT),
            shown: shown_url(&config.url),
            uri: parse(&config.url)?,
            client,
            attempts: config.attempts.max(1),
            // Capped like every later pause: the docs promise at most
            // 30 s, and a typo of a few zeros would otherwise leave a card
            // undelivered for hours after one failure.
            backoff: Duration::from_millis(config.initial_backoff_ms).min(MAX_BACKOFF),
            timeout: Duration::from_millis(config.timeout_ms),
        })
    }

    pub fn attempts(&self) -> u32 {
        self.attempts
    }

    pub fn initial_backoff(&self) -> Duration {
        self.backoff
    }

    /// One delivery: `Ok` on a 2xx answer.
    pub async fn post(&self, body: &[u8]) -> Result<(), String> {
        let mut request = Request::new(Full::new(Bytes::copy_from_slice(body)));
        *request.method_mut() = Method::POST;
        *request.uri_mut() = self.uri.clone();
        let headers = request.headers_mut();
        headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
        headers.insert(USER_AGENT, HeaderValue::from_static("sluice-approvals"));
        // The answer's body is not needed: a little of it is read so a
        // short one ends the connection cleanly, never more than MAX_REPLY.
        let limits = Limits {
            deadline: self.timeout,
            max_answer: MAX_REPLY,
        };
        match self.client.send(request, limits).await {
            Ok(answer) if answer.status.is_success() => Ok(()),
            Ok(answer) => Err(format!(
                "{} answered {}",
                self.shown,
                answer.status.as_u16()
            )),
            Err(err) => Err(format!("{}: {err}", self.shown)),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};

    use super::*;

    fn webhook(url: &str, initial_backoff_ms: u64) -> Result<Webhook, WebhookError> {
        let config = WebhookConfig {
            url: url.to_owned(),
            attempts: 1,
            initial_backoff_ms,
            timeout_ms: 2_000,
        };
        let resolver = crate::resolve::Resolver::static_only(&Default::default());
        let client = outbound::Client::new(Arc::new(resolver), crate::tls::trusting_nothing());
        Webhook::new(&config, client)
    }

    /// A loopback server answering one request with `head`, then `body`
    /// bytes, then holding the connection open without finishing.
    async fn server(head: &'static str, body: usize) -> u16 {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let port = listener.local_addr().expect("addr").port();
        tokio::spawn(async move {
            let (mut tcp, _) = listener.accept().await.expect("accept");
            let mut buf = vec![0; 64 << 10];
            let _ = tcp.read(&mut buf).await;
            tcp.write_all(head.as_bytes()).await.expect("head");
            let chunk = format!("{:x}\r\n{}\r\n", 4096, "x".repeat(4096));
            for _ in 0..body / 4096 {
                if tcp.write_all(chunk.as_bytes()).await.is_err() {
                    return;
                }
            }
            let _ = tcp.read(&mut buf).await;
        });
        port
    }

    #[tokio::test]
    async fn a_card_no_longer_parked_is_never_sent() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        listener.set_nonblocking(true).expect("nonblocking");
        let port = listener.local_addr().expect("addr").port();
        let hook = webhook(&format!("http://127.0.0.1:{port}/hook"), 500).expect("webhook");
        let card = crate::approvals::ApprovalCard {
            id: "gone".to_owned(),
            sandbox: "sb1".to_owned(),
            session: None,
            app: "tracker".to_owned(),
            action: None,
            method: "GET".to_owned(),
            host: "api.test".to_owned(),
            path: "/".to_owned(),
            headers: Vec::new(),
            parked_at_ms: 0,
            expires_at_ms: 0,
            process: None,
            ..crate::approvals::ApprovalCard::default()
        };
        // The client went away before the delivery started: unparked.
        let approvals = Arc::new(crate::approvals::Approvals::disabled(Arc::new(
            crate::metrics::Metrics::new(),
        )));
        super::super::notify(Arc::downgrade(&approvals), Arc::new(hook), card).await;
        let accepted = listener.accept().map(|_| ());
        assert_eq!(
            accepted.map_err(|e| e.kind()),
            Err(std::io::ErrorKind::WouldBlock),
            "nothing was posted"
        );
    }

    #[tokio::test]
    async fn a_long_answer_is_not_read_whole() {
        // 8 MiB and no end: reading it all would end only at the timeout.
        let port = server(
            "HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n",
            8 << 20,
        )
        .await;
        let hook = webhook(&format!("http://127.0.0.1:{port}/hook"), 500).expect("webhook");
        assert_eq!(hook.post(b"{}").await, Ok(()));
    }

    #[tokio::test]
    async fn errors_and_config_errors_hide_the_query() {
        let port = server("HTTP/1.1 500 Oops\r\ncontent-length: 0\r\n\r\n", 0).await;
        let hook =
            webhook(&format!("http://127.0.0.1:{port}/hook?token=s3cret"), 500).expect("webhook");
        let err = hook.post(b"{}").await.expect_err("500");
        assert!(err.contains("answered 500"), "{err}");
        assert!(err.contains(&format!("127.0.0.1:{port}/hook")), "{err}");
        assert!(!err.contains("s3cret"), "{err}");
        for url in [
            "http://10.0.0.1/hook?token=s3cret",
            "http://user:s3cret@10.0.0.1/hook",
        ] {
            let err = check_url(url).expect_err("not loopback").to_string();
            assert!(!err.contains("s3cret"), "{err}");
        }
    }

    #[test]
    fn the_first_pause_is_capped_too() {
        // (initial_backoff_ms, first pause)
        let cases = [
            (500, Duration::from_millis(500)),
            (30_000, MAX_BACKOFF),
            (600_000, MAX_BACKOFF),
        ];
        for (ms, want) in cases {
            let hook = webhook("http://127.0.0.1:9/hook", ms).expect("webhook");
            assert_eq!(hook.initial_backoff(), want, "{ms}");
        }
    }

    #[test]
    fn urls_must_be_https_or_loopback_http() {
        let cases = [
            ("https://cp.example.com/hooks/sluice", true),
            ("https://cp.example.com:8443/x", true),
            ("http://127.0.0.1:9000/hook", true),
            ("https://cp.example.com/hooks/sluice?token=t", true),
            // Userinfo would be sent nowhere but the `Host` header.
            ("https://user:pass@cp.example.com/hook", false),
            ("http://user@127.0.0.1:9000/hook", false),
            ("http://[::1]:9000/hook", true),
            ("http://cp.example.com/hook", false),
            ("http://10.0.0.1/hook", false),
            ("ftp://127.0.0.1/", false),
            ("not a url", false),
        ];
        for (url, ok) in cases {
            assert_eq!(check_url(url).is_ok(), ok, "{url}");
        }
    }
}
